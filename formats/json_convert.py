"""Per-type value converters of the JSON format, built once per schema.

Decoding follows Flink's ``JsonToRowDataConverters``: numbers may arrive as JSON
strings, a STRING column takes the text of any JSON value, BYTES are base64,
TIMESTAMP is ``yyyy-MM-dd HH:mm:ss[.f]`` (SQL) or ``yyyy-MM-ddTHH:mm:ss[.f]``
(ISO-8601), TIMESTAMP_LTZ the same with a trailing ``Z``, TIME ``HH:mm:ss[.f]`` (with
the fraction digits TIME(p) declares, up to 6; Flink keeps milliseconds), DATE ``yyyy-MM-dd``. Encoding follows
``RowDataToJsonConverters``: fractions are printed with as many digits as needed
and no trailing zeros, DECIMAL as a JSON number.

A converter takes a non-null value and returns the converted value, raising
``ValueError`` / ``TypeError`` when the value does not fit; ``fast_type`` tells
the row compiler which Python type needs no conversion at all.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from math import isfinite
from typing import Annotated, Any

import msgspec

from deltaflow.formats.generated import define
from deltaflow.formats.nanos import with_nanos
from deltaflow.formats.printing import float32, java_double, java_float
from deltaflow.formats.types import (
    ARRAY,
    BIGINT,
    BINARY_ROOTS,
    BOOLEAN,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INT,
    INT_RANGES,
    MAP,
    MULTISET,
    NULL,
    ROW,
    STRING_ROOTS,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    DataType,
    decimal_limit,
    decimal_params,
    decimal_quantum,
    plain_type,
)

Conv = Callable[[object], object]

_TS = re.compile(r"(\d{4})-(\d\d)-(\d\d)([ T])(\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?(Z?)\Z")
_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?\Z")
_DATE = re.compile(r"\d{4}-\d\d-\d\d\Z")
_INT_TEXT = re.compile(r"\s*[+-]?\d+\s*\Z")
_TEXT_OF = msgspec.json.Encoder(decimal_format="number")
_WIDE = Context(prec=100)  # DECIMAL(38, s) values need more than the default 28 digits


def msgspec_type(dtype: DataType) -> Any:
    """The type msgspec decodes a JSON value of ``dtype`` with when the decoded value is
    already the column's value (``types.PLAIN_TYPES``, integers checked against the
    type's range), or None (the value goes through its converter)."""
    if dtype.root in INT_RANGES:
        low, high = INT_RANGES[dtype.root]
        return Annotated[int, msgspec.Meta(ge=low, le=high)]
    return plain_type(dtype)


# ---------------------------------------------------------------------------
# decoding


def decoder_for(dtype: DataType, iso: bool, fail_on_missing: bool) -> Conv:
    """The converter of one non-null JSON value to the Python value of ``dtype``."""
    root = dtype.root
    if root in INT_RANGES:
        return _int_reader(root)
    if root in STRING_ROOTS:
        return _text
    if root in BINARY_ROOTS:
        return _base64
    if root == DECIMAL:
        return decimal_reader(*decimal_params(dtype))
    if root == TIMESTAMP or root == TIMESTAMP_LTZ:
        return _timestamp_reader(dtype, iso)
    if root in (ARRAY, MAP, MULTISET, ROW):
        return _nested_reader(dtype, iso, fail_on_missing)
    if root == TIME:
        return _time_reader(dtype.precision or 0)
    simple = {BOOLEAN: _boolean, FLOAT: _float, DOUBLE: _double, DATE: _date}
    if root in simple:
        return simple[root]
    if root == NULL:
        return lambda v: None
    raise TypeError(f"the JSON format does not support type {dtype}")


