"""Values and rows printed the way Flink's ``Row.toString`` (the print connector) does."""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Callable
from decimal import ROUND_UP, Context, Decimal

from deltaflow.formats.changelog import SHORT
from deltaflow.formats.types import (
    ARRAY,
    BINARY_ROOTS,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    MAP,
    MULTISET,
    ROW,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    DataType,
)


def java_double(x: float) -> str:
    """Java ``Double.toString``: ``1.0``, ``1.0E7``, ``1.0E-4``, ``NaN``, ``Infinity``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = repr(x)
        return text if "." in text else text + ".0"
    shortest = Decimal(repr(x))  # Python's repr is the shortest round-trip digits, as Java's
    sign, digits, _ = shortest.as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{shortest.adjusted()}"


_F32 = struct.Struct("f")
_U32 = struct.Struct("I")


def float32(x: float) -> float:
    """``x`` rounded to the nearest 32-bit float (Java's ``(float) x``): infinite only
    beyond the largest float by half a unit, so ``3.4028235E38`` stays the largest."""
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def java_float(x: float) -> str:
    """Java ``Float.toString`` for a FLOAT value: the shortest digits (at least two) that
    read back as the same 32-bit value, the closest of them (``0.1``, ``4213.13``,
    ``3.4028235E38``, ``1.4E-45``), in Java's layout (JDK 19 and later; JDK 17 prints
    more digits than needed for about one float in ten)."""
    if not x:  # 0.0 and -0.0 are one dict key, but print differently
        return java_double(float32(x))
    text = _FLOAT_TEXT.get(x)
    if text is None:
        if len(_FLOAT_TEXT) >= _FLOAT_MEMO:
            _FLOAT_TEXT.clear()
        text = _FLOAT_TEXT[x] = _java_float(x)
    return text


_FLOAT_TEXT: dict[float, str] = {}  # FLOAT values repeat (prices): their texts, memoized
_FLOAT_MEMO = 1 << 14


def _java_float(x: float) -> str:
    f32 = float32(x)
    if math.isnan(f32) or math.isinf(f32) or f32 == 0:
        return java_double(f32)
    low, high = 2, 9  # nine digits always read back; fewer digits that do are found by
    best = f"{f32:.9g}"  # bisection (if d digits read back, so do d + 1)
    while low < high:
        mid = (low + high) // 2
        text = f"{f32:.{mid}g}"
        if _F32.unpack(_F32.pack(float(text)))[0] == f32:
            best, high = text, mid
        else:
            low = mid + 1
    if not _U32.unpack(_F32.pack(f32))[0] & 0x7FFFFF:
        best = _power_of_two(f32, best, high)
    return java_double(float(best))


def _power_of_two(f32: float, best: str, length: int) -> str:
    """A power of two is nearer its lower neighbour than its upper one: the nearest
    decimal of a length may miss the values that read back, and the next one up hit."""
    for digits in range(2, length):
        up = Decimal(f"{f32:.{digits}g}").next_plus(Context(prec=digits, rounding=ROUND_UP))
        if float32(float(up)) == f32:
            return str(up)
    return best


def _fraction(value: dt.time | dt.datetime, precision: int | None, nanos: int = 0) -> str:
    micro = value.microsecond
    if nanos:  # nanoseconds beyond the microsecond (TIMESTAMP(7..9)): all nine digits
        return f".{micro:06d}{nanos:03d}"
    if micro == 0:
        return ""
    text = f"{micro:06d}".rstrip("0")
    # Java's LocalTime/Instant print fractions in groups of 3 digits
    width = 3 if len(text) <= 3 else 6
    return "." + text.ljust(width, "0")


def format_time(value: dt.time, nanos: int = 0) -> str:
    """``java.time.LocalTime.toString``: ``HH:mm`` when seconds are zero, else ``HH:mm:ss[.fff]``."""
    text = f"{value.hour:02d}:{value.minute:02d}"
    if value.second or value.microsecond or nanos:
        text += f":{value.second:02d}" + _fraction(value, None, nanos)
    return text


def format_timestamp(value: dt.datetime) -> str:
    """``LocalDateTime.toString``: ``2020-05-13T09:26:27`` (seconds dropped when zero)."""
    return f"{value.date().isoformat()}T{format_time(value.time(), getattr(value, 'nanos', 0))}"


def format_instant(value: dt.datetime) -> str:
    """``Instant.toString`` in UTC: ``2020-05-13T07:40:06.100Z``, seconds always printed."""
    nanos = getattr(value, "nanos", 0)
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    text = f"{value.date().isoformat()}T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    return text + _fraction(value, None, nanos) + "Z"


def formatter(dtype: DataType) -> Callable[[object], str]:
    """A function printing one non-null value of ``dtype`` as Flink's print connector."""
    root = dtype.root
    if root == DECIMAL:
        # Java's BigDecimal.toString, which Flink prints: plain unless the adjusted exponent
        # is below -6 (a zero DECIMAL(21, 13) is 0E-13). Python's str follows the same rule.
        return str
    if root == DOUBLE:
        return java_double  # type: ignore[return-value]
    if root == FLOAT:
        return java_float  # type: ignore[return-value]
    if root == TIMESTAMP_LTZ:
        return format_instant  # type: ignore[return-value]
    if root == TIMESTAMP:
        return format_timestamp  # type: ignore[return-value]
    if root == TIME:
        return format_time  # type: ignore[return-value]
    if root == DATE:
        return lambda v: v.isoformat()  # type: ignore[attr-defined]
    if root in BINARY_ROOTS:
        return lambda v: "[" + ", ".join(str(b - 256 if b > 127 else b) for b in v) + "]"  # type: ignore[attr-defined]
    if root in (ARRAY, MULTISET) and root == ARRAY:
        inner = nullable_formatter(dtype.element)  # type: ignore[arg-type]
        return lambda v: "[" + ", ".join(inner(x) for x in v) + "]"  # type: ignore[attr-defined]
    if root in (MAP, MULTISET):
        key = nullable_formatter(dtype.element)  # type: ignore[arg-type]
        val = nullable_formatter(dtype.value) if dtype.value else str
        return lambda v: "{" + ", ".join(f"{key(k)}={val(x)}" for k, x in v.items()) + "}"  # type: ignore[attr-defined]
    if root == ROW:
        subs = [nullable_formatter(t) for _, t in dtype.fields]
        return lambda v: "+I[" + ", ".join(f(x) for f, x in zip(subs, v, strict=True)) + "]"  # type: ignore[call-overload]
    if root == "BOOLEAN":
        return lambda v: "true" if v else "false"
    return str


def nullable_formatter(dtype: DataType) -> Callable[[object], str]:
    inner = formatter(dtype)
    return lambda v: "null" if v is None else inner(v)


def row_printer(types: list[DataType]) -> Callable[[int, tuple], str]:
    """A function printing ``(kind, row)`` as ``+I[1, Alice]``."""
    fmts = [nullable_formatter(t) for t in types]

    def show(kind: int, row: tuple) -> str:
        return SHORT[kind] + "[" + ", ".join(f(v) for f, v in zip(fmts, row, strict=True)) + "]"

    return show


def format_value(value: object, dtype: DataType) -> str:
    return nullable_formatter(dtype)(value)


__all__ = ["Decimal", "format_value", "formatter", "java_double", "row_printer"]
