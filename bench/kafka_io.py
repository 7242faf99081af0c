"""Plain confluent-kafka reading and writing shared by the baselines and the loader."""

from __future__ import annotations

from collections.abc import Iterator

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BATCH = 5000
PRODUCER_TUNING = {"linger.ms": 20, "batch.size": 1_000_000, "batch.num.messages": 10_000,
                   "queue.buffering.max.messages": 1_000_000,
                   "queue.buffering.max.kbytes": 1_048_576}  # fmt: skip
# librdkafka pauses fetching a partition for fetch.queue.backoff.ms (1 s by default) once
# its prefetch queue holds queued.min.messages (100,000): a reader slower than the fetch
# then sits out the rest of the pause. deltaflow's Kafka source sets these two by default;
# the "hand-tuned" baseline and the floor use them too, the "hand" baseline does not.
TUNED_FETCH = {"fetch.queue.backoff.ms": 10, "queued.min.messages": 20_000}
FETCH: dict = {}  # consumer settings of read_values; bench.child sets TUNED_FETCH when asked


def producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "log_level": 3, **PRODUCER_TUNING})


def read_values(bootstrap: str, *topics: str) -> Iterator[list]:
    """Batches of the messages of partition 0 of ``topics``, from 0 to their end.

    The topics are complete before a run starts. A topic ends at the high watermark
    the fetch path reports (``get_watermark_offsets(cached=True)``) or at partition
    EOF, whichever is seen first: tansu's ListOffsets answers the base offset of the
    last record batch, not the end, so the fetch path is what counts, as in
    deltaflow's Kafka source. Stopping at the watermark spares the last
    ``consume`` its full timeout.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "log_level": 3,
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         **FETCH})  # fmt: skip
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
                _reached_ends(consumer, good, live)
                yield good
    finally:
        consumer.close()


def _reached_ends(consumer: Consumer, msgs: list, live: set[str]) -> None:
    """Drops from ``live`` each topic whose last message in ``msgs`` is its last one."""
    last = {m.topic(): m.offset() for m in reversed(msgs) if m.topic() in live}
    for topic, offset in last.items():
        end = consumer.get_watermark_offsets(TopicPartition(topic, 0), cached=True)[1]
        if end > 0 and offset + 1 >= end:
            live.discard(topic)


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
