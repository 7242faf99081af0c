"""Avro schemas derived from table schemas, and value conversions both ways.

The schema is the one Flink's ``AvroSchemaConverter`` derives: a record named
``org.apache.flink.avro.generated.record`` (nested rows ``record_<field>``),
nullable types as ``["null", T]`` with default null, TINYINT/SMALLINT/INT as
``int``, DECIMAL as ``bytes`` with logical type decimal, DATE ``date``, TIME
``time-millis``, TIMESTAMP(0..3) ``timestamp-millis`` and (4..6)
``timestamp-micros`` (with ``timestamp_mapping.legacy = false``: TIMESTAMP as
``local-timestamp-*`` and TIMESTAMP_LTZ as ``timestamp-*``), MAP as an Avro map
(string keys).

Reading converts whatever the writer schema produced to the column's Python
value the way Avro schema resolution against the derived reader schema would:
by field name, with int/long/float promotion, and a plain long read as the
column's timestamp unit (Debezium's ``MicroTimestamp`` into TIMESTAMP(6)).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Context, Decimal

from deltaflow.formats.codec_support import Guard
from deltaflow.formats.errors import DeltaflowError
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
    MAP,
    MULTISET,
    NULL,
    ROW,
    SMALLINT,
    STRING_ROOTS,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    TINYINT,
    DataType,
    decimal_limit,
    decimal_params,
    decimal_quantum,
)

RECORD_NAME = "org.apache.flink.avro.generated.record"
Conv = Callable[[object], object]
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DAY = dt.date(1970, 1, 1)
_WIDE = Context(prec=100)
_PRIMITIVE = {BOOLEAN: "boolean", TINYINT: "int", SMALLINT: "int", INT: "int"}
_PRIMITIVE |= {BIGINT: "long", FLOAT: "float", DOUBLE: "double"}


def row_schema(
    columns: list[tuple[str, DataType]],
    name: str = RECORD_NAME,
    legacy: bool | None = True,
) -> dict:
    """The Avro record schema for a table's columns (the top-level record is NOT NULL).

    ``legacy=None`` gives timestamps as plain longs: the same binary layout, for a
    reader that converts epoch counts itself (cheaper than fastavro's datetimes).
    """
    fields = []
    for col, dtype in columns:
        field: dict = {"name": col, "type": type_schema(dtype, f"{name}_{col}", legacy)}
        if dtype.nullable:
            field["default"] = None
        fields.append(field)
    return {"type": "record", "name": name, "fields": fields}


def type_schema(dtype: DataType, name: str, legacy: bool | None = True) -> object:
    """The Avro schema of one column type (a union with null when nullable)."""
    inner = _non_null_schema(dtype, name, legacy)
    return ["null", inner] if dtype.nullable and dtype.root != NULL else inner


def _non_null_schema(dtype: DataType, name: str, legacy: bool | None) -> object:  # noqa: C901 - type table
    root = dtype.root
    if root in _PRIMITIVE:
        return _PRIMITIVE[root]
    if root in STRING_ROOTS:
        return "string"
    if root in BINARY_ROOTS:
        return "bytes"
    if root == NULL:
        return "null"
    if root == DECIMAL:
        return {
            "type": "bytes",
            "logicalType": "decimal",
            "precision": dtype.precision,
            "scale": dtype.scale,
        }
    if root == DATE:
        return {"type": "int", "logicalType": "date"}
    if root == TIME:
        if (dtype.precision or 0) > 3:
            raise DeltaflowError(f"Avro stores TIME with at most 3 fraction digits, not {dtype}")
        return {"type": "int", "logicalType": "time-millis"}
    if root in (TIMESTAMP, TIMESTAMP_LTZ):
        logical = _timestamp_logical(dtype, bool(legacy))
        return "long" if legacy is None else {"type": "long", "logicalType": logical}
    if root == ARRAY:
        return {"type": "array", "items": type_schema(dtype.element, name, legacy)}  # type: ignore[arg-type]
    if root in (MAP, MULTISET):
        if dtype.element is None or dtype.element.root not in STRING_ROOTS:
            raise DeltaflowError(f"Avro maps have string keys; cannot store {dtype}")
        values = dtype.value if root == MAP else DataType(INT, nullable=False)
        return {"type": "map", "values": type_schema(values, name, legacy)}  # type: ignore[arg-type]
    if root == ROW:
        return row_schema(list(dtype.fields), name, legacy)
    raise DeltaflowError(f"the Avro formats do not support type {dtype}")


def _timestamp_logical(dtype: DataType, legacy: bool) -> str:
    precision = dtype.precision if dtype.precision is not None else 6
    if precision > 6:
        raise DeltaflowError(f"Avro stores timestamps with at most 6 fraction digits, not {dtype}")
    unit = "millis" if precision <= 3 else "micros"
    local = dtype.root == TIMESTAMP and not legacy
    return f"{'local-' if local else ''}timestamp-{unit}"


# ---------------------------------------------------------------------------
# writing: Python values of a column to what fastavro writes


def writer_for(dtype: DataType) -> Conv | None:
    """A converter of a non-null value for fastavro; None when it writes the value as is."""
    root = dtype.root
    if root in (TIMESTAMP, TIMESTAMP_LTZ):
        return _epoch_writer(dtype)
    if root == ROW:
        names = [n for n, _ in dtype.fields]
        convs = [writer_for(t) for _, t in dtype.fields]
        return lambda v: {
            n: x if x is None or c is None else c(x)
            for n, c, x in zip(names, convs, v, strict=True)  # type: ignore[call-overload]
        }
    if root == ARRAY:
        inner = writer_for(dtype.element)  # type: ignore[arg-type]
        if inner is None:
            return None
        return lambda v: [None if x is None else inner(x) for x in v]  # type: ignore[attr-defined]
    if root == MAP and dtype.value is not None:
        inner = writer_for(dtype.value)
        if inner is None:
            return None
        return lambda v: {k: None if x is None else inner(x) for k, x in v.items()}  # type: ignore[attr-defined]
    return None


def _epoch_writer(dtype: DataType) -> Conv:
    """A timestamp as the epoch count the Avro long holds (fastavro's own path is slower)."""
    precision = dtype.precision if dtype.precision is not None else 6
    unit = dt.timedelta(milliseconds=1) if precision <= 3 else dt.timedelta(microseconds=1)
    utc_epoch = _EPOCH.replace(tzinfo=dt.UTC)

    def write(v: object) -> int:
        return (v - (_EPOCH if v.tzinfo is None else utc_epoch)) // unit  # type: ignore[attr-defined, operator]

    return write


# ---------------------------------------------------------------------------
# reading: whatever the writer schema produced, to the column's Python value


def guard_for(dtype: DataType) -> Guard:
    """The Python type fastavro returns that is already the column's value."""
    root = dtype.root
    exact: dict[str, type] = {BOOLEAN: bool, FLOAT: float, DOUBLE: float, DATE: dt.date}
    exact |= {TIME: dt.time} | {r: str for r in STRING_ROOTS} | {r: bytes for r in BINARY_ROOTS}
    if root in (TINYINT, SMALLINT, INT, BIGINT):
        return int
    return exact.get(root)


def reader_for(dtype: DataType) -> Conv:  # noqa: C901 - a table over type roots
    """A converter of one non-null decoded Avro value to the Python value of ``dtype``."""
    root = dtype.root
    if root in (TINYINT, SMALLINT, INT, BIGINT):
        return _expect_int(dtype)
    if root in (FLOAT, DOUBLE):
        return lambda v: float(_number(v, dtype))  # type: ignore[arg-type]
    if root == BOOLEAN:
        return lambda v: _expect(v, bool, dtype)
    if root in STRING_ROOTS:
        return lambda v: v.decode() if isinstance(v, bytes) else _expect(v, str, dtype)
    if root in BINARY_ROOTS:
        return lambda v: v.encode() if isinstance(v, str) else _expect(v, bytes, dtype)
    if root == DECIMAL:
        return _decimal_reader(dtype)
    if root == DATE:
        return lambda v: _EPOCH_DAY + dt.timedelta(days=v) if type(v) is int else _date(v, dtype)
    if root == TIME:
        return _time_reader(dtype)
    if root in (TIMESTAMP, TIMESTAMP_LTZ):
        return _timestamp_reader(dtype)
    if root == ARRAY:
        inner = reader_for(dtype.element)  # type: ignore[arg-type]
        return lambda v: [None if x is None else inner(x) for x in _expect(v, list, dtype)]  # type: ignore[attr-defined]
    if root in (MAP, MULTISET):
        inner = reader_for(dtype.value or DataType(INT))
        return lambda v: {
            k: None if x is None else inner(x) for k, x in _expect(v, dict, dtype).items()
        }  # type: ignore[attr-defined]
    if root == ROW:
        pairs = [(n, reader_for(t)) for n, t in dtype.fields]
        return lambda v: tuple(
            None if (x := _expect(v, dict, dtype).get(n)) is None else c(x)  # type: ignore[attr-defined]
            for n, c in pairs
        )
    return lambda v: None


def _expect(value: object, kind: type, dtype: DataType) -> object:
    if not isinstance(value, kind):
        raise TypeError(f"Avro value {value!r:.60} cannot be read as {dtype}")
    return value


def _number(value: object, dtype: DataType) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise TypeError(f"Avro value {value!r:.60} cannot be read as {dtype}")
    return value


def _expect_int(dtype: DataType) -> Conv:
    bits = {TINYINT: 7, SMALLINT: 15, INT: 31, BIGINT: 63}[dtype.root]

    def read(v: object) -> int:
        if type(v) is not int:
            raise TypeError(f"Avro value {v!r:.60} cannot be read as {dtype}")
        if not -(2**bits) <= v < 2**bits:
            raise ValueError(f"{v} is out of range for {dtype}")
        return v

    return read


def _decimal_reader(dtype: DataType) -> Conv:
    precision, scale = decimal_params(dtype)
    quantum, limit = decimal_quantum(scale), decimal_limit(precision, scale)

    def read(v: object) -> Decimal:
        if isinstance(v, bytes):  # an undecorated decimal: two's complement unscaled value
            number = Decimal(int.from_bytes(v, "big", signed=True)).scaleb(-scale)
        elif isinstance(v, Decimal | int | str) and not isinstance(v, bool):
            number = Decimal(v)
        elif isinstance(v, float):
            number = Decimal(repr(v))
        else:
            raise TypeError(f"Avro value {v!r:.60} cannot be read as {dtype}")
        out = number.quantize(quantum, rounding=ROUND_HALF_UP, context=_WIDE)
        if abs(out) >= limit:
            raise ValueError(f"{v} does not fit {dtype}")
        return out

    return read


def _date(value: object, dtype: DataType) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    return _expect(value, dt.date, dtype)  # type: ignore[return-value]


def _time_reader(dtype: DataType) -> Conv:
    def read(v: object) -> dt.time:
        if isinstance(v, dt.time):
            return v
        if type(v) is not int:
            raise TypeError(f"Avro value {v!r:.60} cannot be read as {dtype}")
        if not 0 <= v < 86_400_000:  # e.g. a long of microseconds (Debezium's MicroTime)
            raise ValueError(f"{v} is not a time of day in milliseconds, as {dtype} reads it")
        return (_EPOCH + dt.timedelta(milliseconds=v)).time()

    return read


def _timestamp_reader(dtype: DataType) -> Conv:
    ltz = dtype.root == TIMESTAMP_LTZ
    precision = dtype.precision if dtype.precision is not None else 6
    unit = "milliseconds" if precision <= 3 else "microseconds"

    def read(v: object) -> dt.datetime:
        if type(v) is int:
            v = _EPOCH + dt.timedelta(**{unit: v})
        elif not isinstance(v, dt.datetime):
            raise TypeError(f"Avro value {v!r:.60} cannot be read as {dtype}")
        if ltz:
            return v.replace(tzinfo=dt.UTC) if v.tzinfo is None else v.astimezone(dt.UTC)
        return v if v.tzinfo is None else v.astimezone(dt.UTC).replace(tzinfo=None)

    return read
