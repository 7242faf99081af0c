"""Code generators for Flink's built-in functions (string, math, temporal, misc)."""

from __future__ import annotations

import random
import time
import uuid
from typing import cast

from deltaflow.formats.types import (
    DECIMAL,
    INT_BITS,
    INTEGER_ROOTS,
    STRING_ROOTS,
    TIMESTAMP,
    TIMESTAMP_LTZ,
)
from deltaflow.processor.exprs import lib_numeric as ln
from deltaflow.processor.exprs import lib_strings as ls
from deltaflow.processor.exprs import lib_temporal as lt
from deltaflow.processor.exprs.codegen import GENERATORS, Gen, generator
from deltaflow.processor.exprs.errors import EvalError
from deltaflow.processor.exprs.lib_date_format import compile_pattern
from deltaflow.processor.exprs.lib_numeric import wrap_text
from deltaflow.processor.exprs.nodes import Call, Literal
from deltaflow.processor.exprs.signatures import symbol_value

# NULL in, NULL out: a template over the operand texts ({0}, {1}, ...) or a helper called
# with all operands.
TEMPLATES = {
    "UPPER": "{0}.upper()",
    "LOWER": "{0}.lower()",
    "REVERSE": "{0}[::-1]",
    "CHAR_LENGTH": "len({0})",
    "CHARACTER_LENGTH": "len({0})",
    "POSITION": "({1}.find({0}) + 1)",
    "INSTR": "({0}.find({1}) + 1)",
    "REPLACE": "{0}.replace({1}, {2})",
    "LPAD": "_s.pad({0}, {1}, {2}, True)",
    "RPAD": "_s.pad({0}, {1}, {2}, False)",
    "PI": "3.141592653589793",
    "E": "2.718281828459045",
}
HELPERS = {
    "INITCAP": ls.initcap,
    "SUBSTRING": ls.substring,
    "SUBSTR": ls.substring,
    "LOCATE": ls.locate,
    "REGEXP_REPLACE": ls.regexp_replace,
    "REGEXP_EXTRACT": ls.regexp_extract,
    "REGEXP": ls.regexp,
    "SPLIT_INDEX": ls.split_index,
    "REPEAT": ls.repeat,
    "MD5": ls.md5,
    "SHA1": ls.sha1,
    "SHA256": ls.sha256,
    "FROM_BASE64": ls.from_base64,
    "TO_BASE64": ls.to_base64,
    "ASCII": ls.ascii_code,
    "CHR": ls.chr_code,
    "LEFT": ls.left,
    "RIGHT": ls.right,
    "JSON_VALUE": ls.json_value,
    "POWER": ln.POWER,
    "SQRT": ln.SQRT,
    "LN": ln.LN,
    "LOG": ln.LOG,
    "LOG10": ln.LOG10,
    "LOG2": ln.LOG2,
    "EXP": ln.EXP,
    "SIN": ln.SIN,
    "COS": ln.COS,
    "TAN": ln.TAN,
    "RADIANS": ln.RADIANS,
    "DEGREES": ln.DEGREES,
    "TIMESTAMPDIFF": lt.timestampdiff,
}


def _template(g: Gen, c: Call) -> str:
    text = TEMPLATES[c.op]
    return g.strict(c.operands, lambda *a: text.format(*a))


def _helper(g: Gen, c: Call) -> str:
    name = g.bind(HELPERS[c.op], "_f")
    return g.strict(c.operands, lambda *a: f"{name}({', '.join(a)})")


for _op in TEMPLATES:
    GENERATORS[_op] = _template
for _op in HELPERS:
    GENERATORS[_op] = _helper


@generator("SUBSTRING", "SUBSTR")
def _substring(g: Gen, c: Call) -> str:
    """A constant start from 1 on and a constant length of 0 or more (TPC-H's
    SUBSTRING(c_phone FROM 1 FOR 2)): a slice inline, which is what ``ls.substring``
    computes for them; any other operands through the helper."""
    value, *rest = c.operands
    if not rest or not all(isinstance(o, Literal) and type(o.value) is int for o in rest):
        return _helper(g, c)
    bounds = [cast(int, cast(Literal, o).value) for o in rest]
    if bounds[0] < 1 or min(bounds) < 0:
        return _helper(g, c)
    begin = bounds[0] - 1
    end = "" if len(bounds) == 1 else str(begin + bounds[1])
    return g.strict([value], lambda v: f"{v}[{begin}:{end}]")


