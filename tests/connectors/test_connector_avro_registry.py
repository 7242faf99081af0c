"""Kafka tables in the Confluent Avro formats, through a real HTTP schema registry."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from connector_helpers import read_all, spec

from deltaflow.connectors.base import create_sink, create_source
from deltaflow.connectors.kafka_client import ensure_topics
from deltaflow.formats.changelog import Batch, RowKind

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "formats"))
from registry_server import RegistryServer  # noqa: E402


@pytest.fixture
def registry():
    with RegistryServer() as server:
        yield server


@pytest.mark.parametrize("fmt", ["avro-confluent", "debezium-avro-confluent"])
def test_subject_defaults_to_topic_value_and_reads_back(broker, new_topic, registry, fmt):
    topic = new_topic("avro")
    ensure_topics(broker, [topic])
    options = {"connector": "kafka", "topic": topic, "format": fmt, f"{fmt}.url": registry.url}
    sink = create_sink(spec("out", "id INT, name STRING", options), bootstrap=broker)
    sink.write(Batch([RowKind.INSERT, RowKind.INSERT], [(1, "Alice"), (2, None)]))
    sink.flush(10)
    sink.close()
    assert list(registry.state.subjects) == [f"{topic}-value"]  # Flink's default subject
    bounded = {"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}
    source = create_source(
        spec("in", "id INT, name STRING", {**options, **bounded}), bootstrap=broker
    )
    source.open()
    got = read_all(source)
    assert got.rows == [(1, "Alice"), (2, None)]
    assert got.kinds == [RowKind.INSERT, RowKind.INSERT]


def test_avro_confluent_key_format_registers_topic_key(broker, new_topic, registry):
    topic = new_topic("avrokey")
    ensure_topics(broker, [topic])
    options = {"connector": "kafka", "topic": topic, "key.format": "avro-confluent",
               "key.avro-confluent.url": registry.url, "key.fields": "id",
               "format": "avro-confluent", "avro-confluent.url": registry.url}  # fmt: skip
    sink = create_sink(spec("out", "id INT NOT NULL, name STRING", options), bootstrap=broker)
    sink.write(Batch([RowKind.INSERT], [(7, "x")]))
    sink.flush(10)
    sink.close()
    assert sorted(registry.state.subjects) == sorted([f"{topic}-key", f"{topic}-value"])
