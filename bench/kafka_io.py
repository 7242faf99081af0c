"""Plain confluent-kafka reading and writing shared by the baselines and the loader."""

from __future__ import annotations

from collections.abc import Iterator

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BATCH = 5000
PRODUCER_TUNING = {"linger.ms": 20, "batch.size": 1_000_000, "batch.num.messages": 10_000,
                   "queue.buffering.max.messages": 1_000_000,
                   "queue.buffering.max.kbytes": 1_048_576}  # fmt: skip


def producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "log_level": 3, **PRODUCER_TUNING})


def read_values(bootstrap: str, *topics: str) -> Iterator[list]:
    """Batches of the messages of partition 0 of ``topics``, from 0 to partition EOF.

    The topics are complete before a run starts, so EOF is their end. (tansu's
    ListOffsets answers the base offset of the last record batch, not the end, so
    the fetch path's EOF is what counts, as in deltaflow's Kafka source.)
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "log_level": 3,
                         "enable.auto.commit": False, "enable.partition.eof": True})  # fmt: skip
    consumer.assign([TopicPartition(t, 0, 0) for t in topics])
    live = set(topics)
    try:
        while live:
            msgs = consumer.consume(BATCH, 0.5)
            good = []
            for m in msgs:
                err = m.error()
                if err is None:
                    good.append(m)
                elif err.code() == KafkaError._PARTITION_EOF:
                    live.discard(m.topic())
                else:
                    raise RuntimeError(f"reading {m.topic()}: {err.str()}")
            if good:
                yield good
    finally:
        consumer.close()


def produce_all(prod: Producer, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    """Produces (key, value) records, waiting for room when librdkafka's queue is full."""
    produce = prod.produce
    for key, value in records:
        try:
            produce(topic, value, key)
        except BufferError:
            prod.poll(0.05)
            produce(topic, value, key)
    prod.poll(0)


def fold_upsert(bootstrap: str, topic: str) -> dict[bytes, bytes]:
    """An upsert topic read to its end and folded: key -> last value, tombstones delete."""
    table: dict[bytes, bytes] = {}
    for msgs in read_values(bootstrap, topic):
        for msg in msgs:
            if msg.value() is None:
                table.pop(msg.key(), None)
            else:
                table[msg.key()] = msg.value()
    return table


def create_topics(bootstrap: str, names: list[str]) -> None:
    """One-partition topics with explicit retention settings (Quix Streams reads them back
    to configure its repartition topics; tansu has no broker defaults to report)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    config = {"retention.ms": "-1", "retention.bytes": "-1"}
    futures = admin.create_topics([NewTopic(n, 1, 1, config=config) for n in names])
    for future in futures.values():
        future.result(30)