def _nested_reader(dtype: DataType, iso: bool, fail_on_missing: bool) -> Conv:
    root = dtype.root
    if root == ARRAY:
        inner = decoder_for(dtype.element, iso, fail_on_missing)  # type: ignore[arg-type]
        return lambda v: [None if x is None else inner(x) for x in _expect(v, list)]
    if root in (MAP, MULTISET):
        key = decoder_for(dtype.element, iso, fail_on_missing)  # type: ignore[arg-type]
        value = decoder_for(dtype.value or DataType(INT), iso, fail_on_missing)
        return lambda v: {
            key(k): None if x is None else value(x) for k, x in _expect(v, dict).items()
        }
    return _row_reader(dtype, iso, fail_on_missing)


def _row_reader(dtype: DataType, iso: bool, fail_on_missing: bool) -> Conv:
    """A ROW's JSON object as a tuple: one generated function reading each field, a value
    msgspec already gave as the field's own (an int in range, a str, a float, a bool)
    taken as it is, any other through the field's converter (which decides or refuses)."""
    names = [n for n, _ in dtype.fields]
    env: dict[str, object] = {"expect": _expect, "names": names}
    parts = []
    for i, (_, ftype) in enumerate(dtype.fields):
        env[f"C{i}"] = decoder_for(ftype, iso, fail_on_missing)
        parts.append(f"None if (x{i} := get({names[i]!r})) is None else {_taken(ftype, i, env)}")
    missing = _MISSING if fail_on_missing else ""
    body = ", ".join(parts) + ("," if len(parts) == 1 else "")
    return define(_ROW.format(missing=missing, row=body), "row", env, "json row")


_ROW = """def row(v):
    if type(v) is not dict:
        expect(v, dict)
{missing}    get = v.get
    return ({row})
"""
_MISSING = """    for name in names:
        if name not in v:
            raise ValueError(f"field {name!r} is missing")
"""
_PLAIN = {BOOLEAN: "bool", DOUBLE: "float"}


def _taken(ftype: DataType, i: int, env: dict[str, object]) -> str:
    """The expression of field ``i``'s value ``x<i>`` (not None)."""
    root = ftype.root
    if root in INT_RANGES:
        env[f"L{i}"], env[f"H{i}"] = INT_RANGES[root]
        return f"x{i} if type(x{i}) is int and L{i} <= x{i} <= H{i} else C{i}(x{i})"
    if root in STRING_ROOTS:
        return f"x{i} if type(x{i}) is str else C{i}(x{i})"
    if root in _PLAIN:
        return f"x{i} if type(x{i}) is {_PLAIN[root]} else C{i}(x{i})"
    return f"C{i}(x{i})"


def _expect(value: object, kind: type) -> object:
    if type(value) is not kind:
        what = "JSON array" if kind is list else "JSON object"
        raise TypeError(f"expected a {what}, got {_show(value)}")
    return value


def _show(value: object) -> str:
    text = _TEXT_OF.encode(value).decode() if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def _int_reader(root: str) -> Conv:
    lo, hi = INT_RANGES[root]
    truncates = root in (INT, BIGINT)  # Jackson's asInt/asLong truncate a JSON float

    def read(v: object) -> int:
        if type(v) is int:
            n = v
        elif truncates and isinstance(v, float | Decimal) and not isinstance(v, bool):
            n = int(v)
        elif isinstance(v, str) and _INT_TEXT.match(v):
            n = int(v)
        else:
            raise ValueError(f"{_show(v)} is not a {root}")
        if not lo <= n <= hi:
            raise ValueError(f"{n} is out of range for {root}")
        return n

    return read


def _boolean(v: object) -> bool:
    if type(v) is bool:
        return v
    # Flink: Boolean.parseBoolean(text) - anything but "true" is false
    return isinstance(v, str) and v.strip().lower() == "true"


def _double(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | Decimal | str):
        raise ValueError(f"{_show(v)} is not a number")
    return float(v.strip() if isinstance(v, str) else v)


def _float(v: object) -> float:
    """Flink's ``JsonNode.floatValue``: the number as a 32-bit float."""
    return float32(_double(v))


def _text(v: object) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return java_double(v)
    if isinstance(v, int | Decimal):
        return str(v)
    return _TEXT_OF.encode(v).decode()


