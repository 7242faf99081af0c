"""JSON values of a Debezium row image to the Python values of Flink SQL types.

One converter per column, built once per schema. A converter takes a non-null value
and returns the column's value, raising ``ValueError`` / ``TypeError`` /
``ArithmeticError`` when the value does not fit the column.

The rules are those of Flink's JSON format (``JsonToRowDataConverters``), which
Flink's debezium-json uses for ``before`` and ``after``:

- numbers: a JSON number, or a JSON string holding one (``"42"``); INT and BIGINT
  truncate a fractional JSON number toward zero, as Jackson's ``asInt``/``asLong``.
  An integer outside the column's range is an error.
- DECIMAL(p, s): rounded HALF_UP to s digits; a value with more than p digits
  becomes NULL, as Flink's ``DecimalData.fromBigDecimal`` returns null. How the
  value is encoded (numeric text, base64, double) is the table's
  ``decimal-encoding``, never guessed (``debezium_decimals``).
- STRING: the text of any JSON value (numbers as Java prints them, objects and
  arrays as compact JSON).
- BOOLEAN: ``true``/``false``; a string is true when it is ``"true"`` in any case
  (Java's ``Boolean.parseBoolean``).
- BYTES: base64 text.

Deltaflow also reads the Debezium encodings that Flink's JSON format rejects, when
the JSON type of the value makes them unambiguous (``debezium_types`` applies the
exact logical type when the message carries its schema):

- DATE from an integer: days since 1970-01-01 (``io.debezium.time.Date``).
- TIME / TIMESTAMP / TIMESTAMP_LTZ from an integer: the unit is chosen by size, as
  Debezium's encodings of real values fall in distinct ranges. TIME: below
  86,400,000 milliseconds (``Time``), below 86,400,000,000 microseconds
  (``MicroTime``), else nanoseconds (``NanoTime``). TIMESTAMP: absolute value below
  1e14 milliseconds (``Timestamp``, up to the year 5138), below 1e17 microseconds
  (``MicroTimestamp``), else nanoseconds (``NanoTimestamp``). Without a schema a
  ``MicroTime`` before 00:01:26.4 or a ``MicroTimestamp`` within 3 years of 1970 is
  read in the wrong unit; use ``schema-include`` for such data.
- TIMESTAMP / TIMESTAMP_LTZ from a string: ``yyyy-MM-dd HH:mm:ss[.f]`` or with ``T``,
  with an optional ``Z`` or offset (``io.debezium.time.ZonedTimestamp``), whatever
  ``timestamp-format.standard`` says; a timestamp with an offset is moved to UTC.
- BOOLEAN from a number: true when it is not zero (Flink reads every number as false).
- ARRAY / MAP / ROW from a string: the string parsed as JSON (``io.debezium.data.Json``).

TIME keeps at most microseconds (Python's time; Flink's TIME holds milliseconds),
TIMESTAMP(p <= 6) microseconds and TIMESTAMP(7..9) nanoseconds (``nanos``); each is
truncated to the column's precision.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import msgspec

from deltaflow.formats.debezium_decimals import DEFAULT as DEFAULT_DECIMALS
from deltaflow.formats.debezium_decimals import decimal_converter
from deltaflow.formats.nanos import plain, truncate, with_nanos
from deltaflow.formats.printing import float32, java_double
from deltaflow.formats.types import (
    ARRAY,
    BINARY_ROOTS,
    BOOLEAN,
    CHAR,
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
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    VARCHAR,
    DataType,
)

Converter = Callable[[Any], Any]

# What a converter raises for a value that does not fit its column (RecursionError:
# JSON nested deeper than msgspec reads).
CONVERSION_ERRORS = (ValueError, TypeError, ArithmeticError, RecursionError, msgspec.MsgspecError)

EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)
_INT_TEXT = re.compile(r"[+-]?\d+")
_FLOAT_TEXT = re.compile(r"[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[fFdD]?")
_DATE_TEXT = re.compile(r"\d{4}-\d\d-\d\d")
_TIME_TEXT = re.compile(r"(\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?")
_ISO_LENGTHS = frozenset((19, 23, 26))
_from_iso = dt.datetime.fromisoformat
_TS_TEXT = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?"
    r"(Z|[+-]\d\d(?::?\d\d)?)?"
)
_JSON_TEXT = msgspec.json.Encoder(decimal_format="number")


def converter(dtype: DataType, decimals: str = DEFAULT_DECIMALS) -> Converter:
    """The function turning one non-null JSON value into the Python value of ``dtype``;
    ``decimals`` is how DECIMAL values are encoded (``debezium_decimals``)."""
    root = dtype.root
    if root in INT_RANGES:
        return _integer(dtype)
    if root in BINARY_ROOTS:
        return _to_bytes
    if root == DECIMAL:
        return decimal_converter(dtype, decimals)
    if root in (ARRAY, MAP, MULTISET, ROW):
        return _NESTED[root](dtype, decimals)
    factory = _FACTORIES.get(root)
    if factory is None:
        raise TypeError(f"debezium-json does not read columns of type {dtype}")
    return factory(dtype)


def show(value: object, limit: int = 60) -> str:
    """A short rendering of a decoded JSON value for error messages."""
    if isinstance(value, str):
        text = repr(value)
    else:
        try:
            text = _JSON_TEXT.encode(value).decode()
        except (TypeError, msgspec.EncodeError):
            text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _wrong(value: object, what: str) -> ValueError:
    return ValueError(f"{show(value)} is not {what}")


def _integer(dtype: DataType) -> Converter:
    low, high = INT_RANGES[dtype.root]
    name = dtype.root

    def convert(v: Any) -> int:
        kind = type(v)
        if kind is int:
            n = v
        elif kind is float or kind is Decimal:
            if not math.isfinite(v):
                raise _wrong(v, f"a {name}")
            n = int(v)
        elif kind is str and _INT_TEXT.fullmatch(s := v.strip()):
            n = int(s)
        else:
            raise _wrong(v, f"a {name}")
        if low <= n <= high:
            return n
        raise ValueError(f"{n} is out of the range of {name}")

    return convert


def _to_boolean(v: Any) -> bool:
    kind = type(v)
    if kind is bool:
        return v
    if kind is str:
        return v.strip().lower() == "true"
    if kind is int or kind is float or kind is Decimal:
        return v != 0
    raise _wrong(v, "a BOOLEAN")


def to_double(v: Any) -> float:
    kind = type(v)
    if kind is float:
        return v
    if kind is int or kind is Decimal:
        return float(v)
    if kind is str and _FLOAT_TEXT.fullmatch(s := v.strip()):
        return float(s.rstrip("fFdD"))
    raise _wrong(v, "a number")


def _to_float(v: Any) -> float:
    return float32(to_double(v))


def _to_string(v: Any) -> str:
    kind = type(v)
    if kind is str:
        return v
    if kind is bool:
        return "true" if v else "false"
    if kind is int or kind is Decimal:
        return str(v)
    if kind is float:
        return java_double(v)
    if kind is dict or kind is list:
        return _JSON_TEXT.encode(v).decode()
    if isinstance(v, dt.date | dt.time):
        return v.isoformat()
    raise _wrong(v, "a STRING")


def _to_bytes(v: Any) -> bytes:
    if type(v) is str:
        return base64.b64decode(v, validate=True)
    if type(v) is bytes:
        return v
    raise _wrong(v, "base64 text")


_DATES: dict[str, dt.date] = {}  # date text -> its date: a column holds few distinct days
_KEEP_DATES = 100_000  # then it starts over


def _to_date(v: Any) -> dt.date:
    kind = type(v)
    if kind is str:
        known = _DATES.get(v)
        if known is not None:
            return known
    if kind is int:
        return EPOCH_DATE + dt.timedelta(days=v)
    if kind is str and _DATE_TEXT.fullmatch(v):
        if len(_DATES) >= _KEEP_DATES:
            _DATES.clear()
        day = _DATES[v] = dt.date.fromisoformat(v)
        return day
    if kind is dt.date:
        return v
    if kind is dt.datetime:
        return v.date()
    raise _wrong(v, "a DATE (yyyy-MM-dd or days since 1970-01-01)")


def time_from_int(v: int) -> dt.time:
    """Milliseconds, microseconds or nanoseconds of the day, told apart by size."""
    if v < 86_400_000:
        micros = v * 1000
    elif v < 86_400_000_000:
        micros = v
    else:
        micros = v // 1000
    if not 0 <= micros < 86_400_000_000:
        raise ValueError(f"{v} is not a time of day")
    return (EPOCH + dt.timedelta(microseconds=micros)).time()


def _time(dtype: DataType) -> Converter:
    keep = 10 ** (6 - min(dtype.precision or 0, 6))

    def convert(v: Any) -> dt.time:
        kind = type(v)
        if kind is int:
            t = time_from_int(v)
        elif kind is str and (m := _TIME_TEXT.fullmatch(v.strip())):
            hour, minute, second, frac = m.groups()
            micros = int((frac or "0")[:6].ljust(6, "0"))
            t = dt.time(int(hour), int(minute), int(second or 0), micros)
        elif kind is dt.time:
            t = v
        else:
            raise _wrong(v, "a TIME (HH:mm:ss[.SSS] or a time of day as a number)")
        return t.replace(microsecond=t.microsecond // keep * keep)

    return convert


def epoch_micros(v: int) -> int:
    """Epoch milliseconds, microseconds or nanoseconds, told apart by size, as microseconds."""
    size = abs(v)
    if size < 10**14:
        return v * 1000
    if size < 10**17:
        return v
    return v // 1000


def parse_timestamp(text: str, nanos: bool = False) -> dt.datetime:
    """SQL or ISO-8601 timestamp text; naive in UTC when it carries an offset. With
    ``nanos``, fraction digits 7 to 9 are kept (``nanos.with_nanos``).

    The common shapes ``yyyy-MM-dd HH:mm:ss`` with ``.SSS`` or ``.SSSSSS`` (or a
    ``T``) go to ``datetime.fromisoformat`` (C, six times the regex path); the
    separators are checked first because it accepts more (``,`` fractions, week
    dates) than Flink does.
    """
    if (
        len(text) in _ISO_LENGTHS
        and text[4] == "-"
        and text[7] == "-"
        and text[10] in " T"
        and text[13] == ":"
        and text[16] == ":"
        and (len(text) == 19 or (text[19] == "." and text[20:].isdigit()))
    ):
        try:
            return _from_iso(text)
        except ValueError:
            pass  # the checked path below names the problem
    m = _TS_TEXT.fullmatch(text.strip())
    if m is None:
        raise _wrong(text, "a timestamp (yyyy-MM-dd HH:mm:ss[.S])")
    year, month, day, hour, minute, second, frac, zone = m.groups()
    micros = int((frac or "0")[:6].ljust(6, "0"))
    out = dt.datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second or 0), micros
    )
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        out = out - offset if zone[0] == "+" else out + offset
    if nanos and frac and len(frac) > 6:
        return with_nanos(out, int(frac[6:].ljust(3, "0")))
    return out


def _timestamp(dtype: DataType) -> Converter:
    if dtype.precision is not None and dtype.precision > 6:
        return _nano_timestamp(dtype)
    keep = 10 ** (6 - min(dtype.precision if dtype.precision is not None else 6, 6))
    zone = dt.UTC if dtype.root == TIMESTAMP_LTZ else None
    base = EPOCH.replace(tzinfo=zone)
    delta = dt.timedelta

    def convert(v: Any) -> dt.datetime:
        kind = type(v)
        if kind is int:
            micros = epoch_micros(v)
            return base + delta(0, 0, micros - micros % keep)
        if kind is str:
            ts = parse_timestamp(v)
        elif kind is dt.datetime:
            ts = v if v.tzinfo is None else v.astimezone(dt.UTC).replace(tzinfo=None)
        elif kind is dt.date:
            ts = dt.datetime(v.year, v.month, v.day)
        elif isinstance(v, dt.datetime):  # with nanoseconds (a NanoTimestamp): dropped
            ts = plain(v if v.tzinfo is None else v.astimezone(dt.UTC).replace(tzinfo=None))
        else:
            raise _wrong(v, f"a {dtype.root}")
        if zone is None and ts.tzinfo is None and not ts.microsecond % keep:
            return ts
        return ts.replace(microsecond=ts.microsecond // keep * keep, tzinfo=zone)

    return convert


def _nano_timestamp(dtype: DataType) -> Converter:
    """TIMESTAMP(7..9): as ``_timestamp``, keeping the nanoseconds the type declares."""
    precision = dtype.precision or 9
    zone = dt.UTC if dtype.root == TIMESTAMP_LTZ else None
    base = EPOCH.replace(tzinfo=zone)
    delta = dt.timedelta

    def convert(v: Any) -> dt.datetime:
        kind = type(v)
        if kind is int:
            size = abs(v)
            if size < 10**17:  # milliseconds or microseconds: nothing below them
                return base + delta(0, 0, epoch_micros(v))
            micros, nanos = divmod(v, 1000)
            return truncate(with_nanos(base + delta(0, 0, micros), nanos), precision)
        if kind is str:
            ts = parse_timestamp(v, nanos=True)
        elif isinstance(v, dt.datetime):
            ts = v if v.tzinfo is None else v.astimezone(dt.UTC).replace(tzinfo=None)
        elif kind is dt.date:
            ts = dt.datetime(v.year, v.month, v.day)
        else:
            raise _wrong(v, f"a {dtype.root}")
        return truncate(ts.replace(tzinfo=zone), precision)

    return convert


def _json_container(v: Any, kind: type, what: str) -> Any:
    if type(v) is str:
        v = msgspec.json.decode(v)
    if type(v) is not kind:
        raise _wrong(v, what)
    return v


def _array(dtype: DataType, decimals: str) -> Converter:
    inner = converter(dtype.element, decimals)  # type: ignore[arg-type]
    return lambda v: [
        None if x is None else inner(x) for x in _json_container(v, list, "a JSON array")
    ]


def _map(dtype: DataType, decimals: str) -> Converter:
    key = converter(dtype.element, decimals)  # type: ignore[arg-type]
    value = converter(dtype.value or DataType(INT), decimals)
    return lambda v: {
        key(k): None if x is None else value(x)
        for k, x in _json_container(v, dict, "a JSON object").items()
    }


def _row(dtype: DataType, decimals: str) -> Converter:
    pairs = [(name, converter(t, decimals)) for name, t in dtype.fields]

    def convert(v: Any) -> tuple:
        obj = _json_container(v, dict, "a JSON object")
        return tuple(None if (x := obj.get(n)) is None else c(x) for n, c in pairs)

    return convert


_NESTED: dict[str, Callable[[DataType, str], Converter]] = {
    ARRAY: _array,
    MAP: _map,
    MULTISET: _map,
    ROW: _row,
}
_FACTORIES: dict[str, Callable[[DataType], Converter]] = {
    BOOLEAN: lambda t: _to_boolean,
    DOUBLE: lambda t: to_double,
    FLOAT: lambda t: _to_float,
    VARCHAR: lambda t: _to_string,
    CHAR: lambda t: _to_string,
    DATE: lambda t: _to_date,
    TIME: _time,
    TIMESTAMP: _timestamp,
    TIMESTAMP_LTZ: _timestamp,
    NULL: lambda t: lambda v: None,
}
