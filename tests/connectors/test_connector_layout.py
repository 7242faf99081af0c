"""Matching decoded rows to the records they came from, with the real formats."""

from __future__ import annotations

import json

import pytest
from connector_helpers import spec

from deltaflow.connectors.base import create_source
from deltaflow.connectors.layout import decode_with_origins
from deltaflow.formats.changelog import RawBatch, RowKind
from deltaflow.formats.errors import ConnectorError
from deltaflow.formats.registry import create_decoder
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

COLS = [("id", parse_type("INT")), ("v", parse_type("STRING"))]


def _event(op, before=None, after=None) -> bytes:
    return json.dumps({"op": op, "before": before, "after": after}).encode()


def _raw(values):
    return RawBatch("t", 0, list(range(len(values))), values)


def test_update_pairs_and_tombstones_map_to_their_records():
    decoder = create_decoder("debezium-json", FormatSpec(COLS))
    values = [_event("c", after={"id": 1, "v": "a"}), None,
              _event("u", {"id": 1, "v": "a"}, {"id": 1, "v": "b"}), _event("d", before={"id": 1, "v": "b"})]  # fmt: skip
    batch, origins = decode_with_origins(decoder, _raw(values))
    assert batch.kinds == [
        RowKind.INSERT,
        RowKind.UPDATE_BEFORE,
        RowKind.UPDATE_AFTER,
        RowKind.DELETE,
    ]
    assert origins == [0, 2, 2, 3]


def test_null_value_giving_a_row_of_nulls_keeps_alignment():
    decoder = create_decoder("raw", FormatSpec([("v", parse_type("STRING"))]))
    batch, origins = decode_with_origins(decoder, _raw([None, b"x", b"y"]))
    assert batch.rows == [(None,), ("x",), ("y",)]
    assert origins == [0, 1, 2]


def test_skipped_records_fall_back_to_one_by_one():
    decoder = create_decoder("debezium-json", FormatSpec(COLS, on_error="skip"))
    values = [
        b"garbage",
        _event("u", {"id": 2, "v": "a"}, {"id": 2, "v": "b"}),
        _event("c", after={"id": 3, "v": "c"}),
    ]
    batch, origins = decode_with_origins(decoder, _raw(values))
    assert origins == [1, 1, 2]
    assert batch.rows == [(2, "a"), (2, "b"), (3, "c")]
    assert decoder.skipped == 1


def test_key_prefix_needs_except_key():
    table = spec("t", "k_id INT, v STRING", {"connector": "kafka", "topic": "x", "format": "json",
                 "key.format": "json", "key.fields": "k_id", "key.fields-prefix": "k_",
                 "properties.bootstrap.servers": "127.0.0.1:1"})  # fmt: skip
    with pytest.raises(ConnectorError, match="EXCEPT_KEY"):
        create_source(table)


def test_unknown_metadata_key_lists_valid_ones():
    table = spec("t", "v STRING", {"connector": "kafka", "topic": "x", "format": "raw",
                 "properties.bootstrap.servers": "127.0.0.1:1"}, [("m", "leader-epoch", "INT")])  # fmt: skip
    with pytest.raises(ConnectorError, match="'leader-epoch'.*offset"):
        create_source(table)
