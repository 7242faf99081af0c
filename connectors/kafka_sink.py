"""The Kafka sink: encode a batch once, produce each record, flush before a deadline."""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import replace
from itertools import repeat
from operator import length_hint

from confluent_kafka import KafkaError, KafkaException, Producer

from deltaflow.connectors import kafka_client
from deltaflow.connectors.options import TableOptions
from deltaflow.connectors.patience import Patience, WaitEnded
from deltaflow.connectors.transactions import TransactionRequest
from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.errors import ConnectorError

DELIVERY = ("at-least-once", "none", "exactly-once")
PARTITIONERS = ("default", "fixed", "round-robin")
# Throughput settings; a user's properties.* win over them.
TUNING: dict[str, object] = {
    "linger.ms": 20,
    "batch.size": 1_000_000,
    "batch.num.messages": 10_000,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "compression.type": "none",
    "partitioner": "murmur2_random",  # the Java client's hash of the key, as Flink's default
    "delivery.report.only.error": True,
}
WRITABLE_METADATA = ("timestamp", "headers")
ROOM_TIMEOUT_S = 300.0  # a full queue's wait before the job binds its broker timeout


def delivery_guarantee(opts: TableOptions) -> str:
    legacy = opts.get("sink.semantic")
    key = (
        "sink.delivery-guarantee"
        if opts.get("sink.delivery-guarantee") or not legacy
        else "sink.semantic"
    )
    value = opts.choice(key, DELIVERY + ("at_least_once", "exactly_once"), "at-least-once").replace(
        "_", "-"
    )
    if value == "exactly-once" and not opts.get("sink.transactional-id-prefix"):
        raise opts.error(
            f"option 'sink.transactional-id-prefix' is required when '{key}' = 'exactly-once' "
            "(as in Flink); set it to a prefix no other job uses"
        )
    return value