@generator("CONCAT", "||")
def _concat(g: Gen, c: Call) -> str:
    return g.strict(c.operands, lambda *a: "(" + " + ".join(a) + ")")


@generator("CONCAT_WS")
def _concat_ws(g: Gen, c: Call) -> str:
    parts = ", ".join(g.expr(o) for o in c.operands[1:])
    return g.strict(c.operands[:1], lambda sep: f"_s.concat_ws({sep}, {parts})")


@generator("TRIM", "LTRIM", "RTRIM")
def _trim(g: Gen, c: Call) -> str:
    if c.op == "TRIM" and len(c.operands) == 3:
        mode = symbol_value(c.operands[0])
        lead, trail = mode in ("BOTH", "LEADING"), mode in ("BOTH", "TRAILING")
        return g.strict(
            c.operands[1:], lambda chars, s: f"_s.trim_chars({s}, {chars}, {lead}, {trail})"
        )
    method = {"TRIM": "strip", "LTRIM": "lstrip", "RTRIM": "rstrip"}[c.op]
    if len(c.operands) == 2:
        return g.strict(c.operands, lambda s, chars: f"{s}.{method}({chars})")
    return g.strict(c.operands, lambda s: f"{s}.{method}(' ')")


@generator("ABS")
def _abs(g: Gen, c: Call) -> str:
    if c.type.root in INTEGER_ROOTS:
        return g.strict(c.operands, lambda a: wrap_text(f"abs({a})", INT_BITS[c.type.root]))
    return g.strict(c.operands, lambda a: f"abs({a})")


@generator("SIGN")
def _sign(g: Gen, c: Call) -> str:
    return g.strict(c.operands, lambda a: f"_n.sign({a})")


@generator("ROUND", "TRUNCATE")
def _round(g: Gen, c: Call) -> str:
    digits = (
        int(cast(int, g.const_value(c.operands[1], f"the digits of {c.op}")))
        if len(c.operands) == 2
        else 0
    )
    arg = c.operands[0]
    kind = "round" if c.op == "ROUND" else "truncate"
    if arg.type.root in INTEGER_ROOTS:
        bits = INT_BITS[arg.type.root]
        return g.strict([arg], lambda a: f"_n.{kind}_int({a}, {digits}, {bits})")
    if arg.type.root == DECIMAL:
        scale = c.type.scale or 0
        return g.strict([arg], lambda a: f"_n.{kind}_decimal({a}, {digits}, {scale})")
    return g.strict([arg], lambda a: f"_n.{kind}_float({a}, {digits})")


@generator("FLOOR", "CEIL", "CEILING")
def _floor(g: Gen, c: Call) -> str:
    arg = c.operands[0]
    if len(c.operands) == 2:
        unit = symbol_value(c.operands[1])
        fn = "_t.floor_to" if c.op == "FLOOR" else "_t.ceil_to"
        if arg.type.root == TIMESTAMP_LTZ:
            return g.strict(
                [arg], lambda a: f"_t.from_local({fn}({unit!r}, _t.to_local({a}, _tz)), _tz)"
            )
        return g.strict([arg], lambda a: f"{fn}({unit!r}, {a})")
    if arg.type.root in INTEGER_ROOTS:
        return g.expr(arg)
    kind = "floor" if c.op == "FLOOR" else "ceil"
    if arg.type.root == DECIMAL:
        return g.strict([arg], lambda a: f"_n.{kind}_decimal({a})")
    return g.strict([arg], lambda a: f"_n.{kind}_float({a})")


def _rand_integer(rng: random.Random, bound: int) -> int:
    if bound <= 0:
        raise EvalError(f"RAND_INTEGER bound must be positive, got {bound}")
    return rng.randrange(bound)


@generator("RAND", "RAND_INTEGER")
def _rand(g: Gen, c: Call) -> str:
    ops = list(c.operands)
    seeded = c.op == "RAND" and len(ops) == 1 or c.op == "RAND_INTEGER" and len(ops) == 2
    rng = g.bind(
        random.Random(
            cast(int, g.const_value(ops.pop(0), f"the seed of {c.op}")) if seeded else None
        ),
        "_rng",
    )
    if c.op == "RAND":
        return f"{rng}.random()"
    g.ns["_rand_integer"] = _rand_integer
    return g.strict(ops, lambda bound: f"_rand_integer({rng}, {bound})")


