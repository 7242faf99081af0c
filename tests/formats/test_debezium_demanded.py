"""debezium-json with demanded columns: the others are None, unread and unconverted."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, RawBatch
from deltaflow.formats.debezium_json import DebeziumJsonDecoder
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

COLUMNS = [
    ("id", parse_type("BIGINT")),
    ("amount", parse_type("DECIMAL(10, 2)")),
    ("status", parse_type("STRING")),
    ("updated_at", parse_type("TIMESTAMP(3)")),
]


def decode(demanded: frozenset[str] | None, *values: bytes, **options: str):
    spec = FormatSpec(COLUMNS, options=options, demanded=demanded)
    dec = DebeziumJsonDecoder(spec)
    batch = dec.decode(RawBatch("orders", 0, list(range(len(values))), list(values)))
    return dec, list(zip(batch.kinds, batch.rows, strict=True))


UPDATE = (
    b'{"before":{"id":1,"amount":"1.5","status":"NEW","updated_at":"2026-01-01 10:00:00.123"},'
    b'"after":{"id":1,"amount":2.125,"status":"PAID","updated_at":"2026-01-01 10:00:01"},"op":"u"}'
)


def test_undemanded_columns_are_none() -> None:
    _, rows = decode(frozenset({"id", "amount"}), UPDATE)
    assert rows == [
        (UPDATE_BEFORE, (1, Decimal("1.50"), None, None)),
        (UPDATE_AFTER, (1, Decimal("2.13"), None, None)),  # HALF_UP to the scale
    ]


def test_all_demanded_reads_every_column() -> None:
    _, rows = decode(None, UPDATE)
    assert rows[1] == (
        UPDATE_AFTER,
        (1, Decimal("2.13"), "PAID", dt.datetime(2026, 1, 1, 10, 0, 1)),
    )


def test_an_undemanded_column_is_not_checked() -> None:
    # "updated_at" holds no timestamp; nobody reads it, so the message is not rejected
    value = b'{"before":null,"after":{"id":7,"amount":1,"status":"x","updated_at":[1]},"op":"c"}'
    dec, rows = decode(frozenset({"id", "status"}), value)
    assert rows == [(INSERT, (7, None, "x", None))]
    assert dec.skipped == 0


def test_checked_path_leaves_undemanded_columns_none() -> None:
    # a number in a string for BIGINT takes the checked path (Flink's coercion)
    value = b'{"before":{"id":"9","amount":"3","status":"s","updated_at":"bad"},"op":"d"}'
    _, rows = decode(frozenset({"id", "amount"}), value)
    assert rows == [(DELETE, (9, Decimal("3.00"), None, None))]


def test_schema_include_with_demanded_columns() -> None:
    value = (
        b'{"schema":{"type":"struct","fields":[]},"payload":'
        b'{"before":null,"after":{"id":2,"amount":"0.5","status":"a","updated_at":1},"op":"r"}}'
    )
    _, rows = decode(frozenset({"status"}), value, **{"schema-include": "true"})
    assert rows == [(INSERT, (None, None, "a", None))]
