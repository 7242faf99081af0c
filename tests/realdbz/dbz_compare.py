"""Sink topics read back to their final table, and PostgreSQL rows, in one comparable form.

A sink column has a kind: ``int``, ``dec`` (Decimal, compared by value), ``str``,
``bool``, ``date``, ``ts`` (naive datetime) or ``ltz`` (an instant: naive datetime in
UTC). The sink's JSON is read here, by the column kinds, not by deltaflow's decoder, and
PostgreSQL's typed values (psycopg: Decimal, date, datetime) are put in the same form.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, date, datetime
from decimal import Decimal

from confluent_kafka import Consumer, KafkaError, TopicPartition

PLACEHOLDER = "__debezium_unavailable_value"


def read_topic(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """Every record of the one-partition ``topic``, in offset order."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "realdbz-reader",
                         "enable.partition.eof": True, "enable.auto.commit": False,
                         "fetch.wait.max.ms": 10})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    records = []
    try:
        while True:
            msg = consumer.poll(10.0)
            if msg is None:
                raise AssertionError(f"no end of partition reading {topic}")
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return records
                raise AssertionError(str(msg.error()))
            records.append((msg.key(), msg.value()))
    finally:
        consumer.close()


def sink_value(kind: str, value):
    """A value of the sink's JSON as the column kind says."""
    if value is None:
        return None
    if kind == "dec":
        return Decimal(str(value))
    if kind == "date":
        return date.fromisoformat(value)
    if kind in ("ts", "ltz"):
        text = value.replace("T", " ").removesuffix("Z")
        return datetime.fromisoformat(text).replace(tzinfo=None)
    return value


def pg_value(kind: str, value):
    """A PostgreSQL value (psycopg's Python type) in the form ``sink_value`` gives."""
    if value is None:
        return None
    if kind == "dec":
        return Decimal(value)
    if kind == "ltz":
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _row(columns: list[tuple[str, str]], image: dict) -> tuple:
    return tuple(sink_value(kind, image[name]) for name, kind in columns)


def upsert_table(records: list, columns: list[tuple[str, str]]) -> Counter:
    """An upsert-kafka sink (json key and value) folded by key: the last row of each key."""
    table: dict[bytes, tuple] = {}
    for key, value in records:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = _row(columns, json.loads(value, parse_float=Decimal))
    return Counter(table.values())


def retract_table(records: list, columns: list[tuple[str, str]]) -> Counter:
    """A debezium-json sink applied as a changelog: +after, -before; the final multiset.
    A row count going below zero fails (a retraction of a row never written)."""
    table: Counter = Counter()
    for _, value in records:
        if value is None:
            continue
        message = json.loads(value, parse_float=Decimal)
        if message.get("before") is not None:
            row = _row(columns, message["before"])
            assert table[row] > 0, f"the sink retracts {row}, which it never wrote"
            table[row] -= 1
        if message.get("after") is not None:
            table[_row(columns, message["after"])] += 1
    return +table


def expected_table(rows: list[tuple], columns: list[tuple[str, str]]) -> Counter:
    kinds = [kind for _, kind in columns]
    return Counter(tuple(pg_value(k, v) for k, v in zip(kinds, row, strict=True)) for row in rows)


def placeholders(records: list) -> int:
    """How many sink records carry Debezium's placeholder anywhere in key or value."""
    marker = PLACEHOLDER.encode()
    return sum(marker in (k or b"") or marker in (v or b"") for k, v in records)


def difference(ours: Counter, theirs: Counter) -> str:
    """The rows only in one of two tables, for an assertion message."""
    extra, missing = ours - theirs, theirs - ours
    show = lambda rows: "\n".join(f"  {r}" for r in sorted(rows.elements(), key=repr))  # noqa: E731
    return f"rows only in deltaflow's table:\n{show(extra)}\nrows only in PostgreSQL's:\n{show(missing)}"