@generator("UUID")
def _uuid(g: Gen, c: Call) -> str:
    g.ns["_uuid4"] = uuid.uuid4
    return "str(_uuid4())"


_NOW = {
    "NOW": "_t.now_ltz()",
    "CURRENT_TIMESTAMP": "_t.now_ltz()",
    "CURRENT_ROW_TIMESTAMP": "_t.now_ltz()",
    "PROCTIME": "_t.now_ltz()",  # a processing-time attribute: the wall clock when the row is read
    "LOCALTIMESTAMP": "_t.now_local(_tz)",
    "CURRENT_DATE": "_t.now_local(_tz).date()",
    "CURRENT_TIME": "_t.now_local(_tz).time().replace(microsecond=0)",
    "LOCALTIME": "_t.now_local(_tz).time().replace(microsecond=0)",
}


@generator(*_NOW)
def _now(g: Gen, c: Call) -> str:
    return _NOW[c.op]


@generator("UNIX_TIMESTAMP")
def _unix_timestamp(g: Gen, c: Call) -> str:
    if not c.operands:
        g.ns["_time"] = time.time
        return "int(_time())"
    g.ns["_unix_seconds"] = _unix_seconds
    return g.strict(c.operands, lambda *a: f"_unix_seconds(_tz, {', '.join(a)})")


_LONG_MIN = -(2**63)


