"""Every built-in function bound from SQL by ``plan_job``, compiled, and evaluated on one row,
against the value and type Apache Flink 2.3 gives for the same call (``functions_flink.yaml``,
recorded by ``record_functions.py``)."""

from __future__ import annotations

import math
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from record_functions import COLUMNS, EXPRESSIONS, NON_DETERMINISTIC

from deltaflow.formats.changelog import RowKind
from deltaflow.formats.errors import DeltaflowError, SqlError
from deltaflow.formats.printing import row_printer
from deltaflow.formats.types import DataType, parse_type
from deltaflow.processor import plan as P
from deltaflow.processor.exprs.compile import compile_calc
from deltaflow.processor.exprs.functions import function_names
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, Literal
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.planner.catalog import Catalog
from deltaflow.processor.planner.query import QueryBinder
from deltaflow.processor.sql.script import parse_script

FLINK = yaml.safe_load((Path(__file__).parent / "functions_flink.yaml").read_text())
SOURCE = (
    "CREATE TABLE t ("
    + ", ".join(f"{name} {dtype}" for name, dtype, _, _ in COLUMNS)
    + ") WITH ('connector' = 'datagen');\n"
)
ROW = tuple(c[3] for c in COLUMNS)


def bound(expr: str, source: str = SOURCE) -> Expr:
    """``expr`` bound over table ``t`` (the first projected expression of its Calc)."""
    create, select = parse_script(source + f"SELECT {expr} FROM t;")
    catalog = Catalog()
    catalog.add_table(create)  # type: ignore[arg-type]
    rel = QueryBinder(catalog, {}).query(select.query)  # type: ignore[attr-defined]
    return rel.node.projection[0]  # type: ignore[attr-defined, no-any-return]


def expr_type(expr: str) -> DataType:
    return bound(expr).type


def calcs(node: P.Node) -> list[P.Calc]:
    """The Calc nodes from the scan up to the sink, in execution order."""
    out: list[P.Calc] = []
    for child in node.inputs:
        out += calcs(child)
    return out + [node] if isinstance(node, P.Calc) else out


def evaluate(expr: str) -> tuple[DataType, str]:
    """deltaflow's type for ``expr`` and its printed value (``+I[...]``) on ``ROW``."""
    dtype = expr_type(expr)
    sql = (SOURCE + f"CREATE TABLE o (v {dtype.with_nullable(True).sql()}) "
           "WITH ('connector' = 'print');\n" + f"INSERT INTO o SELECT {expr} FROM t;")  # fmt: skip
    (sink,) = plan_job(sql).plan.sinks
    kinds, rows = [int(RowKind.INSERT)], [ROW]
    for calc in calcs(sink):
        kinds, rows = compile_calc(list(calc.projection), calc.condition)(kinds, rows)
    (row,) = rows
    return dtype, row_printer([dtype])(kinds[0], row)


def same_type(ours: DataType, flink: str) -> bool:
    """Equal but for nullability, at every level (Flink's VALUES row is NOT NULL, our table's
    columns are nullable; the nested types built from them follow)."""
    return _nullable_all(ours) == _nullable_all(parse_type(flink))


def _nullable_all(t: DataType) -> DataType:
    return replace(
        t.with_nullable(True),
        element=t.element and _nullable_all(t.element),
        value=t.value and _nullable_all(t.value),
        fields=tuple((n, _nullable_all(f)) for n, f in t.fields),
    )


OK = [e for e in EXPRESSIONS if "error" not in FLINK[e] and e not in NON_DETERMINISTIC]
ERRORS = [e for e in EXPRESSIONS if "error" in FLINK[e]]


# Java's Math.sin/cos/tan/exp/pow may differ from C's libm in the last binary digit.
LAST_DIGIT = ("SIN(", "COS(", "TAN(", "EXP(", "POWER(")


def same_value(expr: str, ours: str, flink: str) -> bool:
    if ours == flink or not expr.startswith(LAST_DIGIT):
        return ours == flink
    a, b = float(ours[3:-1]), float(flink[3:-1])
    return abs(a - b) <= math.ulp(b)


@pytest.mark.parametrize("expr", OK)
def test_value_and_type_match_flink(expr: str) -> None:
    dtype, printed = evaluate(expr)
    flink = FLINK[expr]["printed"]
    assert same_value(expr, printed, flink), f"{expr}: deltaflow {printed}, Flink {flink}"
    assert same_type(dtype, FLINK[expr]["type"]), f"{expr}: {dtype.sql()} vs {FLINK[expr]['type']}"


@pytest.mark.parametrize("expr", sorted(NON_DETERMINISTIC))
def test_non_deterministic_calls_have_flinks_type(expr: str) -> None:
    dtype, printed = evaluate(expr)
    assert same_type(dtype, FLINK[expr]["type"]), f"{expr}: {dtype.sql()} vs {FLINK[expr]['type']}"
    assert printed.startswith("+I[") and printed != "+I[null]"


