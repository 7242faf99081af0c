"""Debezium logical types, read from the Kafka Connect schema a message carries.

With ``schema-include`` every message holds the Connect schema of its row images:
each field has a ``type`` (``int32``, ``int64``, ``string``, ``bytes``, ...) and, for
logical types, a ``name`` and ``parameters``. Flink ignores that schema; deltaflow
uses it to read each value in its exact encoding, then converts the result to the
column's type with the rules of ``debezium_values``:

| logical name                                 | JSON value                 | read as            |
|----------------------------------------------|----------------------------|--------------------|
| org.apache.kafka.connect.data.Decimal        | base64 unscaled, ``scale`` | Decimal            |
| io.debezium.data.VariableScaleDecimal        | {"scale": s, "value": b64} | Decimal            |
| io.debezium.time.Date, connect Date          | days since epoch           | date               |
| io.debezium.time.Time, connect Time          | milliseconds of the day    | time               |
| io.debezium.time.MicroTime / NanoTime        | micro / nanoseconds of day | time               |
| io.debezium.time.Timestamp, connect Timestamp| epoch milliseconds         | naive datetime     |
| io.debezium.time.MicroTimestamp / Nano...    | epoch micro / nanoseconds  | naive datetime (+ nanos) |
| io.debezium.time.ZonedTimestamp              | ISO text with offset       | datetime in UTC    |
| io.debezium.time.ZonedTime                   | ISO time with offset       | time in UTC (TIME) |
| io.debezium.data.Json                        | JSON text                  | parsed for ARRAY/MAP/ROW columns |

Decimals under ``decimal.handling.mode`` ``double`` or ``string`` have no logical
name: the field's Connect type (``double``, ``string``) says how a DECIMAL column
reads them (``decimal_encodings``), whatever the table's ``decimal-encoding``.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import msgspec

from deltaflow.formats.debezium_decimals import (
    DEFAULT,
    DOUBLE,
    LOGICAL,
    STRING,
    unscaled,
    variable_scale,
)
from deltaflow.formats.debezium_values import (
    EPOCH,
    EPOCH_DATE,
    Converter,
    converter,
    parse_timestamp,
)
from deltaflow.formats.nanos import with_nanos
from deltaflow.formats.types import ARRAY, DECIMAL, MAP, MULTISET, ROW, TIME, DataType

CONNECT_DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
JSON = "io.debezium.data.Json"

_DAYS = ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date")
# logical name -> microseconds per unit (a negative divisor: nanoseconds)
_TIME_UNITS = {
    "io.debezium.time.Time": 1000,
    "org.apache.kafka.connect.data.Time": 1000,
    "io.debezium.time.MicroTime": 1,
    "io.debezium.time.NanoTime": -1000,
}
_TIMESTAMP_UNITS = {
    "io.debezium.time.Timestamp": 1000,
    "org.apache.kafka.connect.data.Timestamp": 1000,
    "io.debezium.time.MicroTimestamp": 1,
    "io.debezium.time.NanoTimestamp": -1000,
}
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
ZONED_TIME = "io.debezium.time.ZonedTime"
_ZONED_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d(?::?\d\d)?)")

Logical = tuple[str, dict[str, Any]]


def _micros(v: Any, unit: int) -> int:
    if type(v) is not int:
        raise ValueError(f"{v!r} is not an integer count of time units")
    return v * unit if unit > 0 else v // -unit


def _time_of_day(unit: int) -> Converter:
    def read(v: Any) -> dt.time:
        micros = _micros(v, unit)
        if not 0 <= micros < 86_400_000_000:
            raise ValueError(f"{v} is not a time of day")
        return (EPOCH + dt.timedelta(microseconds=micros)).time()

    return read


def _instant(unit: int) -> Converter:
    if unit < 0:  # nanoseconds: those below the microsecond kept (nanos.with_nanos)
        return _nano_instant
    return lambda v: EPOCH + dt.timedelta(microseconds=_micros(v, unit))


def _nano_instant(v: Any) -> dt.datetime:
    if type(v) is not int:
        raise ValueError(f"{v!r} is not an integer count of time units")
    micros, nanos = divmod(v, 1000)
    return with_nanos(EPOCH + dt.timedelta(microseconds=micros), nanos)


def _days(v: Any) -> dt.date:
    if type(v) is not int:
        raise ValueError(f"{v!r} is not a number of days")
    return EPOCH_DATE + dt.timedelta(days=v)


def _zoned(v: Any) -> dt.datetime:
    if type(v) is not str:
        raise ValueError(f"{v!r} is not a zoned timestamp text")
    return parse_timestamp(v, nanos=True).replace(tzinfo=dt.UTC)


def _zoned_time(v: Any) -> dt.time:
    """``io.debezium.time.ZonedTime`` (``timetz``): ``HH:mm:ss[.f]`` with an offset, as
    the time of day in UTC (a TIME column has no zone)."""
    m = _ZONED_TIME.fullmatch(v) if type(v) is str else None
    if m is None:
        raise ValueError(f"{v!r} is not a zoned time text (HH:mm:ss[.f]Z)")
    hour, minute, second, frac, zone = m.groups()
    micros = int((frac or "0")[:6].ljust(6, "0"))
    at = dt.datetime(2000, 1, 1, int(hour), int(minute), int(second), micros)
    if zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        at = at - offset if zone[0] == "+" else at + offset
    return at.time()


def _connect_decimal(params: dict[str, Any]) -> Converter:
    scale = params.get("scale", 0)  # Connect writes parameters as strings: "2"
    return lambda v: unscaled(v, int(scale)) if type(v) is str else v


def logical_step(name: str, params: dict[str, Any], dtype: DataType) -> Converter | None:
    """The reader of one value encoded as logical type ``name``; None if none is needed."""
    if name == CONNECT_DECIMAL:
        return _connect_decimal(params)
    if name == VARIABLE_SCALE_DECIMAL:
        return variable_scale
    if name in _DAYS:
        return _days
    if name in _TIME_UNITS:
        return _time_of_day(_TIME_UNITS[name])
    if name in _TIMESTAMP_UNITS:
        return _instant(_TIMESTAMP_UNITS[name])
    if name == ZONED_TIMESTAMP:
        return _zoned
    if name == ZONED_TIME and dtype.root == TIME:
        return _zoned_time
    if name == JSON and dtype.root in (ARRAY, MAP, MULTISET, ROW):
        return msgspec.json.decode
    return None


def column_converter(
    dtype: DataType, logical: Logical | None, decimals: str = DEFAULT
) -> Converter:
    """The converter of a column whose values may carry a Debezium logical type;
    ``decimals``: how its DECIMAL values are encoded when no logical type says."""
    base = converter(dtype, decimals)
    step = logical_step(logical[0], logical[1], dtype) if logical else None
    if step is None:
        return base
    return lambda v: base(step(v))


def image_fields(schema: Any) -> dict[str, dict]:
    """Field name -> Connect field schema of the row images in a Connect schema.

    Reads the ``after`` struct (or ``before``); a schema of another shape has no
    fields to offer and gives an empty mapping.
    """
    if type(schema) is not dict or type(schema.get("fields")) is not list:
        return {}
    images = {
        f.get("field"): f for f in schema["fields"] if type(f) is dict and f.get("type") == "struct"
    }
    image = images.get("after") or images.get("before")
    if image is None or type(image.get("fields")) is not list:
        return {}
    return {str(f.get("field")): f for f in image["fields"] if type(f) is dict}


def logical_fields(fields: dict[str, dict]) -> dict[str, Logical]:
    """Field name -> (logical name, parameters) of the fields that have a logical name."""
    out: dict[str, Logical] = {}
    for name, field in fields.items():
        if type(field.get("name")) is str:
            params = field.get("parameters")
            out[name] = (field["name"], params if type(params) is dict else {})
    return out


_PLAIN_DECIMALS = {"string": STRING, "double": DOUBLE, "float": DOUBLE}


def decimal_encodings(
    fields: dict[str, dict], columns: list[tuple[str, DataType]], default: str
) -> dict[str, str]:
    """Column name -> decimal encoding of the DECIMAL columns, as the schema says:
    a logical decimal is read by its step (``LOGICAL``), a ``string`` or ``double``
    field by the matching encoding; a column the schema does not describe keeps the
    table's ``default``."""
    out: dict[str, str] = {}
    for name, dtype in columns:
        field = fields.get(name)
        if dtype.root != DECIMAL or field is None:
            continue
        if field.get("name") in (CONNECT_DECIMAL, VARIABLE_SCALE_DECIMAL):
            out[name] = LOGICAL
        else:
            out[name] = _PLAIN_DECIMALS.get(field.get("type"), default)  # type: ignore[arg-type]
    return out
