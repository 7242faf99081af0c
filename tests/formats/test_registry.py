"""The format table: names, lazy loading, and errors for unknown formats and policies."""

from __future__ import annotations

import pytest

from deltaflow.formats import registry
from deltaflow.formats.changelog import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Batch,
    RawBatch,
)
from deltaflow.formats.errors import DeltaflowError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

SPEC = FormatSpec([("id", parse_type("BIGINT"))])


def test_format_names_are_the_flink_names() -> None:
    assert registry.format_names() == [
        "avro",
        "avro-confluent",
        "debezium-avro-confluent",
        "debezium-json",
        "json",
        "raw",
    ]


def test_unknown_format_lists_the_valid_ones() -> None:
    with pytest.raises(DeltaflowError) as info:
        registry.create_decoder("canal-json", SPEC)
    text = str(info.value)
    assert "unknown format 'canal-json'" in text
    for name in registry.format_names():
        assert f"'{name}'" in text


def test_unknown_format_for_encoder_too() -> None:
    with pytest.raises(DeltaflowError, match="unknown format 'protobuf'"):
        registry.create_encoder("protobuf", SPEC)


def test_debezium_json_decoder_from_the_table() -> None:
    decoder = registry.create_decoder("debezium-json", SPEC)
    assert decoder.changelog_mode == frozenset({INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE})
    batch = decoder.decode(RawBatch("t", 0, [5], [b'{"after":{"id":7},"op":"c"}']))
    assert batch.pairs() == [(INSERT, (7,))]


def test_debezium_json_encoder_from_the_table() -> None:
    encoder = registry.create_encoder("debezium-json", SPEC)
    assert encoder.encode(Batch([INSERT], [(7,)])) == [b'{"before":null,"after":{"id":7},"op":"c"}']


def test_factories_are_cached_after_the_first_import() -> None:
    registry.create_decoder("debezium-json", SPEC)
    make_decoder, make_encoder = registry._FACTORIES["debezium-json"]
    assert make_decoder.__module__ == "deltaflow.formats.debezium_json"
    assert make_encoder.__module__ == "deltaflow.formats.debezium_json"


def test_unknown_bad_input_policy_is_rejected() -> None:
    spec = FormatSpec(SPEC.physical, on_error="ignore")
    with pytest.raises(
        DeltaflowError, match="bad-input policy 'ignore'.*'fail', 'skip', 'dead-letter'"
    ):
        registry.create_decoder("debezium-json", spec)


def test_unknown_option_names_the_prefixed_option() -> None:
    spec = FormatSpec(SPEC.physical, options={"schema-includes": "true"})
    with pytest.raises(DeltaflowError) as info:
        registry.create_decoder("debezium-json", spec)
    text = str(info.value)
    assert "'debezium-json.schema-includes'" in text
    assert "'debezium-json.schema-include'" in text


def test_bad_boolean_option_value() -> None:
    spec = FormatSpec(SPEC.physical, options={"ignore-parse-errors": "yes"})
    with pytest.raises(DeltaflowError, match="'debezium-json.ignore-parse-errors' must be"):
        registry.create_decoder("debezium-json", spec)


def test_bad_timestamp_standard() -> None:
    spec = FormatSpec(SPEC.physical, options={"timestamp-format.standard": "RFC"})
    with pytest.raises(DeltaflowError, match="timestamp-format.standard"):
        registry.create_encoder("debezium-json", spec)


def test_every_module_in_the_table_is_under_formats() -> None:
    for name, path in registry.MODULES.items():
        assert path.startswith("deltaflow.formats."), name
