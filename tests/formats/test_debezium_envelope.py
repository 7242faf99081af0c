"""The schema envelope without 'schema-include', and logical decoding messages (op "m").

Kafka Connect's JsonConverter writes ``{"schema": .., "payload": ..}`` by default
(``schemas.enable=true``). A debezium-json source declared without
``'debezium-json.schema-include'`` reads such messages with their schema (Flink
fails: the message has no "op"); a message whose top level is anything else is a
payload-only change event.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal

import pytest

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, RawBatch
from deltaflow.formats.debezium_json import DebeziumJsonDecoder
from deltaflow.formats.errors import FormatError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

COLUMNS = [
    ("id", parse_type("INT")),
    ("amount", parse_type("DECIMAL(10, 2)")),
    ("at", parse_type("TIMESTAMP(6)")),
]
FIELDS = [
    {"type": "int32", "optional": False, "field": "id"},
    {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "field": "amount",
    },
    {
        "type": "int64",
        "optional": True,
        "name": "io.debezium.time.MicroTimestamp",
        "version": 1,
        "field": "at",
    },
]
IMAGE = {"type": "struct", "optional": True, "name": "pg.public.t.Value", "fields": FIELDS}
SCHEMA = {
    "type": "struct",
    "name": "pg.public.t.Envelope",
    "fields": [
        {**IMAGE, "field": "before"},
        {**IMAGE, "field": "after"},
        {"type": "string", "optional": False, "field": "op"},
    ],
}
AT = dt.datetime(2024, 3, 1, 12, 0, 0, 250001)
AT_MICROS = 1709294400250001  # (AT - 1970-01-01) in microseconds


def b64(unscaled: int) -> str:
    return base64.b64encode(unscaled.to_bytes(3, "big", signed=True)).decode()


def image(i: int) -> dict:
    return {"id": i, "amount": b64(-270467), "at": AT_MICROS}


def payload(op: str, i: int) -> dict:
    before = image(i) if op in ("u", "d") else None
    after = image(i) if op in ("c", "r", "u") else None
    return {"before": before, "after": after, "op": op, "ts_ms": 1}


def wrapped(op: str, i: int) -> bytes:
    return json.dumps({"schema": SCHEMA, "payload": payload(op, i)}).encode()


def decoder(**options: str) -> DebeziumJsonDecoder:
    return DebeziumJsonDecoder(FormatSpec(COLUMNS, options=options))


def batch(values: list[bytes | None], first: int = 0) -> RawBatch:
    return RawBatch("pg.public.t", 0, list(range(first, first + len(values))), values)


ROW = (Decimal("-2704.67"), AT)


def test_the_envelope_by_itself_is_read_with_its_schema() -> None:
    """Without the schema the default decimal-encoding would read "+999" as 999.00 and
    the MicroTimestamp by its size; the schema says base64 and microseconds."""
    assert b64(-270467) == "+999"
    got = decoder().decode(batch([wrapped("c", 1), wrapped("u", 1), wrapped("d", 1)]))
    assert got.kinds == [INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]
    assert got.rows == [(1, *ROW)] * 4


def test_messages_with_and_without_the_envelope_in_one_topic() -> None:
    plain = json.dumps({"before": None, "after": {"id": 2, "amount": "5.5"}, "op": "c"}).encode()
    dec = decoder()
    for values in ([wrapped("c", 1), plain, None, wrapped("r", 3)], [plain, wrapped("c", 4)]):
        got = dec.decode(batch(values))
        ids = [row[0] for row in got.rows]
        assert ids == [
            v and json.loads(v).get("payload", json.loads(v))["after"]["id"] for v in values if v
        ]
        assert all(row[1:] == ROW for row in got.rows if row[0] != 2)
        assert all(row[1:] == (Decimal("5.50"), None) for row in got.rows if row[0] == 2)


def test_a_topic_of_envelopes_runs_the_envelope_loop() -> None:
    """After a batch mostly in envelopes the decoder splits every message first (the
    compiled loop per schema), and goes back to the plain loop when they stop."""
    dec = decoder()
    first = dec.decode(batch([wrapped("c", i) for i in range(50)]))
    assert len(first.rows) == 50
    assert dec._outer is dec._envelope
    second = dec.decode(batch([wrapped("u", i) for i in range(50)], first=50))
    assert second.kinds == [UPDATE_BEFORE, UPDATE_AFTER] * 50
    assert second.rows == [(i, *ROW) for i in range(50) for _ in range(2)]
    plain = [
        json.dumps({"before": None, "after": {"id": i, "amount": 1}, "op": "c"}).encode()
        for i in range(50)
    ]
    third = dec.decode(batch(plain, first=100))
    assert third.rows == [(i, Decimal("1.00"), None) for i in range(50)]
    assert dec._outer is None


def test_an_object_with_more_than_schema_and_payload_is_no_envelope() -> None:
    value = json.dumps({"schema": SCHEMA, "payload": payload("c", 1), "x": 1}).encode()
    with pytest.raises(FormatError) as info:
        decoder().decode(batch([value], first=9))
    assert info.value.offset == 9
    assert 'no "op" field' in info.value.reason


def test_schema_include_with_a_payload_only_message_is_a_clear_error() -> None:
    plain = json.dumps(payload("c", 1)).encode()
    with pytest.raises(FormatError) as info:
        decoder(**{"schema-include": "true"}).decode(batch([wrapped("c", 0), plain], first=4))
    err = info.value
    assert (err.topic, err.offset) == ("pg.public.t", 5)
    assert "'debezium-json.schema-include' = 'true'" in err.reason
    assert "'debezium-json.schema-include' = 'false'" in str(err)


MESSAGE = {
    "op": "m",
    "ts_ms": 1700000000000,
    "source": {"connector": "postgresql", "lsn": 123},
    "message": {"prefix": "audit", "content": "aGVsbG8="},
}


@pytest.mark.parametrize("enveloped", [False, True])
def test_logical_decoding_messages_are_skipped_and_counted(enveloped: bool) -> None:
    message = (
        json.dumps({"schema": {"type": "struct"}, "payload": MESSAGE})
        if enveloped
        else json.dumps(MESSAGE)
    ).encode()
    dec = decoder()
    got = dec.decode(batch([wrapped("c", 1), message, wrapped("d", 1), message]))
    assert got.kinds == [INSERT, DELETE]
    assert dec.logical_messages == 2
    assert dec.skipped == 0
    # the same records decoded again (a source matching rows to records) count once
    dec.decode(batch([message, wrapped("c", 1), message]))
    assert dec.logical_messages == 2
    dec.decode(batch([message], first=4))
    assert dec.logical_messages == 3
