"""Record what Apache Flink 2.3 computes for every built-in function call (runs in the PyFlink
venv, not in make test).

    /work/flinkvenv/bin/python tests/processor/planner/record_functions.py [--new]

Each expression of ``EXPRESSIONS`` is planned alone as ``SELECT <expr> FROM (VALUES (...)) AS
t(cols)`` over the one row of ``COLUMNS`` (session time zone UTC). The result type is read
from the resolved schema; the calls Flink accepts then run as one statement set, each into
its own ``print`` table with a ``print-identifier``, so the printed value is the print
connector's own text. The JVM's standard output goes to a capture file. ``functions_flink.yaml``
stores, per expression, ``type`` and ``printed`` (``+I[...]``), or ``error`` (the first line of
Flink's message).
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "functions_flink.yaml"
UTC = dt.UTC

# (name, Flink type, Flink SQL value, the Python value deltaflow holds)
COLUMNS = [
    ("s", "STRING", "'Hello World'", "Hello World"),
    ("p", "STRING", "'xxhixx'", "xxhixx"),
    ("sp", "STRING", "'  hi  '", "  hi  "),
    ("e", "STRING", "'a,b,c'", "a,b,c"),
    ("j", "STRING", """'{"a": {"b": 42}, "c": "x"}'""", '{"a": {"b": 42}, "c": "x"}'),
    ("n", "INT", "7", 7),
    ("k", "INT", "-3", -3),
    ("b", "BIGINT", "1710510330", 1710510330),
    ("d", "DOUBLE", "2.5", 2.5),
    ("m", "DECIMAL(10, 2)", "12.34", Decimal("12.34")),
    ("ts", "TIMESTAMP(3)", "'2024-03-15 13:45:30.123'", dt.datetime(2024, 3, 15, 13, 45, 30, 123000)),
    ("dt", "DATE", "'2024-03-15'", dt.date(2024, 3, 15)),
    ("tm", "TIME(0)", "'13:45:30'", dt.time(13, 45, 30)),
    ("bo", "BOOLEAN", "TRUE", True),
    ("ltz", "TIMESTAMP_LTZ(3)", "TO_TIMESTAMP_LTZ(1710510330123, 3)",
     dt.datetime(2024, 3, 15, 13, 45, 30, 123000, tzinfo=UTC)),
    ("z", "STRING", "NULL", None),
    ("zi", "INT", "NULL", None),
]  # fmt: skip

# Calls whose value changes per run: only the type and that the value is not NULL are compared.
NON_DETERMINISTIC = {
    "RAND()", "RAND(42)", "RAND_INTEGER(10)", "RAND_INTEGER(42, 10)", "UUID()", "NOW()",
    "CURRENT_TIMESTAMP", "LOCALTIMESTAMP", "CURRENT_DATE", "CURRENT_TIME", "LOCALTIME",
    "CURRENT_ROW_TIMESTAMP()", "UNIX_TIMESTAMP()",
}  # fmt: skip

ARITHMETIC = [
    "n + 1", "n - k", "n * d", "n / 2", "b / n", "n % 3", "MOD(n, 3)", "MOD(b, 7)", "m * 2",
    "m + n", "m / 4", "m - d", "-n", "-m", "-d", "- (n + 1)", "n + b", "k * k",
]  # fmt: skip
COMPARISON = [
    "n < 8", "n <= 7", "n > k", "n >= 8", "n = 7", "n <> 7", "d > n", "m < 20",
    "s = 'Hello World'", "s < 'Help'", "ts > TIMESTAMP '2024-01-01 00:00:00'",
    "ts > '2024-01-01 00:00:00'", "dt = DATE '2024-03-15'", "tm < TIME '14:00:00'",
    "zi = 1", "zi <> n",
]  # fmt: skip
LOGICAL = [
    "bo AND n > 3", "bo OR zi > 1", "NOT bo", "zi > 1 AND FALSE", "zi > 1 OR TRUE",
    "z IS NULL", "z IS NOT NULL", "s IS NULL", "bo IS TRUE", "bo IS NOT TRUE", "bo IS FALSE",
    "bo IS NOT FALSE", "(zi > 1) IS TRUE", "(zi > 1) IS NOT TRUE", "(zi > 1) IS FALSE",
    "(zi > 1) IS NOT FALSE", "zi IS DISTINCT FROM n", "zi IS NOT DISTINCT FROM n",
    "z IS NOT DISTINCT FROM z", "n IS DISTINCT FROM 7", "n IS NOT DISTINCT FROM 7",
]  # fmt: skip
PREDICATES = [
    "s LIKE 'Hello%'", "s NOT LIKE '%x%'", "s LIKE 'Hello_World'", "e LIKE 'a!,%' ESCAPE '!'",
    "'a_b' LIKE 'a!_b' ESCAPE '!'", "'axb' LIKE 'a!_b' ESCAPE '!'", "z LIKE 'a%'",
    "n IN (1, 7, 9)", "n NOT IN (1, 2)", "s IN ('a', 'Hello World')", "zi IN (1, 2)",
    "n IN (1, zi)", "n BETWEEN 1 AND 10", "n NOT BETWEEN 1 AND 5", "d BETWEEN k AND n",
    "dt BETWEEN DATE '2024-01-01' AND DATE '2024-12-31'",
]  # fmt: skip
CONDITIONAL = [
    "CASE WHEN n > 5 THEN 'big' ELSE 'small' END", "CASE n WHEN 7 THEN 'seven' WHEN 8 THEN 'eight' END",
    "CASE WHEN zi > 0 THEN 1 END", "CASE WHEN bo THEN m ELSE n END",
    "CASE WHEN n > 100 THEN 'x' WHEN n > 5 THEN 'yy' ELSE 'zzz' END",
    "COALESCE(zi, n)", "COALESCE(z, 'dflt')", "COALESCE(z, s, 'x')", "IFNULL(zi, 0)",
    "IFNULL(z, s)", "NULLIF(n, 7)", "NULLIF(n, 8)", "IF(n > 5, 'y', 'n')", "IF(zi > 5, 1, 2)",
    "GREATEST(n, k, 3)", "LEAST(n, k, 3)", "GREATEST(d, n)", "LEAST(m, n)", "GREATEST(n, zi)",
    "GREATEST(s, 'Zed')", "LEAST(ts, TIMESTAMP '2024-01-01 00:00:00')",
]  # fmt: skip
MATH = [
    "ABS(k)", "ABS(m)", "ABS(-d)", "SIGN(k)", "SIGN(d)", "SIGN(m)", "ROUND(m, 1)", "ROUND(d)",
    "ROUND(d, 0)", "ROUND(n, -1)", "ROUND(1.5)", "ROUND(-2.5)", "TRUNCATE(m, 1)", "TRUNCATE(d)",
    "TRUNCATE(n, -1)", "FLOOR(d)", "FLOOR(-d)", "FLOOR(m)", "CEIL(d)", "CEILING(m)", "CEIL(n)",
    "POWER(n, 2)", "POWER(d, 0.5)", "SQRT(d)", "LN(d)", "LOG(d)", "LOG(2, 8)", "LOG10(1000)",
    "LOG2(8)", "EXP(1)", "SIN(d)", "COS(d)", "TAN(d)", "DEGREES(PI())", "RADIANS(180)",
    "PI()", "E()", "RAND()", "RAND(42)", "RAND_INTEGER(10)", "RAND_INTEGER(42, 10)",
]  # fmt: skip
STRINGS = [
    "UPPER(s)", "LOWER(s)", "INITCAP('hello wORLD foo')", "INITCAP(s)", "REVERSE(s)",
    "CHAR_LENGTH(s)", "CHARACTER_LENGTH(sp)", "POSITION('o' IN s)", "POSITION('q' IN s)",
    "LOCATE('o', s)", "LOCATE('o', s, 6)", "INSTR(s, 'o')", "REPLACE(s, 'o', '0')",
    "CONCAT(s, '!', e)", "CONCAT(s, z)", "s || '!'", "CONCAT_WS('-', s, e)", "CONCAT_WS('-', s, z, e)",
    "TRIM(sp)", "LTRIM(sp)", "RTRIM(sp)", "TRIM(BOTH FROM sp)", "TRIM(LEADING 'x' FROM p)",
    "TRIM(TRAILING 'x' FROM p)", "TRIM(BOTH 'x' FROM p)", "TRIM('x' FROM p)", "LTRIM(p, 'x')",
    "RTRIM(p, 'x')", "SUBSTRING(s, 3)", "SUBSTRING(s, 3, 4)", "SUBSTRING(s FROM 3 FOR 4)",
    "SUBSTRING(s FROM 7)", "SUBSTR(s, 7)", "SUBSTR(s, 2, 3)", "LPAD(s, 15, '*')",
    "RPAD(s, 13, '-')", "LPAD(s, 5, '*')", "REPEAT('ab', 3)", "MD5(s)", "SHA1(s)", "SHA256(s)",
    "TO_BASE64(s)", "FROM_BASE64('SGVsbG8=')", "ASCII(s)", "CHR(65)", "LEFT(s, 5)",
    "RIGHT(s, 5)", "UUID()", "SPLIT_INDEX(e, ',', 1)", "SPLIT_INDEX(e, ',', 5)",
    "REGEXP_REPLACE(s, 'o', '0')", "REGEXP_REPLACE(s, '[aeiou]', '')",
    "REGEXP_EXTRACT(s, '(\\w+) (\\w+)', 2)", "REGEXP_EXTRACT(s, 'W(or)', 1)", "REGEXP(s, 'W.r')",
    "REGEXP(s, '^x')", "JSON_VALUE(j, '$.a.b')", "JSON_VALUE(j, '$.c')", "JSON_VALUE(j, '$.nope')",
]  # fmt: skip
TEMPORAL = [
    "YEAR(ts)", "QUARTER(dt)", "MONTH(ts)", "WEEK(dt)", "DAYOFYEAR(dt)", "DAYOFMONTH(ts)",
    "DAYOFWEEK(dt)", "HOUR(ts)", "MINUTE(ts)", "SECOND(ts)", "HOUR(tm)", "YEAR(dt)",
    "EXTRACT(DAY FROM ts)", "EXTRACT(YEAR FROM dt)", "EXTRACT(HOUR FROM ts)",
    "EXTRACT(MONTH FROM ts)", "EXTRACT(MINUTE FROM tm)", "EXTRACT(DOW FROM dt)",
    "EXTRACT(DOY FROM dt)", "EXTRACT(QUARTER FROM dt)", "EXTRACT(WEEK FROM dt)",
    "DATE_FORMAT(ts, 'yyyy/MM/dd HH:mm')", "DATE_FORMAT('2024-03-15 13:45:30', 'yyyyMMdd')",
    "TO_TIMESTAMP('2024-03-15 13:45:30')", "TO_TIMESTAMP('15/03/2024', 'dd/MM/yyyy')",
    "TO_TIMESTAMP('garbage')", "TO_TIMESTAMP_LTZ(b, 0)", "TO_TIMESTAMP_LTZ(1710510330123, 3)",
    "TO_TIMESTAMP_LTZ(b * 1000)", "TO_TIMESTAMP_LTZ('2024-03-15 13:45:30')",
    "TO_TIMESTAMP_LTZ('15/03/2024 10:00', 'dd/MM/yyyy HH:mm')", "TO_DATE('2024-03-15')",
    "TO_DATE('15/03/2024', 'dd/MM/yyyy')", "UNIX_TIMESTAMP('2024-03-15 13:45:30')",
    "UNIX_TIMESTAMP('2024/03/15', 'yyyy/MM/dd')", "UNIX_TIMESTAMP()", "FROM_UNIXTIME(b)",
    "FROM_UNIXTIME(b, 'yyyy-MM-dd')", "CONVERT_TZ('2024-03-15 13:45:30', 'UTC', 'Asia/Tokyo')",
    "TIMESTAMPADD(HOUR, 2, ts)", "TIMESTAMPADD(DAY, 1, dt)", "TIMESTAMPADD(MONTH, 1, ts)",
    "TIMESTAMPADD(MINUTE, -30, ltz)", "TIMESTAMPDIFF(DAY, dt, DATE '2024-04-01')",
    "TIMESTAMPDIFF(HOUR, ts, TIMESTAMP '2024-03-16 00:00:00')",
    "TIMESTAMPDIFF(MONTH, ts, TIMESTAMP '2025-01-01 00:00:00')", "ts + INTERVAL '1' HOUR",
    "ts - INTERVAL '2' DAY", "ts + INTERVAL '1' MONTH", "dt + INTERVAL '1' DAY",
    "dt - INTERVAL '1' YEAR", "ltz + INTERVAL '30' MINUTE", "tm + INTERVAL '1' HOUR",
    "FLOOR(ts TO HOUR)", "CEIL(ts TO DAY)", "FLOOR(dt TO MONTH)", "NOW()", "CURRENT_TIMESTAMP",
    "LOCALTIMESTAMP", "CURRENT_DATE", "CURRENT_TIME", "LOCALTIME", "CURRENT_ROW_TIMESTAMP()",
]  # fmt: skip
CASTS = [
    "CAST(n AS BIGINT)", "CAST(n AS TINYINT)", "CAST(n AS SMALLINT)", "CAST(n AS DOUBLE)",
    "CAST(n AS FLOAT)", "CAST(d AS INT)", "CAST(m AS INT)", "CAST(d AS DECIMAL(5, 1))",
    "CAST(n AS DECIMAL(10, 2))", "CAST(n AS STRING)", "CAST(d AS STRING)", "CAST(m AS STRING)",
    "CAST(ts AS STRING)", "CAST(dt AS STRING)", "CAST(tm AS STRING)", "CAST(bo AS STRING)",
    "CAST(ltz AS STRING)", "CAST('42' AS INT)", "CAST('3.5' AS DOUBLE)", "CAST('1.25' AS DECIMAL(4, 2))",
    "CAST('2024-03-15' AS DATE)", "CAST('13:45:30' AS TIME)", "CAST('2024-03-15 13:45:30' AS TIMESTAMP(3))",
    "CAST(ts AS DATE)", "CAST(ts AS TIME)", "CAST(dt AS TIMESTAMP)", "CAST(ts AS TIMESTAMP_LTZ(3))",
    "CAST(ltz AS TIMESTAMP(3))", "CAST(n AS BOOLEAN)", "CAST('true' AS BOOLEAN)", "CAST(s AS BYTES)",
    "CAST(s AS VARCHAR(5))", "CAST(s AS CHAR(3))", "CAST(b AS TIMESTAMP_LTZ(0))", "CAST(bo AS INT)",
    "TRY_CAST('abc' AS INT)", "TRY_CAST('12' AS INT)", "TRY_CAST(s AS DATE)", "CAST(z AS INT)",
]  # fmt: skip
# Result types that follow a CHAR argument, and NULL in, NULL out.
CHARS_AND_NULLS = [
    "UPPER('abc')", "LOWER('ABC')", "REVERSE('abc')", "INITCAP('ab cd')", "SUBSTRING('hello', 2)",
    "CONCAT('a', 'bc')", "'a' || 'bc'", "REPLACE('abc', 'b', 'xy')", "TRIM(' a ')", "LPAD('a', 3, 'x')",
    "REPEAT('ab', 2)", "LEFT('hello', 2)", "UPPER(z)", "CHAR_LENGTH(z)", "SUBSTRING(z, 1)", "ABS(zi)",
    "zi + 1", "zi * d", "-zi", "ROUND(CAST(NULL AS DOUBLE), 1)", "DATE_FORMAT(CAST(NULL AS TIMESTAMP(3)), 'yyyy')",
    "EXTRACT(DAY FROM CAST(NULL AS DATE))", "TIMESTAMPADD(DAY, zi, ts)", "CONCAT_WS(z, s, e)", "LOCATE(z, s)",
    "JSON_VALUE(z, '$.a')", "MD5(z)", "IF(bo, z, 'x')", "NULLIF(z, 'x')", "z = 'x'", "z LIKE s",
]  # fmt: skip
MORE_CASTS = [
    "CAST(-d AS INT)", "CAST(ts AS TIMESTAMP(0))", "CAST(s AS BINARY(3))", "CAST(s AS VARBINARY(20))",
    "CAST(m AS DOUBLE)", "CAST(d AS BIGINT)", "CAST(n AS CHAR(3))", "TRY_CAST('2024-13-01' AS DATE)",
    "TRY_CAST('x' AS BOOLEAN)", "CAST(dt AS TIMESTAMP_LTZ(3))", "CAST(1.5e0 AS DECIMAL(3, 1))",
    "TIMESTAMPDIFF(SECOND, ts, TIMESTAMP '2024-03-15 13:46:00')", "EXTRACT(SECOND FROM ts)",
]  # fmt: skip
# Edges: overflow, out-of-range arguments, mixed types, calendar corners, runtime failures.
EDGES = [
    "n * 2147483647", "b * b", "ABS(CAST(-2147483648 AS INT))", "n / 0", "m / 0",
    "MOD(k, 5)", "k % 5", "SIGN(0)", "ROUND(2.5)", "ROUND(d, 0) + 0", "ROUND(CAST(2.5 AS DOUBLE))",
    "ROUND(-d)", "ROUND(m, -1)", "TRUNCATE(-d)", "CAST(2.5 AS INT)", "CAST(1e7 AS STRING)",
    "CAST(0.1e0 + 0.2e0 AS STRING)", "CAST(12345678.9e0 AS STRING)", "CAST(0.0001e0 AS STRING)",
    "SUBSTRING(s, 0)", "SUBSTRING(s, -3)", "SUBSTRING(s, 3, 0)", "SUBSTRING(s, 20)", "LEFT(s, -1)",
    "RIGHT(s, 20)", "REPEAT(s, -1)", "LPAD(s, 0, 'x')", "RPAD(s, 3, 'x')", "LPAD(s, 14, '')",
    "SPLIT_INDEX(e, ',', -1)", "SPLIT_INDEX(e, '', 0)", "REGEXP_EXTRACT(s, 'q+', 0)",
    "REGEXP_EXTRACT(s, '(o)', 2)", "LOCATE('o', s, 0)", "LOCATE('', s)", "POSITION('' IN s)",
    "CHR(256)", "CHR(-1)", "ASCII('')", "INITCAP('o''neil mcDONALD')",
    "DATE_FORMAT(ts, 'EEE MMM d yyyy')", "DATE_FORMAT(ts, 'yyyy-MM-dd''T''HH:mm:ss.SSS')",
    "TO_TIMESTAMP('2024-03-15', 'yyyy-MM-dd')", "TO_TIMESTAMP('2024-03-15 13:45:30.5')",
    "UNIX_TIMESTAMP('nonsense')", "TO_DATE('2024-02-30')", "WEEK(DATE '2024-12-30')",
    "WEEK(DATE '2021-01-01')", "DAYOFWEEK(DATE '2024-03-17')", "EXTRACT(WEEK FROM DATE '2021-01-03')",
    "EXTRACT(MILLISECOND FROM ts)", "EXTRACT(EPOCH FROM ts)", "FLOOR(ts TO WEEK)", "CEIL(ts TO MONTH)",
    "FLOOR(ts TO YEAR)", "FLOOR(ts TO SECOND)", "TIMESTAMPADD(QUARTER, 1, dt)", "TIMESTAMPADD(WEEK, 2, ts)",
    "TIMESTAMPADD(MONTH, 1, DATE '2024-01-31')", "TIMESTAMPDIFF(MONTH, DATE '2024-01-31', DATE '2024-02-29')",
    "TIMESTAMPDIFF(YEAR, ts, TIMESTAMP '2020-01-01 00:00:00')", "ts - INTERVAL '1' SECOND",
    "ts + INTERVAL '90' MINUTE", "DATE '2024-01-31' + INTERVAL '1' MONTH",
    "CASE WHEN bo THEN n ELSE m END", "CASE WHEN bo THEN 'a' ELSE 'bcd' END", "COALESCE(zi, b)",
    "COALESCE(zi, d)", "IF(bo, n, b)", "IF(bo, 'x', 'yz')", "NULLIF(s, 'x')", "n IN (1.5, 7)",
    "GREATEST(n, d, m)", "LEAST(s, 'Apple', 'Zed')",
    "s IS DISTINCT FROM 'Hello World'", "CONCAT(s, CAST(n AS STRING))",
    "CHAR_LENGTH('héllo')", "REVERSE('héllo')", "MD5('')", "TO_BASE64('')",
    "REGEXP_REPLACE(e, ',', '$')", "REGEXP(s, '[')", "JSON_VALUE(j, '$.a')", "JSON_VALUE('nope', '$.a')",
    "JSON_VALUE(j, 'lax $.a.b')", "CAST('  42 ' AS INT)", "CAST('1e3' AS INT)", "CAST('2024-3-5' AS DATE)",
    "CAST('abc' AS INT)", "TRY_CAST('128' AS TINYINT)", "CAST(300 AS TINYINT)", "CAST(m AS DECIMAL(3, 1))",
    "CAST(1234.5 AS DECIMAL(3, 1))", "CAST(d AS FLOAT)", "CAST(CAST(0.1 AS FLOAT) AS DOUBLE)",
    "CAST(tm AS TIMESTAMP(0))", "CAST(ltz AS DATE)", "CAST(ltz AS TIME)", "CAST('1' AS BOOLEAN)",
    "CAST(0 AS BOOLEAN)", "CAST(ts AS BIGINT)", "CAST(dt AS INT)",
    "EXTRACT(MICROSECOND FROM ts)", "EXTRACT(MILLISECOND FROM TIMESTAMP '2024-01-01 00:00:07.25')",
    "LOCATE('o', s, -2)", "SPLIT_INDEX('a b  c', '', 2)", "JSON_VALUE(j, 'strict $.c')",
    "TIMESTAMPDIFF(MONTH, TIMESTAMP '2024-01-31 10:00:00', TIMESTAMP '2024-02-29 09:00:00')",
    "TIMESTAMPDIFF(MONTH, DATE '2024-03-31', DATE '2024-02-29')",
    "ts + INTERVAL '1 02:30:15.5' DAY TO SECOND", "ts - INTERVAL '1-2' YEAR TO MONTH",
    "ts + INTERVAL '1:30' HOUR TO MINUTE", "ts + INTERVAL '-1 02' DAY TO HOUR",
    "ts + INTERVAL '100' DAY(3)", "ts + INTERVAL '30:15' MINUTE TO SECOND", "ts + INTERVAL '1.5' SECOND",
    "dt + INTERVAL '1-1' YEAR TO MONTH", "CAST(INTERVAL '1 02:00:00' DAY TO SECOND AS STRING)",
    "CAST(INTERVAL '1-2' YEAR TO MONTH AS STRING)", "ts + INTERVAL '3' DAY * 2",
]  # fmt: skip
# Nested types: constructors, [] (1-based), CARDINALITY, ELEMENT, fields. Left out: an index
# past the end, a NULL index and a missing map key over constants, which Flink 2.3 folds to -1
# for INT elements (not NULL); deltaflow gives NULL (docs/FLINK_COMPATIBILITY.md).
NESTED = [
    "ARRAY[n, k, 3]", "ARRAY[n, k, 3][2]", "ARRAY[n, k][0]", "ARRAY[s, p][1]",
    "CARDINALITY(ARRAY[n, k, 3])", "ELEMENT(ARRAY[n])", "ELEMENT(ARRAY[n, k])",
    "ARRAY[zi, n][1]", "MAP['a', n, 'b', k]", "MAP['a', n, 'b', k]['b']", "CARDINALITY(MAP['a', n, 'b', k])", "MAP[n, s][7]", "ROW(n, s)", "(n, s, d)",
    "ROW(n, ARRAY[k])", "ARRAY[ROW(n, s)]", "ARRAY[ARRAY[n], ARRAY[k, 3]][2][1]",
    "CARDINALITY(ARRAY[z])", "ARRAY[n, k] = ARRAY[n, k]", "ROW(n, s) = ROW(n, s)",
]  # fmt: skip
EXPRESSIONS = (
    ARITHMETIC
    + COMPARISON
    + LOGICAL
    + PREDICATES
    + CONDITIONAL
    + MATH
    + STRINGS
    + TEMPORAL
    + CASTS
    + CHARS_AND_NULLS
    + MORE_CASTS
    + EDGES
    + NESTED
)


def query(expr: str) -> str:
    values = ", ".join(f"CAST({v} AS {t})" for _, t, v, _ in COLUMNS)
    names = ", ".join(c[0] for c in COLUMNS)
    return f"SELECT {expr} FROM (VALUES ({values})) AS t({names})"


def _first_line(err: Exception) -> str:
    text = str(err)
    for marker in ("ValidationException: ", "TableException: ", "SqlValidatorException: ",
                   "SqlParseException: ", "CodeGenException: "):  # fmt: skip
        if marker in text:
            text = text.split(marker, 1)[1]
            break
    return text.strip().splitlines()[0][:300]


def _capture() -> Path:
    path = Path(tempfile.mkstemp(prefix="flink-functions-")[1])
    out = os.open(path, os.O_WRONLY)
    sys.stdout.flush()
    os.dup2(out, 1)
    sys.stdout = os.fdopen(os.dup(2), "w")  # this script's own prints go to stderr
    return path


CHUNK = 25  # inserts per job; a job that fails is rerun one insert at a time
TIMEOUT_MS = 60_000


def _run(env, inserts: dict[str, str], results: dict[str, dict[str, str]]) -> None:  # noqa: ANN001
    """The inserts as jobs of ``CHUNK``; a failing job's inserts again one by one."""
    items = list(inserts.items())
    for start in range(0, len(items), CHUNK):
        chunk = items[start : start + CHUNK]
        try:
            _execute(env, [sql for _, sql in chunk])
            continue
        except Exception:  # noqa: BLE001, S112 - find the failing calls one by one
            pass
        for expr, sql in chunk:
            try:
                _execute(env, [sql])
            except Exception as err:  # noqa: BLE001
                results[expr] = {"error": _first_line(err)}


