"""Runtime CAST between Flink types (Flink 2.x semantics, ``table.exec.legacy-cast-behaviour``
off): a failed CAST fails the job with an ``EvalError``, TRY_CAST gives NULL instead.

``cast_function(src, dst, tz)`` returns a function of one non-NULL value, or None when the
value needs no conversion.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from deltaflow.formats.printing import java_double, java_float
from deltaflow.formats.types import (
    APPROX_ROOTS,
    ARRAY,
    BIGINT,
    BINARY,
    BINARY_ROOTS,
    BOOLEAN,
    CHAR,
    DATE,
    DECIMAL,
    FLOAT,
    INT,
    INT_BITS,
    INT_RANGES,
    INTEGER_ROOTS,
    MAP,
    MAX_LENGTH,
    MULTISET,
    ROW,
    STRING_ROOTS,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    DataType,
)
from deltaflow.processor.exprs import lib_temporal as tl
from deltaflow.processor.exprs.coercion import (
    INTERVAL_DAY_TIME,
    INTERVAL_ROOTS,
    INTERVAL_YEAR_MONTH,
)
from deltaflow.processor.exprs.errors import EvalError
from deltaflow.processor.exprs.lib_date_format import timestamp_text
from deltaflow.processor.exprs.lib_numeric import exponent, fit, wrap

Fn = Callable[[Any], Any]  # one value of a column to its cast value
_TRUE = frozenset({"true", "t", "yes", "y", "1"})
_FALSE = frozenset({"false", "f", "no", "n", "0"})


def _fail(value: object, dst: DataType) -> EvalError:
    return EvalError(
        f"CAST({value!r} AS {dst.sql()}) failed: the value is not a valid {dst.root}; "
        "use TRY_CAST to get NULL instead of failing the job"
    )


def cast_function(src: DataType, dst: DataType, tz: dt.tzinfo) -> Fn | None:
    """The conversion of one non-NULL ``src`` value to ``dst``; None when it is the identity."""
    s, d = src.root, dst.root
    if d in STRING_ROOTS:
        return _to_string(src, dst, tz)
    if s in STRING_ROOTS:
        return _from_string(dst, tz)
    if d in INTEGER_ROOTS:
        return _to_integer(src, dst)
    if d == DECIMAL:
        return _to_decimal(src, dst)
    if d in APPROX_ROOTS:
        return None if s in APPROX_ROOTS else (lambda v: float(v))  # type: ignore[arg-type]
    if d == BOOLEAN:
        return None if s == BOOLEAN else bool
    if d in (DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ):
        return _to_temporal(src, dst, tz)
    if d in BINARY_ROOTS or d in INTERVAL_ROOTS:
        return None
    if s == d and d in (ARRAY, MULTISET, MAP, ROW):
        return _constructed(src, dst, tz)
    raise EvalError(f"deltaflow cannot evaluate CAST from {src.sql()} to {dst.sql()}")


def _to_integer(src: DataType, dst: DataType) -> Fn | None:
    bits = INT_BITS[dst.root]
    if src.root in INTEGER_ROOTS:
        return None if INT_BITS[src.root] <= bits else (lambda v: wrap(v, bits))  # type: ignore[arg-type]
    if src.root == BOOLEAN:
        return int  # type: ignore[return-value]
    if src.root in APPROX_ROOTS:
        limit = INT_RANGES[BIGINT if bits > 32 else INT][1]  # Java saturates to int or long

        def from_float(v: float) -> int:  # Java: (int)/(long) saturate, NaN -> 0
            if math.isnan(v):
                return 0
            if math.isinf(v):
                return wrap(limit if v > 0 else -limit - 1, bits)
            return wrap(max(-limit - 1, min(limit, int(v))), bits)

        return from_float  # type: ignore[return-value]
    return lambda v: wrap(int(v), bits)  # type: ignore[call-overload]  # DECIMAL: truncate


def _to_decimal(src: DataType, dst: DataType) -> Fn | None:
    exp = exponent(dst.scale or 0)
    digits = (dst.precision or 10) - (dst.scale or 0)
    if src.root == DECIMAL and src.scale == dst.scale and src.precision <= dst.precision:  # type: ignore[operator]
        return None
    if src.root in APPROX_ROOTS:

        def from_float(v: float) -> Decimal | None:
            if math.isnan(v) or math.isinf(v):
                return None
            return fit(Decimal(repr(v)), exp, digits)

        return from_float  # type: ignore[return-value]
    return lambda v: fit(Decimal(int(v) if isinstance(v, bool) else v), exp, digits)  # type: ignore[arg-type]


def _to_temporal(src: DataType, dst: DataType, tz: dt.tzinfo) -> Fn | None:
    s, d = src.root, dst.root
    precision = dst.precision if dst.precision is not None else 6
    if s == d and d in (DATE,):
        return None
    if d == DATE:
        return (lambda v: tl.to_local(v, tz).date()) if s == TIMESTAMP_LTZ else (lambda v: v.date())  # type: ignore[attr-defined]
    if d == TIME:
        if s == TIME:
            return lambda v: tl.truncate_micros(v, precision)
        if s == TIMESTAMP_LTZ:
            return lambda v: tl.truncate_micros(tl.to_local(v, tz).time(), precision)  # type: ignore[arg-type]
        return lambda v: tl.truncate_micros(v.time(), precision)  # type: ignore[attr-defined]
    naive = _to_naive(s, tz)
    if d == TIMESTAMP:
        return lambda v: tl.truncate_micros(naive(v), precision)
    if s in INTEGER_ROOTS | APPROX_ROOTS | {DECIMAL}:
        return lambda v: tl.truncate_micros(tl.from_epoch(float(v) * 1000), precision)  # type: ignore[arg-type]
    if s == TIMESTAMP_LTZ:
        return lambda v: tl.truncate_micros(v, precision)
    return lambda v: tl.truncate_micros(tl.from_local(naive(v), tz), precision)


def _to_naive(s: str, tz: dt.tzinfo) -> Fn:
    if s == TIMESTAMP_LTZ:
        return lambda v: tl.to_local(v, tz)  # type: ignore[arg-type]
    if s == DATE:
        return lambda v: dt.datetime.combine(v, dt.time())  # type: ignore[arg-type]
    if s == TIME:
        return lambda v: dt.datetime.combine(dt.date(1970, 1, 1), v)  # type: ignore[arg-type]
    return lambda v: v


def _to_string(src: DataType, dst: DataType, tz: dt.tzinfo) -> Fn | None:
    show = value_to_string(src, tz)
    length = dst.length or MAX_LENGTH
    if dst.root == CHAR:
        return lambda v: show(v)[:length].ljust(length)
    if length >= MAX_LENGTH:
        return None if src.root in STRING_ROOTS else show
    return lambda v: show(v)[:length]


def value_to_string(src: DataType, tz: dt.tzinfo) -> Callable[[object], str]:
    """How CAST(x AS STRING) renders one non-NULL value of ``src``."""
    s = src.root
    precision = src.precision if src.precision is not None else 6
    if s == BOOLEAN:
        return lambda v: "TRUE" if v else "FALSE"
    if s == DECIMAL:
        return lambda v: format(v, "f")
    if s in APPROX_ROOTS:
        return java_float if s == FLOAT else java_double  # type: ignore[return-value]
    if s == TIMESTAMP:
        return timestamp_text(precision)
    if s == TIMESTAMP_LTZ:
        text = timestamp_text(precision)
        return lambda v: text(tl.to_local(v, tz))  # type: ignore[arg-type]
    if s == TIME:
        return lambda v: tl.format_time(v, src.precision or 0)  # type: ignore[arg-type]
    if s == DATE:
        return lambda v: v.isoformat()  # type: ignore[attr-defined]
    if s in BINARY_ROOTS:
        return _utf8
    if s in (ARRAY, MULTISET, MAP, ROW):
        return _constructed_string(src, tz)
    if s == INTERVAL_DAY_TIME:
        return _day_time_string
    if s == INTERVAL_YEAR_MONTH:
        return _year_month_string
    return str


def _day_time_string(millis: object) -> str:
    """Flink's day-time interval text: ``+0 00:05:00.000``."""
    sign = "-" if millis < 0 else "+"  # type: ignore[operator]
    rest, ms = divmod(abs(millis), 1000)  # type: ignore[arg-type]
    rest, sec = divmod(rest, 60)
    rest, minute = divmod(rest, 60)
    days, hour = divmod(rest, 24)
    return f"{sign}{days} {hour:02d}:{minute:02d}:{sec:02d}.{ms:03d}"


