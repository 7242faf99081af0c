"""Malformed Debezium JSON: errors that name the place, and the skip / dead-letter policies."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from deltaflow.formats.changelog import (
    DELETE,
    INSERT,
    TRUNCATED,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    RawBatch,
)
from deltaflow.formats.debezium_json import DebeziumJsonDecoder
from deltaflow.formats.errors import DeltaflowError, FormatError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

COLUMNS = [("id", parse_type("BIGINT")), ("name", parse_type("STRING"))]
GOOD = b'{"before":null,"after":{"id":1,"name":"a"},"op":"c"}'


def decoder(on_error: str = "fail", **options: str) -> DebeziumJsonDecoder:
    return DebeziumJsonDecoder(FormatSpec(COLUMNS, options=options, on_error=on_error))


def batch_of(*values: bytes | None, first: int = 100) -> RawBatch:
    return RawBatch("orders", 3, list(range(first, first + len(values))), list(values))


def failure(value: bytes, **options: str) -> FormatError:
    with pytest.raises(FormatError) as info:
        decoder(**options).decode(batch_of(GOOD, value))
    err = info.value
    assert (err.topic, err.partition, err.offset) == ("orders", 3, 101)
    assert err.payload == value
    return err


def test_invalid_json() -> None:
    err = failure(b'{"before":null,"after":{"id":1')
    assert "invalid JSON" in err.reason
    assert "ignore-parse-errors" in str(err)


def test_not_an_object() -> None:
    assert "not a Debezium change event" in failure(b"[1, 2, 3]").reason
    assert "not a Debezium change event" in failure(b'"c"').reason


def test_missing_op() -> None:
    assert 'no "op" field' in failure(b'{"after":{"id":1}}').reason


def test_missing_op_in_a_schema_envelope_suggests_schema_include() -> None:
    # exactly {"schema", "payload"} is read by itself (test_debezium_envelope.py); with
    # another key it is no envelope, and the hint names the option
    err = failure(b'{"schema":{},"payload":{"after":{"id":1},"op":"c"},"extra":1}')
    assert "'debezium-json.schema-include' = 'true'" in str(err)


def test_the_schema_envelope_is_read_without_schema_include() -> None:
    value = b'{"schema":{},"payload":{"before":null,"after":{"id":1,"name":"x"},"op":"c"}}'
    got = decoder().decode(batch_of(GOOD, value))
    assert got.rows == [(1, "a"), (1, "x")]


def test_schema_include_without_payload_suggests_turning_it_off() -> None:
    with pytest.raises(FormatError) as info:
        decoder(**{"schema-include": "true"}).decode(batch_of(GOOD))
    err = info.value
    assert err.offset == 100
    assert 'no "payload" field' in err.reason
    assert "'debezium-json.schema-include' = 'false'" in str(err)


@pytest.mark.parametrize("op", ['"x"', "5", '"C"', '""'])
def test_unknown_op(op: str) -> None:
    err = failure(b'{"after":{"id":1},"op":' + op.encode() + b"}")
    assert f'unknown "op" value {op}' in err.reason


def test_truncate_with_message_before_images_names_the_option() -> None:
    """Flink rejects op t too; the remedy is the option that makes it exact, not skipping."""
    err = failure(b'{"before":null,"after":null,"op":"t"}')
    assert 'a truncate ("op" "t")' in err.reason
    assert str(err.hint).startswith("Set 'debezium-json.before-image' = 'state'")
    assert "loses their changes" in str(err.hint)


def test_null_before_image_names_the_before_image_option_first() -> None:
    err = failure(b'{"before":null,"after":{"id":1},"op":"u"}')
    assert str(err.hint).startswith("Set 'debezium-json.before-image' = 'state'")
    assert "REPLICA IDENTITY FULL" in str(err.hint)
    assert "'ignore-parse-errors') loses their changes" in str(err.hint)


@pytest.mark.parametrize("loose", [False, True])
def test_partial_images_are_handed_on_to_the_normalizer(loose: bool) -> None:
    """With before-images from state: an update without one gives its +U alone (on the
    compiled loop, and on the checked path for a value needing a coercion), a delete its
    partial image, a truncate a -D of TRUNCATED."""
    dec = decoder()
    dec.accept_partial_images()
    after = b'"1"' if loose else b"1"  # a number in a string: Flink's coercion, checked path
    values = [
        GOOD,
        b'{"before":null,"after":{"id":' + after + b',"name":"b"},"op":"u"}',
        b'{"before":{"id":1,"name":null},"after":null,"op":"d"}',
        b'{"before":null,"after":null,"op":"t"}',
    ]
    batch = dec.decode(batch_of(*values))
    assert batch.kinds == [INSERT, UPDATE_AFTER, DELETE, DELETE]
    assert batch.rows[:3] == [(1, "a"), (1, "b"), (1, None)]
    assert batch.rows[3] is TRUNCATED and dec.truncates == 1
    with pytest.raises(FormatError, match="REPLICA IDENTITY NOTHING"):
        dec.decode(batch_of(b'{"before":null,"after":null,"op":"d"}'))


def test_create_without_after() -> None:
    assert 'the "after" field of a create event is null' in failure(b'{"op":"c"}').reason


def test_update_and_delete_without_before() -> None:
    update = failure(b'{"before":null,"after":{"id":1},"op":"u"}')
    assert 'The "before" field of UPDATE message is null' in update.reason
    delete = failure(b'{"before":null,"after":null,"op":"d"}')
    assert 'The "before" field of DELETE message is null' in delete.reason


def test_image_that_is_not_an_object() -> None:
    err = failure(b'{"after":[1,"a"],"op":"c"}')
    assert 'the "after" field is not a JSON object' in err.reason


def test_wrong_value_names_column_and_value() -> None:
    err = failure(b'{"after":{"id":"abc","name":"a"},"op":"c"}')
    assert "column 'id' (BIGINT)" in err.reason
    assert "'abc'" in err.reason


def test_oversized_integer_names_column_and_value() -> None:
    err = failure(b'{"after":{"id":9223372036854775808},"op":"r"}')
    assert "column 'id' (BIGINT)" in err.reason
    assert "9223372036854775808" in err.reason


def test_oversized_numbers_in_other_columns() -> None:
    spec = FormatSpec([("n", parse_type("INT")), ("d", parse_type("DECIMAL(5, 2)"))])
    values = [
        b'{"after":{"n":2147483647,"d":123.456},"op":"c"}',
        b'{"after":{"n":1,"d":1234.5},"op":"c"}',  # 4 integer digits > 3: NULL, as Flink
        b'{"after":{"n":1,"d":1e400},"op":"c"}',
    ]
    batch = DebeziumJsonDecoder(spec).decode(batch_of(*values))
    assert batch.rows == [(2147483647, Decimal("123.46")), (1, None), (1, None)]
    with pytest.raises(FormatError, match=r"column 'n' \(INT\).*2147483648"):
        DebeziumJsonDecoder(spec).decode(batch_of(b'{"after":{"n":2147483648},"op":"c"}'))


def test_bad_timestamp_names_the_column() -> None:
    spec = FormatSpec([("ts", parse_type("TIMESTAMP(3)"))])
    with pytest.raises(FormatError, match=r"column 'ts' \(TIMESTAMP\(3\)\).*'yesterday'"):
        DebeziumJsonDecoder(spec).decode(batch_of(b'{"after":{"ts":"yesterday"},"op":"c"}'))


def test_deeply_nested_json_is_a_format_error() -> None:
    nested = b"[" * 100_000 + b"]" * 100_000
    assert "nested too deeply" in failure(b'{"after":{"name":' + nested + b'},"op":"c"}').reason
    assert "nested too deeply" in failure(b'{"after":{"id":1},"op":"c","x":' + nested + b"}").reason


def test_tombstones_are_skipped_silently() -> None:
    dec = decoder()
    batch = dec.decode(batch_of(None, b"", GOOD))
    assert batch.pairs() == [(INSERT, (1, "a"))]
    assert dec.skipped == 0


def test_skip_counts_dropped_messages_and_nulls_bad_fields() -> None:
    dec = decoder(on_error="skip")
    values = [
        b"not json",
        b'{"after":{"id":"x","name":"b"},"op":"c"}',  # bad field: NULL, as Flink
        b'{"op":"t"}',
        GOOD,
    ]
    batch = dec.decode(batch_of(*values))
    assert batch.pairs() == [(INSERT, (None, "b")), (INSERT, (1, "a"))]
    assert dec.skipped == 2
    assert dec.nulled == 1


def test_ignore_parse_errors_option_means_skip() -> None:
    dec = decoder(**{"ignore-parse-errors": "true"})
    assert dec.decode(batch_of(b"{", GOOD)).pairs() == [(INSERT, (1, "a"))]
    assert dec.skipped == 1


def test_dead_letters_keep_location_value_and_reason() -> None:
    dec = decoder(on_error="dead-letter")
    bad_field = b'{"after":{"id":[1]},"op":"c"}'
    batch = dec.decode(batch_of(GOOD, b"{]", bad_field, GOOD))
    assert len(batch) == 2
    assert [(t, p, o, v) for t, p, o, v, _ in dec.dead_letters] == [
        ("orders", 3, 101, b"{]"),
        ("orders", 3, 102, bad_field),
    ]
    assert "invalid JSON" in dec.dead_letters[0][4]
    assert "column 'id'" in dec.dead_letters[1][4]
    assert dec.skipped == 0


def test_a_failed_update_emits_nothing() -> None:
    dec = decoder(on_error="skip")
    update = b'{"before":{"id":1},"after":{"id":"x"},"op":"u"}'
    dead = decoder(on_error="dead-letter")
    assert dead.decode(batch_of(update)).pairs() == []
    assert dec.decode(batch_of(update)).pairs() == [
        (UPDATE_BEFORE, (1, None)),
        (UPDATE_AFTER, (None, None)),
    ]


def test_changes_in_order() -> None:
    values = [
        b'{"before":null,"after":{"id":1,"name":"a"},"op":"r"}',
        b'{"before":{"id":1,"name":"a"},"after":{"id":1,"name":"b"},"op":"u"}',
        b'{"before":{"id":1,"name":"b"},"after":null,"op":"d"}',
    ]
    assert decoder().decode(batch_of(*values)).pairs() == [
        (INSERT, (1, "a")),
        (UPDATE_BEFORE, (1, "a")),
        (UPDATE_AFTER, (1, "b")),
        (DELETE, (1, "b")),
    ]


def test_missing_fields_are_null_and_unknown_fields_ignored() -> None:
    batch = decoder().decode(batch_of(b'{"after":{"id":1,"extra":{"x":1}},"op":"c","ts":1}'))
    assert batch.rows == [(1, None)]


def test_metadata_values_and_unknown_key() -> None:
    meta = [
        ("source.properties", parse_type("MAP<STRING, STRING>")),
        ("ingestion-timestamp", parse_type("TIMESTAMP(3)")),
        ("schema", parse_type("STRING")),
    ]
    spec = FormatSpec(COLUMNS, meta, {"schema-include": "true"})
    message = (
        b'{"schema":{"type":"struct"},"payload":{"after":{"id":1},"op":"c","ts_ms":1000,'
        b'"source":{"db":"inventory","ts_ms":5,"snapshot":null,"txId":601}}}'
    )
    batch = DebeziumJsonDecoder(spec).decode(batch_of(message))
    props = {"db": "inventory", "ts_ms": "5", "snapshot": None, "txId": "601"}
    assert batch.rows == [(1, None, props, dt.datetime(1970, 1, 1, 0, 0, 1), '{"type":"struct"}')]
    with pytest.raises(
        DeltaflowError, match="unknown metadata key 'source.ts'.*'source.timestamp'"
    ):
        DebeziumJsonDecoder(FormatSpec(COLUMNS, [("source.ts", parse_type("STRING"))]))


def test_metadata_of_the_wrong_type_is_a_message_error() -> None:
    spec = FormatSpec(COLUMNS, [("source.timestamp", parse_type("TIMESTAMP_LTZ(3)"))])
    with pytest.raises(FormatError, match='"source.ts_ms" is not epoch milliseconds'):
        DebeziumJsonDecoder(spec).decode(batch_of(b'{"after":{},"op":"c","source":{"ts_ms":"x"}}'))