class RecordWriter:
    """Produces (key, value, timestamp, headers) records to one topic and tracks failures."""

    def __init__(
        self, opts: TableOptions, conf: dict, topic: str, guarantee: str, partitioner: str
    ):
        tuning = dict(TUNING, acks="1" if guarantee == "none" else "all")
        tuning["on_delivery"] = self._failed
        self.opts, self.topic, self.guarantee, self.conf = opts, topic, guarantee, conf
        self.shared = False  # True once producing through the job's transactional producer
        self.producer: Producer = kafka_client.producer(opts, conf, tuning)
        self.errors: list[str] = []
        self.partition_of = self._partitioner(partitioner)
        # how long a flush or a full queue waits; the job binds its stop flag and broker
        # watch (``bind_patience``) so that a SIGTERM ends the wait within seconds
        self.patience = Patience(ROOM_TIMEOUT_S)
        self.gave_up = False  # a wait ended unfinished: close drops the queue at once

    def bind_patience(self, patience_for) -> None:
        """``patience_for(bootstrap servers)``: the job's Patience for this writer's cluster."""
        self.patience = patience_for(self.conf.get("bootstrap.servers"))

    def _partitioner(self, kind: str):
        if kind == "default":
            return None
        if kind == "fixed":
            return lambda: 0
        meta = kafka_client.list_partitions(self.producer, self.opts, [self.topic], None)
        cycle = itertools.cycle([p for _, p in meta])
        return cycle.__next__

    def _failed(self, err, msg) -> None:
        if err is not None and len(self.errors) < 100:
            self.errors.append(f"{msg.topic()}: {err.str()}")

    def produce(self, keys, values, stamps=None, headers=None) -> None:
        produce, topic, choose = self.producer.produce, self.topic, self.partition_of
        start = 0
        if choose is None and stamps is None and headers is None:
            start = self._produce_plain(keys, values)
        for i in range(start, len(values)):
            value = values[i]
            extra: dict = {}
            if choose is not None:
                extra["partition"] = choose()
            if stamps is not None and stamps[i] is not None:
                extra["timestamp"] = stamps[i]
            if headers is not None and headers[i]:
                extra["headers"] = list(headers[i].items())
            key = keys[i] if keys is not None else None
            try:
                try:
                    produce(topic, value, key, **extra)
                except BufferError:
                    self._wait_for_room(value, key, extra)
            except KafkaException as err:
                raise self._refused(err, key, value) from None
        self.producer.poll(0)

    def _wait_for_room(self, value, key, extra: dict) -> None:
        """The producer queue is full: serve delivery reports in slices until the record
        fits, as long as the job's patience lasts (a stop or the broker timeout ends it)."""

        def attempt(slice_s: float) -> bool:
            self.producer.poll(slice_s)
            try:
                self.producer.produce(self.topic, value, key, **extra)
            except BufferError:
                return False
            return True

        try:
            self.patience.wait(f"find room in the queue of topic '{self.topic}'", attempt)
        except WaitEnded as ended:
            raise self._wait_error(ended) from None

    def _produce_plain(self, keys, values) -> int:
        """The common case, key (or none) and value only; returns how many were produced
        before a full queue or a refusal (the general loop takes it from there)."""
        pending = iter(values)
        records = (pending,) if keys is None else (pending, keys)
        try:  # the loop runs in C; map has taken the failed record from ``pending``
            deque(map(self.producer.produce, repeat(self.topic), *records), maxlen=0)
        except (BufferError, KafkaException):
            return len(values) - length_hint(pending) - 1
        return len(values)

    def _refused(self, err: KafkaException, key, value) -> ConnectorError:
        size = len(value or b"") + len(key or b"")
        advice = "check the properties.* options"
        if err.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE:
            advice = "raise properties.message.max.bytes and the topic's max.message.bytes"
        return ConnectorError(
            f"table '{self.opts.table}': a record of {size} bytes to topic '{self.topic}' was "
            f"refused: {err.args[0].str()}; {advice}"
        )

    def flush(self, timeout: float) -> None:
        if self.guarantee == "none":
            self.producer.poll(0)
            return
        if not self.shared and len(self.producer) == 0:
            self.raise_errors()  # nothing to wait for (not even while the brokers are away)
            return
        what = f"have the records to topic '{self.topic}' acknowledged"
        try:
            replace(self.patience, timeout_s=timeout).wait(
                what, lambda t: self.producer.flush(t) == 0
            )
        except WaitEnded as ended:
            self.raise_errors()
            raise self._wait_error(ended) from None
        self.raise_errors()

    def _wait_error(self, ended: WaitEnded) -> ConnectorError:
        self.gave_up = True
        left = "" if self.shared else f" ({len(self.producer)} record(s) not acknowledged)"
        return ConnectorError(
            f"table '{self.opts.table}': {ended}{left}; the last checkpoint is intact: start "
            "the job again once the brokers are reachable, it redoes the unfinished epoch"
        )

    def raise_errors(self) -> None:
        if self.errors:
            first, count = self.errors[0], len(self.errors)
            self.errors.clear()
            raise ConnectorError(
                f"table '{self.opts.table}': {count} record(s) could not be written, first: {first}"
            )

    def join_transaction(self, producer: Producer) -> None:
        """Produce through the job's transactional producer from now on (exactly-once);
        again with the new one after the job replaced it (the job abandons the old one)."""
        own, self.producer = self.producer, producer
        if not self.shared:
            own.purge()
            own.flush(0)
        self.shared = True

    def close(self) -> None:
        """Gives queued records a last chance (briefly under 'none'), then drops the producer."""
        if self.producer is None:
            return
        if self.shared:  # the job commits or aborts its transaction
            self.producer = None  # type: ignore[assignment]
            return
        wait = 0 if self.gave_up else 10 if self.guarantee == "at-least-once" else 1
        if self.patience.down_for() > 0:
            wait = 0  # the brokers are away: the unfinished epoch is redone on restart
        try:
            if self.producer.flush(wait):
                self.producer.purge()
        except KafkaException:
            pass
        self.producer = None  # type: ignore[assignment]


class KafkaSink:
    """``kafka`` sink: value (and key) formats over the row's columns."""

    def __init__(self, opts: TableOptions, writer: RecordWriter, encode, mode: frozenset[RowKind]):
        self.opts, self.writer, self.encode = opts, writer, encode
        self.accepted_mode = mode

    def write(self, batch: Batch) -> None:
        if batch:
            self.writer.produce(*self.encode(batch))

    def flush(self, timeout: float) -> None:
        self.writer.flush(timeout)

    def bind_patience(self, patience_for) -> None:
        self.writer.bind_patience(patience_for)

    def transaction_request(self) -> TransactionRequest | None:
        """What the job's Kafka transaction needs from this sink (exactly-once only)."""
        writer = self.writer
        if writer.guarantee != "exactly-once":
            return None
        prefix = self.opts.required("sink.transactional-id-prefix")
        return TransactionRequest(self.opts, writer.conf, prefix, writer.topic)

    def join_transaction(self, producer: Producer) -> None:
        self.writer.join_transaction(producer)

    def close(self) -> None:
        self.writer.close()