def _base64(v: object) -> bytes:
    if not isinstance(v, str):
        raise ValueError(f"{_show(v)} is not a base64 string")
    return base64.b64decode(v, validate=True)


def decimal_bounds(precision: int, scale: int) -> tuple[Decimal, Decimal, Context]:
    """The quantum of DECIMAL(p, s), the bound its values stay below in magnitude, and
    the context to quantize in (HALF_UP rounding, then ``abs(value) < bound``)."""
    return decimal_quantum(scale), decimal_limit(precision, scale), _WIDE


def decimal_reader(precision: int, scale: int) -> Conv:
    """A number (or numeric text) as a Decimal with exactly ``scale`` digits, HALF_UP."""
    quantum, limit, _ = decimal_bounds(precision, scale)

    def read(v: object) -> Decimal:
        if isinstance(v, bool):
            raise ValueError(f"{_show(v)} is not a number")
        try:
            number = (
                v if isinstance(v, Decimal) else Decimal(v.strip() if isinstance(v, str) else v)
            )  # type: ignore[arg-type]
            out = number.quantize(quantum, rounding=ROUND_HALF_UP, context=_WIDE)
        except (InvalidOperation, TypeError):
            raise ValueError(f"{_show(v)} is not a DECIMAL({precision}, {scale})") from None
        if not out.is_finite() or abs(out) >= limit:
            raise ValueError(f"{_show(v)} does not fit DECIMAL({precision}, {scale})")
        return out

    return read


def _date(v: object) -> dt.date:
    if not isinstance(v, str) or not _DATE.match(v):
        raise ValueError(f"{_show(v)} is not a DATE 'yyyy-MM-dd'")
    return dt.date.fromisoformat(v)


def _time_reader(precision: int) -> Conv:
    """``HH:mm:ss[.f]``, keeping ``precision`` fraction digits (at most 6). Flink 2.3 keeps
    milliseconds whatever p says (TIME(6) loses its last 3 digits, TIME(0) keeps 3);
    deltaflow keeps what TIME(p) declares (an intended difference)."""
    keep = 10 ** (6 - min(precision, 6))

    def read(v: object) -> dt.time:
        match = _TIME.match(v) if isinstance(v, str) else None
        if match is None:
            raise ValueError(f"{_show(v)} is not a TIME 'HH:mm:ss'")
        hour, minute, second, frac = match.groups()
        micro = int((frac or "0")[:6].ljust(6, "0")) // keep * keep
        return dt.time(int(hour), int(minute), int(second), micro)

    return read


def timestamp_shortcut(dtype: DataType, iso: bool) -> tuple[Callable, Callable] | None:
    """For a TIMESTAMP(p) column with p <= 6: (a test of the text its converter reads as
    ``datetime.fromisoformat`` does, ``fromisoformat``), both in C, so a batch reader can
    skip the converter's Python call; None for other types. The test takes exactly
    ``yyyy-MM-dd?HH:mm:ss`` with at most p fraction digits (the converter then keeps every
    digit and adds no zone); anything else, or text ``fromisoformat`` refuses, is the
    converter's to read or refuse."""
    if dtype.root != TIMESTAMP:
        return None
    precision = 6 if dtype.precision is None else dtype.precision
    if precision > 6:
        return None
    sep = "T" if iso else " "
    fraction = rf"(?:\.\d{{1,{precision}}})?" if precision else ""
    shape = re.compile(rf"\d{{4}}-\d\d-\d\d{sep}\d\d:\d\d:\d\d{fraction}", re.ASCII)
    return shape.fullmatch, dt.datetime.fromisoformat


