"""The avro format: Flink's derived schema, the Avro binary encoding, round trips."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import fastavro
import pytest

from deltaflow.formats.avro_format import make_decoder, make_encoder
from deltaflow.formats.avro_schema import row_schema
from deltaflow.formats.changelog import INSERT, Batch, RawBatch
from deltaflow.formats.errors import DeltaflowError, FormatError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

UTC = dt.UTC


def cols(text: str) -> list:
    out = []
    for part in text.split(";"):
        name, _, type_text = part.strip().partition(" ")
        out.append((name, parse_type(type_text)))
    return out


def raw(*values: bytes | None) -> RawBatch:
    return RawBatch("users", 0, list(range(7, 7 + len(values))), list(values))


ALL_TYPES = (
    "b BOOLEAN; ti TINYINT; si SMALLINT; i INT NOT NULL; bi BIGINT; f FLOAT; d DOUBLE; "
    "dec DECIMAL(10, 2); c CHAR(3); s STRING; bin BINARY(2); by BYTES; dt DATE; tm TIME(0); "
    "ts TIMESTAMP(3); ts6 TIMESTAMP(6); ltz TIMESTAMP_LTZ(3); arr ARRAY<INT>; "
    "m MAP<STRING, DOUBLE>; r ROW<x INT, y ROW<z STRING>>"
)
ALL_VALUES = (
    True, -128, 32767, -2147483648, 9223372036854775807, 1.5, -2.25, Decimal("-12345678.90"),
    "abc", "wide ☃", b"\x00\xff", b"b\x80", dt.date(1969, 12, 31), dt.time(23, 59, 59),
    dt.datetime(2020, 12, 30, 12, 13, 14, 123000), dt.datetime(1960, 1, 2, 3, 4, 5, 678901),
    dt.datetime(2020, 12, 30, 12, 13, 14, 123000, tzinfo=UTC), [1, None, 3],
    {"a": 1.5, "b": None}, (7, ("z",)),
)  # fmt: skip


def test_schema_is_derived_as_flink_does() -> None:
    schema = row_schema(
        cols("id INT NOT NULL; price DECIMAL(10, 2); ts TIMESTAMP(3); r ROW<x TIME(0)>")
    )
    assert schema == {
        "type": "record",
        "name": "org.apache.flink.avro.generated.record",
        "fields": [
            {"name": "id", "type": "int"},
            {
                "name": "price",
                "type": [
                    "null",
                    {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
                ],
                "default": None,
            },
            {
                "name": "ts",
                "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}],
                "default": None,
            },
            {
                "name": "r",
                "type": [
                    "null",
                    {
                        "type": "record",
                        "name": "org.apache.flink.avro.generated.record_r",
                        "fields": [
                            {
                                "name": "x",
                                "type": ["null", {"type": "int", "logicalType": "time-millis"}],
                                "default": None,
                            }
                        ],
                    },
                ],
                "default": None,
            },
        ],
    }


def test_timestamp_mapping() -> None:
    legacy = row_schema(cols("a TIMESTAMP(6); b TIMESTAMP_LTZ(3)"))
    assert [f["type"][1]["logicalType"] for f in legacy["fields"]] == [
        "timestamp-micros",
        "timestamp-millis",
    ]
    modern = row_schema(cols("a TIMESTAMP(6); b TIMESTAMP_LTZ(3)"), legacy=False)
    assert [f["type"][1]["logicalType"] for f in modern["fields"]] == [
        "local-timestamp-micros",
        "timestamp-millis",
    ]


def test_binary_encoding_follows_the_avro_spec() -> None:
    # int 1 zig-zags to 0x02; union branch 1 is 0x02; string "foo" is length 3 (0x06) + bytes
    enc = make_encoder("avro", FormatSpec(cols("a INT NOT NULL; b STRING; c BIGINT")))
    assert enc.encode(Batch([INSERT], [(1, "foo", None)])) == [b"\x02\x02\x06foo\x00"]
    dec = make_decoder("avro", FormatSpec(cols("a INT NOT NULL; b STRING; c BIGINT")))
    assert dec.decode(raw(b"\x02\x02\x06foo\x00")).rows == [(1, "foo", None)]


@pytest.mark.parametrize("legacy", ["true", "false"])
def test_round_trip_of_every_type(legacy: str) -> None:
    spec = FormatSpec(cols(ALL_TYPES), options={"timestamp_mapping.legacy": legacy})
    values = make_encoder("avro", spec).encode(Batch([INSERT], [ALL_VALUES]))
    batch = make_decoder("avro", spec).decode(raw(*values, None))
    assert batch.kinds == [INSERT]
    assert batch.rows == [ALL_VALUES]
    nulls = tuple(None if i != 3 else 0 for i in range(len(ALL_VALUES)))
    values = make_encoder("avro", spec).encode(Batch([INSERT], [nulls]))
    assert make_decoder("avro", spec).decode(raw(*values)).rows == [nulls]


def test_reads_records_from_another_writer_of_the_same_schema() -> None:
    columns = cols("id BIGINT; amount DECIMAL(6, 3); at TIMESTAMP(3)")
    schema = fastavro.parse_schema(row_schema(columns))
    out = io.BytesIO()
    stamp = dt.datetime(2021, 3, 4, 5, 6, 7, 890000, tzinfo=UTC)
    fastavro.schemaless_writer(out, schema, {"id": 5, "amount": Decimal("1.250"), "at": stamp})
    rows = make_decoder("avro", FormatSpec(columns)).decode(raw(out.getvalue())).rows
    assert rows == [(5, Decimal("1.250"), dt.datetime(2021, 3, 4, 5, 6, 7, 890000))]


def test_malformed_record_names_topic_partition_offset() -> None:
    dec = make_decoder("avro", FormatSpec(cols("a INT NOT NULL; b STRING")))
    with pytest.raises(FormatError, match="topic 'users' partition 0 offset 8") as info:
        dec.decode(raw(b"\x02\x02\x06foo", b"\x02\x02\x7f"))
    assert info.value.offset == 8


def test_skip_policy_counts_bad_records() -> None:
    spec = FormatSpec(cols("a INT NOT NULL; b STRING"), on_error="skip")
    dec = make_decoder("avro", spec)
    assert dec.decode(raw(b"\x02\x00", b"\x02\x02\x7f", b"\x04\x00")).rows == [(1, None), (2, None)]
    assert dec.skipped == 1


def test_unsupported_schemas_and_options_fail_with_the_reason() -> None:
    with pytest.raises(DeltaflowError, match="TIME"):
        make_encoder("avro", FormatSpec(cols("t TIME(6)")))
    with pytest.raises(DeltaflowError, match="string keys"):
        make_decoder("avro", FormatSpec(cols("m MAP<INT, STRING>")))
    with pytest.raises(DeltaflowError, match="'avro.codec'"):
        make_decoder("avro", FormatSpec(cols("a INT"), options={"codec": "snappy"}))
    with pytest.raises(DeltaflowError, match="binary"):
        make_decoder("avro", FormatSpec(cols("a INT"), options={"encoding": "json"}))


def test_a_value_that_does_not_fit_the_schema_is_a_format_error() -> None:
    enc = make_encoder("avro", FormatSpec(cols("d DECIMAL(3, 1)")))
    with pytest.raises(FormatError, match="cannot encode a row as Avro"):
        enc.encode(Batch([INSERT], [(Decimal("12345.6"),)]))
