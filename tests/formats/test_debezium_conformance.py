"""Real Debezium events decoded as Apache Flink 2.3 decodes them (tests/data/debezium)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltaflow.formats.changelog import RawBatch
from deltaflow.formats.errors import FormatError
from deltaflow.formats.printing import row_printer
from deltaflow.formats.registry import create_decoder
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

DATA = Path(__file__).resolve().parents[1] / "data" / "debezium"
EVENTS = sorted(p.name for p in DATA.glob("*.txt") if ".txt." not in p.name)
METADATA = [
    ("source.timestamp", "TIMESTAMP_LTZ(3)"),
    ("ingestion-timestamp", "TIMESTAMP_LTZ(3)"),
    ("source.database", "STRING"),
    ("source.schema", "STRING"),
    ("source.table", "STRING"),
]
VARIANTS = {
    "changelog": ("DECIMAL(10, 2)", False),
    "double.changelog": ("DOUBLE", False),
    "metadata.changelog": ("DECIMAL(10, 2)", True),
}


def options_of(events: str) -> dict[str, str]:
    """The debezium-json options of the file's .sql (format prefix stripped)."""
    sql = (DATA / f"{events}.sql").read_text()
    options = {}
    for key in ("schema-include", "ignore-parse-errors"):
        if f"'debezium-json.{key}' = 'true'" in sql:
            options[key] = "true"
    return options


def spec_for(weight: str, metadata: bool, options: dict[str, str]) -> FormatSpec:
    physical = [
        ("id", parse_type("BIGINT")),
        ("name", parse_type("STRING")),
        ("description", parse_type("STRING")),
        ("weight", parse_type(weight)),
    ]
    meta = [(k, parse_type(t)) for k, t in METADATA] if metadata else []
    return FormatSpec(physical, meta, options)


def raw_lines(events: str) -> RawBatch:
    lines = (DATA / events).read_bytes().split(b"\n")
    return RawBatch("products", 0, list(range(len(lines))), lines)


def test_every_events_file_has_its_options() -> None:
    assert len(EVENTS) == 5
    assert options_of("debezium-data-schema-include.txt") == {"schema-include": "true"}
    assert options_of("debezium-postgres-data-replica-identity.txt") == {
        "ignore-parse-errors": "true"
    }


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("events", EVENTS)
def test_decoding_matches_flink(events: str, variant: str) -> None:
    weight, metadata = VARIANTS[variant]
    spec = spec_for(weight, metadata, options_of(events))
    decoder = create_decoder("debezium-json", spec)
    batch = decoder.decode(raw_lines(events))
    show = row_printer(spec.types + [t for _, t in spec.metadata])
    got = [show(kind, row) for kind, row in zip(batch.kinds, batch.rows, strict=True)]
    expected = (DATA / f"{events}.{variant}.txt").read_text().splitlines()
    assert got == expected


def test_replica_identity_default_fails_on_line_10() -> None:
    events = "debezium-postgres-data-replica-identity.txt"
    decoder = create_decoder("debezium-json", spec_for("DECIMAL(10, 2)", False, {}))
    with pytest.raises(FormatError) as info:
        decoder.decode(raw_lines(events))
    err = info.value
    assert (err.topic, err.partition, err.offset) == ("products", 0, 9)
    assert (
        'The "before" field of UPDATE message is null, if you are using Debezium Postgres '
        "Connector, please check the Postgres table has been set REPLICA IDENTITY to FULL level."
    ) in str(err)
    assert "REPLICA IDENTITY FULL" in (err.hint or "")


def test_replica_identity_ignore_parse_errors_keeps_11_inserts() -> None:
    events = "debezium-postgres-data-replica-identity.txt"
    spec = spec_for("DECIMAL(10, 2)", False, {"ignore-parse-errors": "true"})
    decoder = create_decoder("debezium-json", spec)
    batch = decoder.decode(raw_lines(events))
    assert len(batch) == 11
    assert set(batch.kinds) == {0}
    assert decoder.skipped == 5  # 4 updates and 1 delete without "before"


def test_replica_identity_dead_letters_name_each_offset() -> None:
    events = "debezium-postgres-data-replica-identity.txt"
    spec = FormatSpec(spec_for("DOUBLE", False, {}).physical, on_error="dead-letter")
    decoder = create_decoder("debezium-json", spec)
    batch = decoder.decode(raw_lines(events))
    assert len(batch) == 11
    assert [d[2] for d in decoder.dead_letters] == [9, 10, 13, 14, 15]
    assert all(d[0] == "products" and d[1] == 0 for d in decoder.dead_letters)
    assert "DELETE message is null" in decoder.dead_letters[-1][4]
