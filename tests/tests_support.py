"""Small helpers shared by integration tests."""

from __future__ import annotations

import json

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
