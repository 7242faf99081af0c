"""Kafka transactions tied to checkpoint epochs (``sink.delivery-guarantee`` = ``exactly-once``).

One transactional producer per job carries the output of every exactly-once sink,
so one checkpoint epoch is one Kafka transaction over all of them. Each
transaction also commits an *epoch marker*: through ``send_offsets_to_transaction``
the epoch number is stored as the committed offset of partition 0 of the first
sink's topic for the consumer group ``deltaflow-epochs-<transactional.id>-<token>``
(the token names the state directory, so a replay into a fresh directory with the
same prefix never mistakes an old run's marker for its own). The
broker applies a transactional offset commit only when the transaction commits,
so after a crash ``committed_epoch()`` says which epoch made it to the readers.

``start()`` calls ``init_transactions``: it fences any earlier producer with the
same transactional id (a job that was killed) and aborts its open transaction,
so that nothing of an unfinished epoch ever becomes visible to ``read_committed``
readers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import KafkaException, TopicPartition

from deltaflow.connectors import kafka_client
from deltaflow.connectors.options import TableOptions
from deltaflow.formats.errors import ConnectorError

RETRY_PAUSE_S = 0.5
MAX_TXN_TIMEOUT_MS = 900_000


@dataclass(frozen=True)
class TransactionRequest:
    """What an exactly-once sink needs from the job's transaction."""

    opts: TableOptions
    conf: dict
    prefix: str
    topic: str


def transactional_id(request: TransactionRequest) -> str:
    return f"{request.prefix}-0"


def open_transactions(
    requests: list[TransactionRequest], timeout_s: float, token: str = ""
) -> EpochTransactions | None:
    """The job's one transactional producer for ``requests`` (None when there are none).

    Every exactly-once sink of a job must write to the same Kafka cluster with the
    same client properties: one transaction can only span one cluster.
    """
    if not requests:
        return None
    first = requests[0]
    for other in requests[1:]:
        if other.conf != first.conf:
            raise other.opts.error(
                f"exactly-once sinks of one job must write to one Kafka cluster with the same "
                f"properties.* as table '{first.opts.table}', so that one transaction covers "
                "both; use the same properties or 'at-least-once' for one of them"
            )
    return EpochTransactions(first, timeout_s, token)


class EpochTransactions:
    """One Kafka transaction per checkpoint epoch; see the module docstring."""

    def __init__(self, request: TransactionRequest, timeout_s: float, token: str = "") -> None:
        self.request = request
        self.id = transactional_id(request)
        self.timeout_s = timeout_s
        timeout_ms = int(timeout_s * 1000)
        tuning = {
            "transactional.id": self.id,
            "acks": "all",
            "linger.ms": 20,
            "compression.type": "none",
            "partitioner": "murmur2_random",
            # wait out a broker outage of up to the job's broker timeout, not longer (and
            # within Kafka's default transaction.max.timeout.ms of 15 minutes)
            "message.timeout.ms": min(timeout_ms, MAX_TXN_TIMEOUT_MS),
            "transaction.timeout.ms": min(max(60_000, timeout_ms + 30_000), MAX_TXN_TIMEOUT_MS),
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
        self.producer = kafka_client.producer(request.opts, request.conf, tuning)
        self.group = f"deltaflow-epochs-{self.id}" + (f"-{token}" if token else "")
        self._marker = kafka_client.consumer(request.opts, request.conf, group=self.group)
        self.open = False

    def start(self) -> None:
        """Fence the job's earlier incarnation and abort its unfinished transaction."""
        self._call("initialise its transactions", lambda t: self.producer.init_transactions(t))

    def committed_epoch(self) -> int | None:
        """The epoch of the last committed transaction, or None before the first one."""
        marker = TopicPartition(self.request.topic, 0)
        try:
            (found,) = self._marker.committed([marker], timeout=self.timeout_s)
        except KafkaException as err:
            raise self._error("read its last committed epoch", err) from None
        return found.offset if found.offset >= 0 else None

    def begin(self) -> None:
        """Open the transaction of the next epoch (a no-op when one is open)."""
        if not self.open:
            self.producer.begin_transaction()
            self.open = True

    def commit(self, epoch: int) -> None:
        """Commit the open transaction with the marker of ``epoch``."""
        marker = [TopicPartition(self.request.topic, 0, epoch)]
        meta = self._marker.consumer_group_metadata()
        self._call(
            f"store the marker of epoch {epoch}",
            lambda t: self.producer.send_offsets_to_transaction(marker, meta, t),
        )
        self._call(f"commit epoch {epoch}", lambda t: self.producer.commit_transaction(t))
        self.open = False

    def close(self) -> None:
        """Abort an open transaction (its epoch was not checkpointed) and release the clients."""
        if self.producer is None:
            return
        if self.open:
            try:
                self.producer.abort_transaction(5)
            except KafkaException:
                pass  # the next start() aborts it
            self.open = False
        self._marker.close()
        self.producer = None  # type: ignore[assignment]

    def _call(self, what: str, action) -> None:
        """Run a transactional call, retrying retriable errors until the timeout."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            left = max(1.0, deadline - time.monotonic())
            try:
                action(left)
                return
            except KafkaException as err:
                kafka = err.args[0]
                if not kafka.retriable() or time.monotonic() >= deadline:
                    raise self._error(what, err) from None
                time.sleep(RETRY_PAUSE_S)

    def _error(self, what: str, err: KafkaException) -> ConnectorError:
        kafka = err.args[0]
        fenced = " (another job uses the same transactional id prefix)" if kafka.fatal() else ""
        return ConnectorError(
            f"table '{self.request.opts.table}': Kafka transaction '{self.id}' could not "
            f"{what}: {kafka.str()}{fenced}; restart the job, it resumes from its last "
            "checkpoint and redoes the unfinished epoch"
        )
