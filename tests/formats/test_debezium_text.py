"""debezium-json's change writer writes the bytes msgspec writes for the envelope dict."""

from __future__ import annotations

import json
from decimal import Decimal

import msgspec
from hypothesis import given, settings
from test_json_text import schemas_and_rows

from deltaflow.formats.changelog import ADDS, DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.formats.debezium_encode import DebeziumJsonEncoder
from deltaflow.formats.json_text import compile_change_writer
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type


def envelope(names, kinds, rows) -> list[bytes]:
    """Flink's debezium-json record of each change, by msgspec over a dict."""
    write = msgspec.json.Encoder(decimal_format="number").encode
    out = []
    for kind, row in zip(kinds, rows, strict=True):
        image = dict(zip(names, row, strict=True))
        if ADDS[kind]:
            out.append(write({"before": None, "after": image, "op": "c"}))
        else:
            out.append(write({"before": image, "after": None, "op": "d"}))
    return out


@settings(max_examples=300, deadline=None)
@given(schemas_and_rows())
def test_changes_equal_the_envelope_dict(case) -> None:
    names, types, kinds, rows, _ = case
    run = compile_change_writer(names, types)
    expected = envelope(names, kinds, rows)
    assert run(kinds, rows) == expected
    for kind, record in zip(kinds, expected, strict=True):
        side = json.loads(record)["after" if ADDS[kind] else "before"]
        assert list(side) == names


def test_the_encoder_writes_each_kind_and_nulls() -> None:
    physical = [("id", parse_type("BIGINT")), ("v", parse_type("DECIMAL(10, 2)")),
                ("s", parse_type("STRING"))]  # fmt: skip
    enc = DebeziumJsonEncoder(FormatSpec(physical, [], {}))
    assert enc._changes is not None  # the text path, not the dict one
    rows = [(1, Decimal("1.50"), "a"), (None, None, None), (2, Decimal("-0.05"), 'q"'),
            (3, Decimal("0.00"), "é")]  # fmt: skip
    kinds = [INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]
    assert enc.encode(Batch(kinds, rows)) == [
        b'{"before":null,"after":{"id":1,"v":1.50,"s":"a"},"op":"c"}',
        b'{"before":{"id":null,"v":null,"s":null},"after":null,"op":"d"}',
        b'{"before":null,"after":{"id":2,"v":-0.05,"s":"q\\""},"op":"c"}',
        '{"before":{"id":3,"v":0.00,"s":"é"},"after":null,"op":"d"}'.encode(),
    ]


def test_ignored_nulls_and_other_types_keep_the_dict_writer() -> None:
    physical = [("id", parse_type("BIGINT")), ("d", parse_type("DATE"))]
    assert DebeziumJsonEncoder(FormatSpec(physical, [], {}))._changes is None
    options = {"encode.ignore-null-fields": "true"}
    assert DebeziumJsonEncoder(FormatSpec(physical[:1], [], options))._changes is None