def _timestamp_reader(dtype: DataType, iso: bool) -> Conv:
    ltz = dtype.root == TIMESTAMP_LTZ
    sep = "T" if iso else " "
    keep = 10 ** (6 - min(dtype.precision if dtype.precision is not None else 6, 6))
    parse = dt.datetime.fromisoformat
    # the well-formed shape, checked in C; anything else goes the long way below
    zone = "Z" if ltz else ""
    exact = re.compile(rf"\d{{4}}-\d\d-\d\d{sep}\d\d:\d\d:\d\d(?:\.\d{{1,9}})?{zone}", re.ASCII)

    def read(v: object) -> dt.datetime:
        if type(v) is str and exact.fullmatch(v):
            body: str | None = v[:-1] if ltz else v
        else:
            body = _plain_timestamp(v, sep, ltz)
        if body is None:
            value = _timestamp_slow(v, dtype, sep, ltz)
        else:  # the common, well-formed case: C parser
            value = parse(body + "+00:00" if ltz else body)
        if keep > 1 and value.microsecond % keep:
            value = value.replace(microsecond=value.microsecond // keep * keep)
        return value

    if dtype.precision is not None and dtype.precision > 6:
        step = 10 ** (9 - dtype.precision)
        return lambda v: with_nanos(read(v), _nanos_in(v) // step * step)
    return read


def _nanos_in(text: object) -> int:
    """Fraction digits 7 to 9 of timestamp text, as nanoseconds (0 when there are none)."""
    dot = text.find(".", 19)  # type: ignore[attr-defined]
    if dot < 0:
        return 0
    end = dot + 1
    while end < len(text) and text[end].isdigit():  # type: ignore[arg-type]
        end += 1
    return int(text[dot + 7 : min(end, dot + 10)].ljust(3, "0")) if end > dot + 7 else 0  # type: ignore[index]


def _plain_timestamp(v: object, sep: str, ltz: bool) -> str | None:
    """``v`` without its ``Z`` when it is exactly ``yyyy-MM-dd?HH:mm:ss[.f{1,9}]``."""
    if type(v) is not str or len(v) < 19 or v[10] != sep:
        return None
    if ltz:
        if v[-1] != "Z":
            return None
        v = v[:-1]
    if v[4] != "-" or v[7] != "-" or v[13] != ":" or v[16] != ":":
        return None
    head, tail = v[:19], v[19:]
    if not head.replace("-", "").replace(":", "").replace(sep, "").isdecimal():
        return None
    if tail and (tail[0] != "." or not 1 < len(tail) <= 10 or not tail[1:].isdecimal()):
        return None
    return v if v.isascii() else None


def _timestamp_slow(v: object, dtype: DataType, sep: str, ltz: bool) -> dt.datetime:
    """The other shapes Flink accepts (ISO-8601 without seconds), or a clear error."""
    shape = f"yyyy-MM-dd{sep}HH:mm:ss[.SSS]" + ("Z" if ltz else "")
    match = _TS.match(v) if isinstance(v, str) else None
    if match is None or match.group(4) != sep or (match.group(9) == "Z") != ltz:
        raise ValueError(f"{_show(v)} is not a {dtype.root} {shape!r}")
    y, mo, d, _, h, mi, s, frac, _ = match.groups()
    if s is None and sep == " ":
        raise ValueError(f"{_show(v)} is not a {dtype.root} {shape!r}")
    micros = int((frac or "0")[:6].ljust(6, "0"))
    return dt.datetime(
        int(y), int(mo), int(d), int(h), int(mi), int(s or 0), micros,
        tzinfo=dt.UTC if ltz else None,
    )  # fmt: skip


# ---------------------------------------------------------------------------
# encoding


def fraction(micros: int, nanos: int = 0) -> str:
    """``.123`` for 123000 microseconds, nothing for 0 (java.time's appendFraction(0, 9));
    ``nanos`` beyond the microseconds add digits 7 to 9."""
    if nanos:
        return "." + f"{micros:06d}{nanos:03d}".rstrip("0")
    return "." + f"{micros:06d}".rstrip("0") if micros else ""


def timestamp_text(value: dt.datetime, iso: bool, ltz: bool) -> str:
    if ltz and value.tzinfo is not None:
        value = value.astimezone(dt.UTC)
    sep = "T" if iso else " "
    frac = fraction(value.microsecond, getattr(value, "nanos", 0))
    text = (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}{sep}"
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}{frac}"
    )
    return text + "Z" if ltz else text


