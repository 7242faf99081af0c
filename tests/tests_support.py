"""Small helpers shared by integration tests."""

from __future__ import annotations

import json
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, TopicPartition


def fold_upsert_topic(bootstrap: str, topic: str, partition: int = 0) -> dict[str, dict]:
    """An upsert topic folded to its table: raw key text -> last value; tombstones delete."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "fold", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(topic, partition, 0)])
    table: dict[str, dict] = {}
    try:
        while True:
            msg = consumer.poll(10.0)
            assert msg is not None, f"no end of partition reached on {topic}"
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                return table
            key = msg.key().decode()
            if msg.value() is None:
                table.pop(key, None)
            else:
                table[key] = json.loads(msg.value())
    finally:
        consumer.close()


READY = "deltaflow: ready ("  # processor/launch.py: announce_ready


def wait_ready(proc, log: Path, timeout: float = 60.0) -> None:
    """Until the job process ``proc``, whose stderr goes to the file ``log``, printed its
    readiness line: its stop handlers are installed (a SIGTERM now ends it cleanly), its
    state is restored and its sources are open. Fails when the process ends first."""
    deadline = time.monotonic() + timeout
    while READY not in (text := log.read_text()):
        assert proc.poll() is None, f"the job ended ({proc.returncode}) before ready:\n{text}"
        assert time.monotonic() < deadline, f"the job was not ready in {timeout:g} s:\n{text}"
        time.sleep(0.05)  # polls the log: not a guess, the line decides