def _execute(env, inserts: list[str]) -> None:  # noqa: ANN001
    statements = env.create_statement_set()
    for sql in inserts:
        statements.add_insert_sql(sql)
    result = statements.execute()
    try:
        result.wait(TIMEOUT_MS)
    except Exception:
        client = result.get_job_client()
        if client is not None:
            try:  # a job that hangs is cancelled; one that failed is already over
                client.cancel()
            except Exception:  # noqa: BLE001, S110
                pass
        raise


def main() -> None:
    import yaml
    from pyflink.table import EnvironmentSettings, TableEnvironment

    capture = _capture()
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    env.get_config().set("table.local-time-zone", "UTC")
    results: dict[str, dict[str, str]] = {}
    inserts: dict[str, str] = {}
    known = yaml.safe_load(FIXTURE.read_text()) if "--new" in sys.argv else {}
    for i, expr in enumerate(EXPRESSIONS):
        if expr in known:  # --new: record only the expressions the fixture lacks
            results[expr] = known[expr]
            continue
        try:
            table = env.sql_query(query(expr))
            dtype = str(table._j_table.getResolvedSchema().getColumnDataTypes().get(0).toString())
        except Exception as err:  # noqa: BLE001 - Flink's error text is what we record
            results[expr] = {"error": _first_line(err)}
            continue
        env.execute_sql(
            # a nullable column: a call returning NULL despite a NOT NULL type still prints
            f"CREATE TABLE p{i} (v {dtype.removesuffix(' NOT NULL')}) WITH ('connector' = 'print', "
            f"'print-identifier' = 'e{i}')"
        )
        try:  # some calls fail only when the optimizer folds constants
            env.explain_sql(f"INSERT INTO p{i} {query(expr)}")
        except Exception as err:  # noqa: BLE001
            results[expr] = {"error": _first_line(err)}
            continue
        results[expr] = {"type": dtype}
        inserts[expr] = f"INSERT INTO p{i} {query(expr)}"
    _run(env, inserts, results)
    for line in capture.read_text().splitlines():
        tag, _, printed = line.partition("> ")
        if tag.startswith("e") and tag[1:].isdigit():
            results[EXPRESSIONS[int(tag[1:])]]["printed"] = printed
    FIXTURE.write_text(yaml.safe_dump(results, sort_keys=False, allow_unicode=True, width=200))
    print(len(results), "expressions,", sum("error" in r for r in results.values()), "errors")


if __name__ == "__main__":
    main()