def _unix_seconds(tz, text: str, pattern: str = lt.DEFAULT_FORMAT) -> int | None:  # type: ignore[no-untyped-def]
    local = lt.parse_pattern(text, pattern)
    if local is None:
        return _LONG_MIN  # Flink's value for a string its pattern does not parse
    return int(lt.from_local(local, tz).timestamp() // 1)


@generator("FROM_UNIXTIME")
def _from_unixtime(g: Gen, c: Call) -> str:
    g.ns["_from_unix"] = _from_unix
    return g.strict(c.operands, lambda *a: f"_from_unix(_tz, {', '.join(a)})")


def _from_unix(tz, seconds: int, pattern: str = lt.DEFAULT_FORMAT) -> str:  # type: ignore[no-untyped-def]
    return lt.format_pattern(lt.to_local(lt.from_epoch(seconds, 0), tz), pattern)


@generator("DATE_FORMAT")
def _date_format(g: Gen, c: Call) -> str:
    arg = c.operands[0]
    if arg.type.root in STRING_ROOTS:
        g.ns["_fmt_text"] = _format_text
        return g.strict(c.operands, lambda a, f: f"_fmt_text({a}, {f})")
    pattern = c.operands[1]
    if isinstance(pattern, Literal) and type(pattern.value) is str:
        fmt = g.bind(compile_pattern(pattern.value), "_datefmt")
        if arg.type.root == TIMESTAMP_LTZ:
            return g.strict(c.operands[:1], lambda a: f"{fmt}(_t.to_local({a}, _tz))")
        return g.strict(c.operands[:1], lambda a: f"{fmt}({a})")
    if arg.type.root == TIMESTAMP_LTZ:
        return g.strict(c.operands, lambda a, f: f"_t.format_pattern(_t.to_local({a}, _tz), {f})")
    return g.strict(c.operands, lambda a, f: f"_t.format_pattern({a}, {f})")


def _format_text(text: str, pattern: str) -> str | None:
    value = lt.parse_timestamp(text)
    return None if value is None else lt.format_pattern(value, pattern)


@generator("TO_TIMESTAMP")
def _to_timestamp(g: Gen, c: Call) -> str:
    if len(c.operands) == 1:
        g.ns["_ts3"] = _ts3
        return g.strict(c.operands, lambda a: f"_ts3(_t.parse_timestamp({a}))")
    g.ns["_ts3"] = _ts3
    return g.strict(c.operands, lambda a, f: f"_ts3(_t.parse_pattern({a}, {f}))")


def _ts3(value):  # type: ignore[no-untyped-def]
    return None if value is None else lt.truncate_micros(value, 3)


@generator("TO_TIMESTAMP_LTZ")
def _to_timestamp_ltz(g: Gen, c: Call) -> str:
    arg = c.operands[0]
    if arg.type.root not in STRING_ROOTS:
        if arg.type.root == DECIMAL:
            return g.strict(
                c.operands, lambda *a: f"_t.from_epoch(float({a[0]}), {', '.join(a[1:]) or 3})"
            )
        return g.strict(c.operands, lambda *a: f"_t.from_epoch({', '.join(a)})")
    g.ns["_parse_ltz"] = _parse_ltz
    return g.strict(c.operands, lambda *a: f"_parse_ltz(_tz, {', '.join(a)})")


def _parse_ltz(tz, text: str, pattern: str | None = None, zone: str | None = None):  # type: ignore[no-untyped-def]
    local = lt.parse_timestamp(text) if pattern is None else lt.parse_pattern(text, pattern)
    if local is None:
        return None
    return lt.truncate_micros(lt.from_local(local, lt.zone(zone) if zone else tz), 3)


@generator("TO_DATE")
def _to_date(g: Gen, c: Call) -> str:
    if len(c.operands) == 1:
        return g.strict(c.operands, lambda a: f"_t.parse_date({a})")
    g.ns["_date_of"] = _date_of
    return g.strict(c.operands, lambda a, f: f"_date_of(_t.parse_pattern({a}, {f}))")


def _date_of(value):  # type: ignore[no-untyped-def]
    return None if value is None else value.date()


@generator("CONVERT_TZ")
def _convert_tz(g: Gen, c: Call) -> str:
    g.ns["_convert_tz"] = _convert
    return g.strict(c.operands, lambda a, f, t: f"_convert_tz({a}, {f}, {t})")


def _convert(text: str, src: str, dst: str) -> str | None:
    local = lt.parse_timestamp(text)
    if local is None:
        return None
    moved = lt.to_local(lt.from_local(local, lt.zone(src)), lt.zone(dst))
    return lt.format_pattern(moved, lt.DEFAULT_FORMAT)


_EXTRACT_FUNCTIONS = {
    "YEAR": "YEAR",
    "QUARTER": "QUARTER",
    "MONTH": "MONTH",
    "WEEK": "WEEK",
    "DAYOFYEAR": "DOY",
    "DAYOFMONTH": "DAY",
    "DAYOFWEEK": "DOW",
    "HOUR": "HOUR",
    "MINUTE": "MINUTE",
    "SECOND": "SECOND",
}


@generator("EXTRACT", *_EXTRACT_FUNCTIONS)
def _extract(g: Gen, c: Call) -> str:
    if c.op == "EXTRACT":
        unit, arg = symbol_value(c.operands[0]), c.operands[1]
    else:
        unit, arg = _EXTRACT_FUNCTIONS[c.op], c.operands[0]
    field = (
        _DATETIME_FIELDS.get(unit or "") if arg.type.root in (TIMESTAMP, TIMESTAMP_LTZ) else None
    )
    if field is not None:  # a datetime's own field, read in place (what _t.extract gives)
        if arg.type.root == TIMESTAMP_LTZ:
            return g.strict([arg], lambda a: field.format(f"_t.to_local({a}, _tz)"))
        return g.strict([arg], lambda a: field.format(a))
    if arg.type.root == TIMESTAMP_LTZ:
        return g.strict([arg], lambda a: f"_t.extract({unit!r}, _t.to_local({a}, _tz))")
    return g.strict([arg], lambda a: f"_t.extract({unit!r}, {a})")


_DATETIME_FIELDS = {
    "YEAR": "{}.year",
    "MONTH": "{}.month",
    "DAY": "{}.day",
    "DAYOFMONTH": "{}.day",
    "HOUR": "{}.hour",
    "MINUTE": "{}.minute",
    "SECOND": "{}.second",
    "QUARTER": "(({}.month + 2) // 3)",
}


@generator("TIMESTAMPADD")
def _timestampadd(g: Gen, c: Call) -> str:
    unit = symbol_value(c.operands[0])
    return g.strict(c.operands[1:], lambda n, ts: f"_t.timestampadd({unit!r}, {n}, {ts})")
