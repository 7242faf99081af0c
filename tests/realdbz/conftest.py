"""Fixtures of the real-Debezium suite: one PostgreSQL server and one Debezium capture per
test session, its records produced once to the session broker.

- ``postgres``: a private PostgreSQL 15 cluster (``dbz_pg``), stopped and removed at the end.
- ``dbz_capture``: the folder of what real Debezium emitted for the workload
  (``dbz_run.capture``: both decimal modes, both converter settings).
- ``dbz_topics``: combo -> table -> the broker topic holding that table's records, key,
  value and headers exactly as the Kafka Connect converters wrote them.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import dbz_workload as wl
import pytest
from confluent_kafka import Producer
from dbz_pg import PostgresServer
from dbz_run import COMBOS, capture

from deltaflow.connectors.broker import ensure_topics


@pytest.fixture(scope="session")
def postgres():
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def dbz_capture(postgres, tmp_path_factory) -> Path:
    return capture(postgres, tmp_path_factory.mktemp("dbz-capture"))


@pytest.fixture(scope="session")
def dbz_topics(dbz_capture: Path, broker) -> dict[str, dict[str, str]]:
    run = uuid.uuid4().hex[:8]
    topics = {combo: {t: f"realdbz-{run}-{combo}-{t}" for t in wl.TABLES} for combo in COMBOS}
    ensure_topics(broker, [name for names in topics.values() for name in names.values()])
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 5})
    for combo, names in topics.items():
        identity, mode = COMBOS[combo]
        for table, name in names.items():
            path = dbz_capture / combo / f"{wl.topic(identity, mode, table)}.jsonl"
            for line in path.read_text().splitlines():
                record = json.loads(line)
                headers = [(k, _bytes(v)) for k, v in record["headers"]]
                producer.produce(name, key=_bytes(record["key"]), value=_bytes(record["value"]),
                                 headers=headers)  # fmt: skip
    assert producer.flush(30) == 0, "records left unsent to the broker"
    return topics


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")