def time_writer(precision: int) -> Conv:
    """TIME(p) as ISO-8601 ``HH:mm:ss[.f]``: the fraction digits the value has, at most
    ``p``. Flink 2.3 writes at most milliseconds (its TIME holds milliseconds);
    deltaflow writes the declared precision (an intended difference)."""
    keep = 10 ** (6 - min(precision, 6))

    def write(v: object) -> str:
        micro = v.microsecond // keep * keep  # type: ignore[attr-defined]
        return f"{v.hour:02d}:{v.minute:02d}:{v.second:02d}{fraction(micro)}"  # type: ignore[attr-defined]

    return write


def _float_number(v: object) -> object:
    """A FLOAT as Jackson writes it: ``0.1``, ``3.4028235E38``; NaN and the infinities as
    strings."""
    if isfinite(v):  # type: ignore[arg-type]
        return msgspec.Raw(java_float(v).encode())  # type: ignore[arg-type]
    return java_double(v)  # type: ignore[arg-type]


class EncodeOptions:
    """What the JSON encoder was asked for: timestamp standard, null map keys, decimals."""

    def __init__(self, iso: bool, null_key_mode: str, null_key_literal: str, plain: bool) -> None:
        self.iso = iso
        self.null_key_mode = null_key_mode
        self.null_key_literal = null_key_literal
        self.plain = plain


def encoder_for(dtype: DataType, opts: EncodeOptions) -> Conv | None:
    """A converter of one non-null value to what msgspec writes; None when none is needed."""
    root = dtype.root
    if root == DECIMAL:
        return (lambda v: msgspec.Raw(format(v, "f").encode())) if opts.plain else None
    if root == FLOAT:  # Jackson writes a float's shortest digits (Float.toString)
        return _float_number
    if root == DOUBLE:  # Jackson writes NaN and the infinities as strings
        return lambda v: v if isfinite(v) else java_double(v)  # type: ignore[arg-type]
    if root == TIME:
        return time_writer(dtype.precision or 0)
    if root in (TIMESTAMP, TIMESTAMP_LTZ):
        iso, ltz = opts.iso, root == TIMESTAMP_LTZ
        return lambda v: timestamp_text(v, iso, ltz)  # type: ignore[arg-type]
    if root == DATE:
        return lambda v: v.isoformat()  # type: ignore[attr-defined]
    if root == ARRAY:
        inner = encoder_for(dtype.element, opts)  # type: ignore[arg-type]
        if inner is None:
            return None
        return lambda v: [None if x is None else inner(x) for x in v]  # type: ignore[attr-defined]
    if root in (MAP, MULTISET):
        return _map_writer(dtype, opts)
    if root == ROW:
        return _row_writer(dtype, opts)
    return None


def _map_writer(dtype: DataType, opts: EncodeOptions) -> Conv:
    if dtype.element is None or dtype.element.root not in STRING_ROOTS:
        raise TypeError(f"the JSON format writes only string map keys, not {dtype}")
    inner = encoder_for(dtype.value, opts) if dtype.value is not None else None
    mode, literal = opts.null_key_mode, opts.null_key_literal

    def write(v: object) -> dict:
        out = {}
        for key, x in v.items():  # type: ignore[attr-defined]
            if key is None:
                if mode == "FAIL":
                    raise ValueError(
                        "a MAP has a null key; set 'json.map-null-key.mode' to 'DROP' or "
                        "'LITERAL' to write such maps"
                    )
                if mode == "DROP":
                    continue
                key = literal
            out[key] = x if x is None or inner is None else inner(x)
        return out

    return write


def _row_writer(dtype: DataType, opts: EncodeOptions) -> Conv:
    names = [n for n, _ in dtype.fields]
    convs = [encoder_for(t, opts) for _, t in dtype.fields]

    def write(v: object) -> dict:
        return {
            n: x if x is None or c is None else c(x)
            for n, c, x in zip(names, convs, v, strict=True)  # type: ignore[call-overload]
        }

    return write