def _year_month_string(months: object) -> str:
    """Flink's year-month interval text: ``+1-02``."""
    sign = "-" if months < 0 else "+"  # type: ignore[operator]
    years, month = divmod(abs(months), 12)  # type: ignore[arg-type]
    return f"{sign}{years}-{month:02d}"


def _utf8(v: object) -> str:
    try:
        return v.decode("utf-8")  # type: ignore[attr-defined, no-any-return]
    except UnicodeDecodeError:
        raise EvalError(
            "CAST of BYTES to STRING found invalid UTF-8; use TRY_CAST to get NULL instead"
        ) from None


def _constructed_string(src: DataType, tz: dt.tzinfo) -> Callable[[object], str]:
    def nullable(t: DataType | None) -> Callable[[object], str]:
        inner = value_to_string(t, tz) if t is not None else str
        return lambda v: "NULL" if v is None else inner(v)

    if src.root == ROW:
        subs = [nullable(t) for _, t in src.fields]
        return lambda v: "(" + ", ".join(f(x) for f, x in zip(subs, v, strict=True)) + ")"  # type: ignore[call-overload]
    key = nullable(src.element)
    if src.root == ARRAY:
        return lambda v: "[" + ", ".join(key(x) for x in v) + "]"  # type: ignore[attr-defined]
    val = nullable(src.value)
    return lambda v: "{" + ", ".join(f"{key(k)}={val(x)}" for k, x in v.items()) + "}"  # type: ignore[attr-defined]


