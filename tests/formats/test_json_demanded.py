"""The json format with demanded columns: the others are None and never converted."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from deltaflow.formats.changelog import INSERT, RawBatch
from deltaflow.formats.json_format import JsonDecoder
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

COLUMNS = [
    ("id", parse_type("BIGINT")),
    ("ts", parse_type("TIMESTAMP(3)")),
    ("price", parse_type("DECIMAL(5, 2)")),
]
VALUES = [
    b'{"id": 1, "ts": "2026-01-01 10:00:00.5", "price": 1.005}',
    b'{"id": 2, "ts": "not a timestamp", "price": null}',
]


def decode(demanded: frozenset[str] | None):
    dec = JsonDecoder(FormatSpec(COLUMNS, on_error="skip", demanded=demanded))
    batch = dec.decode(RawBatch("t", 0, [0, 1], VALUES))
    return dec, batch


def test_undemanded_columns_are_none_and_not_checked() -> None:
    dec, batch = decode(frozenset({"id", "price"}))
    assert batch.kinds == [INSERT, INSERT]
    assert batch.rows == [(1, None, Decimal("1.01")), (2, None, None)]  # HALF_UP to the scale
    assert dec.skipped == 0


def test_all_columns_demanded_rejects_the_bad_timestamp() -> None:
    dec, batch = decode(None)
    assert batch.rows == [(1, dt.datetime(2026, 1, 1, 10, 0, 0, 500000), Decimal("1.01"))]
    assert dec.skipped == 1
