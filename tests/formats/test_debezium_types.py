"""Column values of debezium-json: Flink's JSON conversions and Debezium logical types.

Without a schema the conversion follows the declared column type and the JSON type
of the value; with ``schema-include`` the Connect schema's logical type decides.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal

import pytest

from deltaflow.formats.changelog import INSERT, RawBatch
from deltaflow.formats.debezium_json import DebeziumJsonDecoder
from deltaflow.formats.nanos import with_nanos
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

UTC = dt.UTC


def b64(unscaled: int, size: int) -> str:
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


def decode_value(column_type: str, value: object) -> object:
    """The value of column ``v`` after decoding ``{"after": {"v": value}, "op": "c"}``."""
    spec = FormatSpec([("v", parse_type(column_type))])
    message = json.dumps({"before": None, "after": {"v": value}, "op": "c"}).encode()
    batch = DebeziumJsonDecoder(spec).decode(RawBatch("t", 0, [0], [message]))
    assert batch.kinds == [INSERT]
    return batch.rows[0][0]


def decode_with_schema(column_type: str, field_schema: dict, value: object) -> object:
    """Like ``decode_value`` but the message carries a Connect schema for ``v``."""
    image = {
        "type": "struct",
        "optional": True,
        "name": "db.inventory.t.Value",
        "fields": [{**field_schema, "field": "v"}],
    }
    schema = {
        "type": "struct",
        "name": "db.inventory.t.Envelope",
        "fields": [
            {**image, "field": "before"},
            {**image, "field": "after"},
            {"type": "string", "optional": False, "field": "op"},
        ],
    }
    payload = {"before": None, "after": {"v": value}, "op": "c"}
    message = json.dumps({"schema": schema, "payload": payload}).encode()
    spec = FormatSpec([("v", parse_type(column_type))], options={"schema-include": "true"})
    batch = DebeziumJsonDecoder(spec).decode(RawBatch("t", 0, [0], [message]))
    return batch.rows[0][0]


# --- Flink's JSON conversions, no schema -------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("DECIMAL(10, 2)", 0.875, Decimal("0.88")),  # HALF_UP, not Python's HALF_EVEN
        ("DECIMAL(10, 2)", 0.125, Decimal("0.13")),
        ("DECIMAL(10, 2)", 3.140000104904175, Decimal("3.14")),
        ("DECIMAL(10, 2)", 1, Decimal("1.00")),
        ("DECIMAL(10, 2)", "1.5", Decimal("1.50")),
        ("DECIMAL(10, 2)", -0.001, Decimal("0.00")),
        ("DECIMAL(10, 2)", 123456789.5, None),  # 9 integer digits > 10 - 2: NULL as Flink
        ("DECIMAL(4, 2)", 99.995, None),  # rounds to 100.00, 5 digits
        ("DECIMAL(4, 2)", 99.994, Decimal("99.99")),
        ("BIGINT", 9223372036854775807, 9223372036854775807),
        ("BIGINT", "42", 42),
        ("INT", 1.9, 1),  # Jackson's asInt truncates
        ("INT", -1.9, -1),
        ("TINYINT", 127, 127),
        ("DOUBLE", 3, 3.0),
        ("DOUBLE", "2.5", 2.5),
        ("DOUBLE", "NaN", float("nan")),
        ("FLOAT", 3.14, 3.140000104904175),  # a 32-bit float
        ("BOOLEAN", True, True),
        ("BOOLEAN", "TRUE", True),  # Boolean.parseBoolean
        ("BOOLEAN", "yes", False),
        ("BOOLEAN", 1, True),  # deltaflow: numbers are true when not zero
        ("BOOLEAN", 0, False),
        ("STRING", "x", "x"),
        ("STRING", 42, "42"),
        ("STRING", 1.5, "1.5"),
        ("STRING", 1e20, "1.0E20"),  # Java's Double.toString
        ("STRING", False, "false"),
        ("STRING", {"a": [1, None]}, '{"a":[1,null]}'),
        ("BYTES", "AQID", b"\x01\x02\x03"),
        ("DATE", "2020-05-13", dt.date(2020, 5, 13)),
        ("TIME(0)", "12:34:56", dt.time(12, 34, 56)),
        ("TIME(3)", "12:34:56.789123", dt.time(12, 34, 56, 789000)),
        ("TIMESTAMP(3)", "2020-05-13 09:32:10.904", dt.datetime(2020, 5, 13, 9, 32, 10, 904000)),
        (
            "TIMESTAMP(6)",
            "2020-05-13T09:32:10.123456789",
            dt.datetime(2020, 5, 13, 9, 32, 10, 123456),
        ),
        ("TIMESTAMP(0)", "2020-05-13 09:32:10.999", dt.datetime(2020, 5, 13, 9, 32, 10)),
        (
            "TIMESTAMP_LTZ(3)",
            "2020-05-13 09:32:10.904Z",
            dt.datetime(2020, 5, 13, 9, 32, 10, 904000, UTC),
        ),
        ("ARRAY<INT>", [1, None, "3"], [1, None, 3]),
        ("MAP<STRING, BIGINT>", {"a": 1, "b": None}, {"a": 1, "b": None}),
        ("ROW<a INT, b STRING>", {"a": 1, "b": "x", "c": 0}, (1, "x")),
        ("ROW<a INT, b STRING>", {"a": 1}, (1, None)),
    ],
)
def test_flink_json_conversions(column: str, value: object, expected: object) -> None:
    got = decode_value(column, value)
    if isinstance(expected, float) and expected != expected:
        assert got != got  # NaN
    else:
        assert got == expected
        assert type(got) is type(expected)


def test_decimal_reads_the_exact_json_text() -> None:
    spec = FormatSpec([("d", parse_type("DECIMAL(38, 18)"))])
    message = b'{"after": {"d": 0.123456789012345678501}, "op": "c"}'
    batch = DebeziumJsonDecoder(spec).decode(RawBatch("t", 0, [0], [message]))
    assert batch.rows == [(Decimal("0.123456789012345679"),)]


def test_decimal_keeps_exactly_the_scale() -> None:
    assert str(decode_value("DECIMAL(10, 2)", 8.1)) == "8.10"
    assert str(decode_value("DECIMAL(10, 0)", 7.5)) == "8"


def test_string_of_a_number_with_a_decimal_column_is_its_exact_text() -> None:
    spec = FormatSpec([("d", parse_type("DECIMAL(10, 2)")), ("s", parse_type("STRING"))])
    message = b'{"after": {"d": 1, "s": 0.1000000000000000055511}, "op": "c"}'
    batch = DebeziumJsonDecoder(spec).decode(RawBatch("t", 0, [0], [message]))
    assert batch.rows == [(Decimal("1.00"), "0.1000000000000000055511")]


# --- Debezium encodings without a schema ---------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("DOUBLE", 0.5, 0.5),  # decimal.handling.mode=double
        ("DECIMAL(10, 2)", "12.345", Decimal("12.35")),  # decimal.handling.mode=string
        ("DATE", 18395, dt.date(2020, 5, 13)),  # io.debezium.time.Date
        ("DATE", -1, dt.date(1969, 12, 31)),
        ("TIME(3)", 45296789, dt.time(12, 34, 56, 789000)),  # Time, ms
        ("TIME(3)", 45296789123, dt.time(12, 34, 56, 789000)),  # MicroTime, truncated
        ("TIME(3)", 45296789123456, dt.time(12, 34, 56, 789000)),  # NanoTime
        ("TIMESTAMP(3)", 1589362330904, dt.datetime(2020, 5, 13, 9, 32, 10, 904000)),
        ("TIMESTAMP(6)", 1589362330904123, dt.datetime(2020, 5, 13, 9, 32, 10, 904123)),
        ("TIMESTAMP(6)", 1589362330904123456, dt.datetime(2020, 5, 13, 9, 32, 10, 904123)),
        ("TIMESTAMP(3)", 1589362330904123, dt.datetime(2020, 5, 13, 9, 32, 10, 904000)),
        ("TIMESTAMP(3)", -1000, dt.datetime(1969, 12, 31, 23, 59, 59)),
        ("TIMESTAMP_LTZ(3)", 1589362330904, dt.datetime(2020, 5, 13, 9, 32, 10, 904000, UTC)),
        # io.debezium.time.ZonedTimestamp
        (
            "TIMESTAMP_LTZ(6)",
            "2020-05-13T09:32:10.904123Z",
            dt.datetime(2020, 5, 13, 9, 32, 10, 904123, UTC),
        ),
        (
            "TIMESTAMP_LTZ(3)",
            "2020-05-13T11:32:10+02:00",
            dt.datetime(2020, 5, 13, 9, 32, 10, tzinfo=UTC),
        ),
        ("TIMESTAMP(3)", "2020-05-13T04:32:10-05:00", dt.datetime(2020, 5, 13, 9, 32, 10)),
        # io.debezium.data.Json into structured columns
        ("ROW<a INT, b ARRAY<STRING>>", '{"a": 1, "b": ["x"]}', (1, ["x"])),
        ("MAP<STRING, STRING>", '{"k": "v"}', {"k": "v"}),
        ("STRING", '{"k": "v"}', '{"k": "v"}'),
    ],
)
def test_debezium_encodings_without_schema(column: str, value: object, expected: object) -> None:
    assert decode_value(column, value) == expected


# --- Debezium logical types from the message's schema --------------------------------------


def connect(type_: str, name: str | None = None, **params: str) -> dict:
    field: dict = {"type": type_, "optional": True}
    if name:
        field["name"] = name
        field["version"] = 1
    if params:
        field["parameters"] = params
    return field


@pytest.mark.parametrize(
    ("column", "schema", "value", "expected"),
    [
        # the schema's scale, not the column's: 12345 * 10^-3 = 12.345 -> 12.35
        (
            "DECIMAL(10, 2)",
            connect("bytes", "org.apache.kafka.connect.data.Decimal", scale="3"),
            b64(12345, 2),
            Decimal("12.35"),
        ),
        (
            "DOUBLE",
            connect("bytes", "org.apache.kafka.connect.data.Decimal", scale="2"),
            b64(810, 2),
            8.1,
        ),
        (
            "DECIMAL(20, 4)",
            connect("struct", "io.debezium.data.VariableScaleDecimal"),
            {"scale": 1, "value": b64(-5, 1)},
            Decimal("-0.5000"),
        ),
        ("DATE", connect("int32", "io.debezium.time.Date"), 18395, dt.date(2020, 5, 13)),
        ("DATE", connect("int32", "org.apache.kafka.connect.data.Date"), 0, dt.date(1970, 1, 1)),
        # a MicroTime of 45.296789 s: the size rule alone would read milliseconds
        (
            "TIME(3)",
            connect("int64", "io.debezium.time.MicroTime"),
            45296789,
            dt.time(0, 0, 45, 296000),
        ),
        (
            "TIME(3)",
            connect("int32", "io.debezium.time.Time"),
            45296789,
            dt.time(12, 34, 56, 789000),
        ),
        ("TIME(3)", connect("int64", "io.debezium.time.NanoTime"), 1500000, dt.time(0, 0, 0, 1000)),
        (
            "TIMESTAMP(6)",
            connect("int64", "io.debezium.time.MicroTimestamp"),
            1000000,
            dt.datetime(1970, 1, 1, 0, 0, 1),
        ),
        (
            "TIMESTAMP(3)",
            connect("int64", "org.apache.kafka.connect.data.Timestamp"),
            1589362330904,
            dt.datetime(2020, 5, 13, 9, 32, 10, 904000),
        ),
        (
            "TIMESTAMP(6)",
            connect("int64", "io.debezium.time.NanoTimestamp"),
            1500,
            dt.datetime(1970, 1, 1, 0, 0, 0, 1),
        ),
        (
            "TIMESTAMP_LTZ(3)",
            connect("string", "io.debezium.time.ZonedTimestamp"),
            "2020-05-13T09:32:10.904Z",
            dt.datetime(2020, 5, 13, 9, 32, 10, 904000, UTC),
        ),
        # full declared precision: nanoseconds for TIMESTAMP(9), microseconds for TIME(6)
        (
            "TIMESTAMP(9)",
            connect("int64", "io.debezium.time.NanoTimestamp"),
            1709251199999999999,  # 2024-02-29 23:59:59 UTC is 1709251199 s
            with_nanos(dt.datetime(2024, 2, 29, 23, 59, 59, 999999), 999),
        ),
        (
            "TIMESTAMP(7)",
            connect("int64", "io.debezium.time.NanoTimestamp"),
            1709251199999999999,
            with_nanos(dt.datetime(2024, 2, 29, 23, 59, 59, 999999), 900),
        ),
        (
            "TIMESTAMP_LTZ(9)",
            connect("string", "io.debezium.time.ZonedTimestamp"),
            "2024-03-01T01:59:59.123456789+02:00",
            with_nanos(dt.datetime(2024, 2, 29, 23, 59, 59, 123456, UTC), 789),
        ),
        (
            "TIMESTAMP(9)",
            connect("string", "io.debezium.time.ZonedTimestamp"),
            "2024-02-29T23:59:59Z",  # MySQL TIMESTAMP without fraction
            dt.datetime(2024, 2, 29, 23, 59, 59),
        ),
        (
            "TIME(6)",
            connect("int64", "io.debezium.time.MicroTime"),
            51787366720,  # 14:23:07 is 51787 s of the day
            dt.time(14, 23, 7, 366720),
        ),
        (
            "TIME(6)",
            connect("string", "io.debezium.time.ZonedTime"),
            "16:23:07.36672+02:00",
            dt.time(14, 23, 7, 366720),
        ),
        (
            "TIME(6)",
            connect("int64", "io.debezium.time.NanoTime"),
            86399999999999,
            dt.time(23, 59, 59, 999999),
        ),
        ("INT", connect("int32", "io.debezium.time.Year"), 2024, 2024),  # MySQL YEAR
        ("FLOAT", connect("float"), 3.4028235e38, 3.4028234663852886e38),  # the largest float
        ("ROW<a INT>", connect("string", "io.debezium.data.Json"), '{"a": 7}', (7,)),
        ("STRING", connect("string", "io.debezium.data.Json"), '{"a": 7}', '{"a": 7}'),
        ("STRING", connect("string", "io.debezium.data.Enum", allowed="x,y"), "y", "y"),
        ("BIGINT", connect("int64"), 5, 5),
    ],
)
def test_logical_types_from_schema(
    column: str, schema: dict, value: object, expected: object
) -> None:
    got = decode_with_schema(column, schema, value)
    assert got == expected
    assert type(got) is type(expected)


def test_plans_are_cached_per_schema() -> None:
    spec = FormatSpec([("v", parse_type("TIME(3)"))], options={"schema-include": "true"})
    decoder = DebeziumJsonDecoder(spec)
    micro = connect("int64", "io.debezium.time.MicroTime")
    messages = []
    for value in (1000, 2000):
        image = {"type": "struct", "fields": [{**micro, "field": "v"}]}
        schema = {"type": "struct", "fields": [{**image, "field": "after"}]}
        payload = {"after": {"v": value}, "op": "r"}
        messages.append(json.dumps({"schema": schema, "payload": payload}).encode())
    batch = decoder.decode(RawBatch("t", 0, [0, 1], messages))
    assert batch.rows == [(dt.time(0, 0, 0, 1000),), (dt.time(0, 0, 0, 2000),)]
    assert len(decoder._plans) == 1
