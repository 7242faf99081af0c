"""Real Debezium output (PostgreSQL 15, Debezium 3.6.3, JsonConverter with and without
schemas, decimal.handling.mode precise and string): the changelog folded by primary key
is PostgreSQL's own final table. See tests/data/debezium/pg15-dbz363/README.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deltaflow.formats.changelog import DELETE, UPDATE_BEFORE, RawBatch
from deltaflow.formats.debezium_json import DebeziumJsonDecoder
from deltaflow.formats.errors import FormatError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

DATA = Path(__file__).resolve().parents[1] / "data" / "debezium" / "pg15-dbz363"
COLUMNS = [
    ("id", "BIGINT"),
    ("customer_id", "INT"),
    ("sku", "VARCHAR(20)"),
    ("amount", "DECIMAL(10, 2)"),
    ("qty", "INT"),
    ("status", "VARCHAR(20)"),
    ("placed", "TIMESTAMP(6)"),
    ("paid_at", "TIMESTAMP_LTZ(6)"),
    ("discount", "DECIMAL(5, 2)"),
]


def records(name: str) -> RawBatch:
    lines = [json.loads(line) for line in (DATA / name).open()]
    values = [None if r["value"] is None else r["value"].encode() for r in lines]
    return RawBatch("dbzfull.public.orders", 0, list(range(len(values))), values)


def decoder(**options: str) -> DebeziumJsonDecoder:
    spec = FormatSpec([(n, parse_type(t)) for n, t in COLUMNS], options=options)
    return DebeziumJsonDecoder(spec)


def folded(decoder: DebeziumJsonDecoder, raw: RawBatch) -> dict[str, dict]:
    table: dict = {}
    batch = decoder.decode(raw)
    for kind, row in zip(batch.kinds, batch.rows, strict=True):
        if kind in (UPDATE_BEFORE, DELETE):
            del table[row[0]]
        else:
            table[row[0]] = row
    return {
        str(key): {n: None if v is None else str(v) for (n, _), v in zip(COLUMNS, row, strict=True)}
        for key, row in table.items()
    }


POSTGRES = {r["id"]: r for r in map(json.loads, (DATA / "postgres.orders.jsonl").open())}


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("full-precise-noschemas.orders.jsonl", {"decimal-encoding": "base64"}),
        ("full-string-noschemas.orders.jsonl", {}),
        ("full-precise-schemas.orders.jsonl", {}),  # the envelope by itself
        ("full-precise-schemas.orders.jsonl", {"schema-include": "true"}),
        ("full-precise-schemas.orders.jsonl", {"decimal-encoding": "double"}),  # schema wins
    ],
)
def test_the_folded_changelog_is_postgres_final_table(name: str, options: dict) -> None:
    assert folded(decoder(**options), records(name)) == POSTGRES


def test_precise_decimals_read_with_the_default_encoding_stop_at_the_first_base64() -> None:
    raw = records("full-precise-noschemas.orders.jsonl")
    with pytest.raises(FormatError) as info:
        decoder().decode(raw)
    err = info.value
    assert err.offset == 1  # offset 0 holds "+999", which is also numeric text
    assert "'Jw8=' is not a number or numeric text" in err.reason
    assert "'debezium-json.decimal-encoding'" in err.reason


@pytest.mark.parametrize("combo", ["full-precise-noschemas", "full-precise-schemas"])
def test_the_logical_decoding_message_is_skipped_and_counted(combo: str) -> None:
    dec = decoder()
    assert not dec.decode(records(f"{combo}.message.jsonl")).rows
    assert dec.logical_messages == 1