def test_uuid_is_a_version_4_uuid_text() -> None:
    text = evaluate("UUID()")[1][3:-1]
    assert uuid.UUID(text).version == 4 and len(text) == 36


@pytest.mark.parametrize("expr", ERRORS)
def test_calls_flink_rejects_are_deltaflow_errors(expr: str) -> None:
    with pytest.raises(DeltaflowError):
        evaluate(expr)


def test_every_function_name_has_a_recorded_call() -> None:
    """Each name ``infer_call`` accepts appears in at least one expression of the table."""
    text = " ".join(EXPRESSIONS).upper()
    spelled = {"CASE": "CASE WHEN", "IN": " IN (", "NOT": "NOT ", "-": "-", "ITEM": "]["}
    missing = [n for n in function_names() if spelled.get(n, n) not in text]
    assert missing == []


def test_trim_with_characters_binds_as_flinks_trim_mode_chars_string() -> None:
    call = bound("TRIM(LEADING 'x' FROM p)")
    assert isinstance(call, Call) and call.op == "TRIM"
    mode, chars, value = call.operands
    assert isinstance(mode, Literal) and mode.value == "LEADING"
    assert isinstance(chars, Literal) and chars.value == "x"
    assert value == InputRef(value.type, 1)
    assert bound("LTRIM(sp)").op == "LTRIM" and bound("RTRIM(sp)").op == "RTRIM"  # type: ignore[attr-defined]


def test_position_locate_and_instr_put_the_needle_first() -> None:
    for expr in ("POSITION('o' IN s)", "INSTR(s, 'o')", "LOCATE('o', s)"):
        call = bound(expr)
        assert isinstance(call, Call) and call.op == "POSITION", expr
        assert isinstance(call.operands[0], Literal) and call.operands[0].value == "o"
    located = bound("LOCATE('o', s, 6)")
    assert located.op == "LOCATE" and len(located.operands) == 3  # type: ignore[attr-defined]


def test_unary_minus_keeps_the_type_and_folds_literals() -> None:
    assert bound("-m").type.sql() == "DECIMAL(10, 2)"
    negated = bound("-m")
    assert isinstance(negated, Call) and negated.op == "-" and len(negated.operands) == 1
    folded = bound("-2.5")
    assert isinstance(folded, Literal) and str(folded.value) == "-2.5"


def test_boolean_tests_and_distinct_bind_their_own_operators() -> None:
    assert bound("bo IS TRUE").op == "IS TRUE"  # type: ignore[attr-defined]
    assert bound("bo IS NOT FALSE").op == "IS NOT FALSE"  # type: ignore[attr-defined]
    assert bound("zi IS DISTINCT FROM n").op == "IS DISTINCT FROM"  # type: ignore[attr-defined]
    assert bound("s NOT LIKE 'a%'").op == "NOT LIKE"  # type: ignore[attr-defined]


def test_bare_time_functions_are_calls_unless_a_column_of_that_name_is_quoted() -> None:
    assert bound("LOCALTIMESTAMP").op == "LOCALTIMESTAMP"  # type: ignore[attr-defined]
    source = "CREATE TABLE t (`LOCALTIME` INT) WITH ('connector' = 'datagen');\n"
    plus = bound("`LOCALTIME` + 1", source)
    assert isinstance(plus, Call) and isinstance(plus.operands[0], InputRef)


def test_typed_timestamp_literal_has_the_precision_it_is_written_with() -> None:
    assert bound("TIMESTAMP '2024-01-01 00:00:00'").type.sql() == "TIMESTAMP(0) NOT NULL"
    assert bound("TIMESTAMP '2024-01-01 00:00:00.25'").type.sql() == "TIMESTAMP(2) NOT NULL"
    assert bound("CAST('2024-01-01 00:00:00' AS TIMESTAMP)").type.sql() == "TIMESTAMP(6) NOT NULL"


def test_numeric_to_timestamp_ltz_cast_names_the_function_to_use() -> None:
    with pytest.raises(SqlError, match="TO_TIMESTAMP_LTZ"):
        bound("CAST(b AS TIMESTAMP_LTZ(0))")


def test_interval_spans_count_months_or_milliseconds_and_bad_ones_name_the_literal() -> None:
    assert bound("INTERVAL '1-2' YEAR TO MONTH").value == 14  # type: ignore[attr-defined]
    day_to_second = bound("INTERVAL '-1 02:30:15.5' DAY TO SECOND")
    assert day_to_second.value == -(86_400_000 + 2 * 3_600_000 + 30 * 60_000 + 15_500)  # type: ignore[attr-defined]
    assert bound("INTERVAL '100' DAY(3)").value == 100 * 86_400_000  # type: ignore[attr-defined]
    with pytest.raises(SqlError, match="cannot read the interval"):
        bound("INTERVAL '1 02' DAY TO SECOND")
    with pytest.raises(SqlError, match="unsupported interval unit"):
        bound("INTERVAL '1' MONTH TO DAY")