def _to_bytes(dst: DataType) -> Fn:
    """UTF-8 bytes cut to the target length; BINARY(n) also pads with zero bytes, as Flink."""
    n = dst.length or MAX_LENGTH
    if dst.root == BINARY:
        return lambda v: v.encode("utf-8")[:n].ljust(n, b"\0")  # type: ignore[attr-defined]
    return lambda v: v.encode("utf-8")[:n]  # type: ignore[attr-defined]


def _from_string(dst: DataType, tz: dt.tzinfo) -> Fn | None:
    d = dst.root
    if d in BINARY_ROOTS:
        return _to_bytes(dst)
    parse = _STRING_PARSERS.get(d)
    if parse is None:
        raise EvalError(f"deltaflow cannot evaluate CAST from STRING to {dst.sql()}")
    target = cast_function(_PARSED_AS[d], dst, tz) if d in _PARSED_AS else None
    if d in INTEGER_ROOTS:
        limit = 1 << (INT_BITS[d] - 1)
        target = None
        parse = _ranged(_parse_int, -limit, limit - 1)

    def convert(v: object) -> object:
        out = parse(v.strip())  # type: ignore[attr-defined]
        if out is None:
            raise _fail(v, dst)
        return out if target is None else target(out)

    return convert


def _parse_int(text: str) -> int | None:
    try:
        return int(text, 10)
    except ValueError:
        return None


def _ranged(parse: Callable[[str], int | None], low: int, high: int) -> Callable[[str], object]:
    def check(text: str) -> int | None:
        value = parse(text)
        return value if value is not None and low <= value <= high else None

    return check


def _parse_decimal(text: str) -> Decimal | None:
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def _parse_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _parse_bool(text: str) -> bool | None:
    low = text.lower()
    return True if low in _TRUE else False if low in _FALSE else None


_STRING_PARSERS: dict[str, Callable[[str], object]] = {
    **dict.fromkeys(INTEGER_ROOTS, _parse_int),
    DECIMAL: _parse_decimal,
    **dict.fromkeys(APPROX_ROOTS, _parse_float),
    BOOLEAN: _parse_bool,
    DATE: tl.parse_date,
    TIME: tl.parse_time,
    TIMESTAMP: tl.parse_timestamp,
    TIMESTAMP_LTZ: tl.parse_timestamp,
}
_PARSED_AS = {
    DECIMAL: DataType(DECIMAL, precision=38, scale=18),
    TIMESTAMP: DataType(TIMESTAMP, precision=9),
    TIMESTAMP_LTZ: DataType(TIMESTAMP, precision=9),
    TIME: DataType(TIME, precision=9),
}


def _constructed(src: DataType, dst: DataType, tz: dt.tzinfo) -> Fn | None:
    def nullable(a: DataType | None, b: DataType | None) -> Fn:
        inner = cast_function(a, b, tz) if a is not None and b is not None else None
        if inner is None:
            return lambda v: v
        return lambda v: None if v is None else inner(v)

    if src.root == ROW:
        subs = [nullable(a, b) for (_, a), (_, b) in zip(src.fields, dst.fields, strict=True)]
        return lambda v: tuple(f(x) for f, x in zip(subs, v, strict=True))  # type: ignore[call-overload]
    key = nullable(src.element, dst.element)
    if src.root == ARRAY:
        return lambda v: [key(x) for x in v]  # type: ignore[attr-defined]
    val = nullable(src.value, dst.value)
    return lambda v: {key(k): val(x) for k, x in v.items()}  # type: ignore[attr-defined]
