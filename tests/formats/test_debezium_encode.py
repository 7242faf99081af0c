"""The debezium-json encoder: one Debezium message per change, as Flink writes them."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from deltaflow.formats.changelog import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Batch,
    RawBatch,
)
from deltaflow.formats.debezium_encode import DebeziumJsonEncoder
from deltaflow.formats.debezium_json import DebeziumJsonDecoder
from deltaflow.formats.errors import DeltaflowError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

PRODUCTS = [
    ("id", parse_type("BIGINT")),
    ("name", parse_type("STRING")),
    ("weight", parse_type("DECIMAL(10, 2)")),
]


def encode(columns: list, kinds: list[int], rows: list[tuple], **options: str) -> list[bytes]:
    encoder = DebeziumJsonEncoder(FormatSpec(columns, options=options))
    return encoder.encode(Batch(kinds, rows))  # type: ignore[return-value]


def test_additions_are_creates_and_retractions_are_deletes() -> None:
    row = (111, "scooter", Decimal("5.18"))
    out = encode(PRODUCTS, [INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE], [row] * 4)
    create = b'{"before":null,"after":{"id":111,"name":"scooter","weight":5.18},"op":"c"}'
    delete = b'{"before":{"id":111,"name":"scooter","weight":5.18},"after":null,"op":"d"}'
    assert out == [create, delete, create, delete]


def test_nulls_are_written() -> None:
    out = encode(PRODUCTS, [INSERT], [(1, None, None)])
    assert out == [b'{"before":null,"after":{"id":1,"name":null,"weight":null},"op":"c"}']


def test_ignore_null_fields_leaves_out_every_null() -> None:
    out = encode(
        PRODUCTS, [INSERT, DELETE], [(1, None, None)] * 2, **{"encode.ignore-null-fields": "true"}
    )
    assert out == [b'{"after":{"id":1},"op":"c"}', b'{"before":{"id":1},"op":"d"}']


def test_decimal_keeps_its_scale_and_can_be_plain() -> None:
    assert json.loads(encode(PRODUCTS, [INSERT], [(1, "a", Decimal("8.10"))])[0])["after"] == {
        "id": 1,
        "name": "a",
        "weight": 8.1,
    }
    assert b'"weight":8.10' in encode(PRODUCTS, [INSERT], [(1, "a", Decimal("8.10"))])[0]
    tiny = [("d", parse_type("DECIMAL(20, 10)"))]
    plain = encode(
        tiny, [INSERT], [(Decimal("0.0000000100"),)], **{"encode.decimal-as-plain-number": "true"}
    )
    assert b'"d":0.0000000100' in plain[0]


TEMPORAL = [
    ("d", parse_type("DATE")),
    ("ts", parse_type("TIMESTAMP(3)")),
    ("ltz", parse_type("TIMESTAMP_LTZ(3)")),
    ("b", parse_type("BYTES")),
]
TEMPORAL_ROW = (
    dt.date(2020, 5, 13),
    dt.datetime(2020, 5, 13, 9, 32, 10, 904000),
    dt.datetime(2020, 5, 13, 9, 32, 10, tzinfo=dt.UTC),
    b"\x01\x02\x03",
)


def test_temporal_values_in_sql_format() -> None:
    after = json.loads(encode(TEMPORAL, [INSERT], [TEMPORAL_ROW])[0])["after"]
    assert after == {
        "d": "2020-05-13",
        "ts": "2020-05-13 09:32:10.904",
        "ltz": "2020-05-13 09:32:10Z",
        "b": "AQID",
    }


def test_temporal_values_in_iso_format() -> None:
    out = encode(TEMPORAL, [INSERT], [TEMPORAL_ROW], **{"timestamp-format.standard": "ISO-8601"})
    after = json.loads(out[0])["after"]
    assert after["ts"] == "2020-05-13T09:32:10.904"
    assert after["ltz"] == "2020-05-13T09:32:10Z"


def test_metadata_cannot_be_written() -> None:
    spec = FormatSpec(PRODUCTS, [("source.timestamp", parse_type("TIMESTAMP_LTZ(3)"))])
    with pytest.raises(DeltaflowError, match="cannot write metadata.*'source.timestamp'"):
        DebeziumJsonEncoder(spec)


def test_unknown_option_is_rejected() -> None:
    with pytest.raises(DeltaflowError, match="'debezium-json.encode.pretty'"):
        DebeziumJsonEncoder(FormatSpec(PRODUCTS, options={"encode.pretty": "true"}))


def test_decoding_what_was_encoded_gives_the_changes_back() -> None:
    columns = PRODUCTS + TEMPORAL + [("r", parse_type("ROW<a INT, m MAP<STRING, DOUBLE>>"))]
    row = (7, "x", Decimal("-0.50"), *TEMPORAL_ROW, (1, {"k": 2.5}))
    kinds = [INSERT, DELETE]
    values = encode(columns, kinds, [row, row])
    decoded = DebeziumJsonDecoder(FormatSpec(columns)).decode(RawBatch("t", 0, [0, 1], values))
    assert decoded.kinds == kinds
    assert decoded.rows == [row, row]
