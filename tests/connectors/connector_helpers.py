"""Helpers for connector tests: producing records, reading a source to its end."""

from __future__ import annotations

import json

from confluent_kafka import Consumer, Producer, TopicPartition

from deltaflow.connectors.base import TableSpec
from deltaflow.connectors.kafka_client import ensure_topics
from deltaflow.formats.changelog import Batch
from deltaflow.formats.types import parse_type


def produce(
    bootstrap: str, topic: str, records, partition: int | None = 0, flush_each: int = 0
) -> None:
    """Produce (key, value[, timestamp_ms[, headers]]) records; ``flush_each`` > 0 flushes
    after every that many records, so they land in separate record batches."""
    if partition == 0:
        ensure_topics(bootstrap, [topic], partitions=1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, rec in enumerate(records, 1):
        key, value, *rest = rec
        extra = {} if partition is None else {"partition": partition}
        if rest:
            extra["timestamp"] = rest[0]
        if len(rest) > 1:
            extra["headers"] = rest[1]
        producer.produce(topic, _bytes(value), _bytes(key), **extra)
        if flush_each and i % flush_each == 0:
            assert producer.flush(10) == 0
    assert producer.flush(10) == 0


def _bytes(value):
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value).encode()


def read_topic(bootstrap: str, topic: str, partition: int = 0) -> list:
    """Every record of a partition: (key, value, headers) in offset order."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "test-reader",
                         "enable.partition.eof": True, "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(topic, partition, 0)])
    out = []
    try:
        while True:
            msg = consumer.poll(10)
            assert msg is not None, f"no end of partition reached on {topic}"
            if msg.error():
                assert msg.error().code() == msg.error()._PARTITION_EOF, msg.error()
                return out
            out.append((msg.key(), msg.value(), dict(msg.headers() or ())))
    finally:
        consumer.close()


def spec(name: str, columns: str, options: dict, metadata=(), primary_key=()) -> TableSpec:
    """A TableSpec from 'a INT, b STRING' and (column, key, type text) metadata."""
    physical = []
    for part in _split(columns):
        col, typ = part.strip().split(" ", 1)
        physical.append((col, parse_type(typ)))
    meta = [(c, k, parse_type(t)) for c, k, t in metadata]
    return TableSpec(name, dict(options), physical, meta, list(primary_key))


def read_all(source, limit_polls: int = 200, max_records: int = 1000) -> Batch:
    """Polls a bounded source until it is finished, then closes it."""
    out = Batch()
    for _ in range(limit_polls):
        if source.finished():
            source.close()
            return out
        out.extend(source.poll(max_records, 0.2))
    raise AssertionError("source did not finish")


def _split(columns: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in columns:
        depth += ch in "(<"
        depth -= ch in ")>"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [*parts, current]
