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

No call waits longer than the job lets it (``connectors/patience.py``): a wait ends
when the brokers have been unreachable for ``deltaflow.broker.timeout``, or soon
after the job is asked to stop (SIGTERM), with a ``ConnectorError``; the last
checkpoint stays intact either way and the next start settles the open epoch.
A call that the brokers' return does not bring to an end (librdkafka 2.16, see
docs/GUARANTEES.md) raises ``TransactionStuck``: the job then ``abandon``s this
producer and settles the epoch with a new one, in process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from deltaflow.connectors import kafka_client
from deltaflow.connectors.options import TableOptions
from deltaflow.connectors.patience import STUCK_AFTER_S, InFlight, Patience, StillBlocked, WaitEnded
from deltaflow.formats.errors import ConnectorError

RETRY_PAUSE_S = 0.2
ABORT_WAIT_S = 2.0
MAX_TXN_TIMEOUT_MS = 900_000
# a consumer's errors carry no retriable flag: these mean "no broker or coordinator yet"
CONSUMER_RETRY = frozenset(
    {
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._WAIT_COORD,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    }
)


# what a producer that another one with its transactional id fenced is told
FENCED = frozenset(
    {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
)


class TransactionStuck(ConnectorError):
    """A transactional call under way through an outage did not finish after the brokers
    returned: the producer must be replaced (``EpochTransactions.abandon``). ``reason``
    says what happened; the message adds what a user does when nothing recovers."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"{reason}; restart the job, it resumes from its last checkpoint and settles the epoch"
        )
        self.reason = reason

    def settled(self, pending: int | None, done: int) -> str:
        """The line saying how the job settled the epoch in process: ``pending`` is the
        epoch marked pending in state (None: none), ``done`` the epoch restored."""
        if pending is None:
            outcome = f"epoch {done + 1} was not checkpointed, redone from epoch {done}"
        elif done == pending:
            outcome = f"epoch {pending} was committed by the broker, kept"
        else:
            outcome = f"epoch {pending} was not committed, redone from epoch {done}"
        return (
            f"deltaflow: {self.reason}; replaced the transactional producer and settled "
            f"the epoch in process: {outcome}"
        )


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
    requests: list[TransactionRequest],
    timeout_s: float,
    token: str = "",
    patience: Patience | None = None,
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
    return EpochTransactions(first, timeout_s, token, patience)


class EpochTransactions:
    """One Kafka transaction per checkpoint epoch; see the module docstring."""

    def __init__(
        self,
        request: TransactionRequest,
        timeout_s: float,
        token: str = "",
        patience: Patience | None = None,
    ) -> None:
        self.request = request
        self.id = transactional_id(request)
        self.patience = patience or Patience(timeout_s)
        self.timeout_s = self.patience.timeout_s
        timeout_ms = int(self.timeout_s * 1000)
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
        self.client = kafka_client.producer(request.opts, request.conf, tuning)
        self.producer = SharedProducer(self.client, self)
        self.group = f"deltaflow-epochs-{self.id}" + (f"-{token}" if token else "")
        self._marker = kafka_client.consumer(request.opts, request.conf, group=self.group)
        self.open = False
        self._outages_before = self.patience.outages()  # outages this producer lived through

    def start(self) -> None:
        """Fence the job's earlier incarnation and abort its unfinished transaction."""
        self._call("initialise its transactions", self.client.init_transactions)

    def committed_epoch(self) -> int | None:
        """The epoch of the last committed transaction, or None before the first one."""
        marker = [TopicPartition(self.request.topic, 0)]
        found: list = []
        self._call(
            "read its last committed epoch",
            lambda t: found.extend(self._marker.committed(marker, timeout=t)),
            retry=CONSUMER_RETRY,
        )
        return found[0].offset if found[0].offset >= 0 else None

    def begin(self) -> None:
        """Open the transaction of the next epoch (a no-op when one is open)."""
        if not self.open:
            try:
                self.client.begin_transaction()
            except KafkaException as err:  # a fenced (fatal) producer refuses at once
                raise self._error("begin the transaction of the next epoch", err) from None
            self.open = True

    def flush(self) -> None:
        """Wait until every record of the open transaction is acknowledged."""
        what = "have the records of its open transaction acknowledged"
        try:
            self.patience.wait(what, lambda t: self.client.flush(t) == 0, self._outages_before)
        except StillBlocked:
            raise self._stuck(what) from None
        except WaitEnded as ended:
            raise self.wait_error(ended) from None
        except KafkaException as err:  # a fenced producer's flush raises its fatal error
            raise self._error(what, err) from None

    def commit(self, epoch: int) -> None:
        """Commit the open transaction with the marker of ``epoch`` (step 3 of the job's
        checkpoint, ``processor/job.py: Job.checkpoint``)."""
        marker = [TopicPartition(self.request.topic, 0, epoch)]
        meta = self._marker.consumer_group_metadata()
        self._call(
            f"store the marker of epoch {epoch}",
            lambda t: self.client.send_offsets_to_transaction(marker, meta, t),
        )
        self._call(f"commit epoch {epoch}", self.client.commit_transaction)
        self.open = False

    def close(self) -> None:
        """Abort an open transaction (its epoch was not checkpointed) and release the clients.

        The abort waits ``ABORT_WAIT_S`` at most and is not tried while the brokers are
        away: then the next start's ``init_transactions`` aborts the transaction."""
        if self.client is None:
            return
        if self.open and self.patience.down_for() == 0:
            try:
                self.client.abort_transaction(ABORT_WAIT_S)
            except KafkaException:
                pass
            self.open = False
        self.client.purge(in_queue=True, in_flight=True)
        self._marker.close()
        self.client = None  # type: ignore[assignment]

    def abandon(self) -> None:
        """Give up this producer without waiting for it: a helper thread keeps the clients
        (destroying a producer waits for its broker threads, one of which may never end),
        drops their queued records and closes the marker's consumer."""
        client, marker, self.client, self.open = self.client, self._marker, None, False
        if client is not None:
            threading.Thread(
                target=_keep, args=(client, marker), name="deltaflow-abandoned", daemon=True
            ).start()

    def _call(
        self, what: str, action: Callable[[float], object], retry: frozenset[int] = frozenset()
    ) -> None:
        """Run a call on a helper thread (``InFlight``: it may block past its timeout),
        waiting for it in slices and calling it again after a retriable error (a
        transactional call that timed out is one) or one of ``retry``, until the job's
        patience ends."""
        failures: list[KafkaException] = []
        flight: list[InFlight] = []

        def attempt(slice_s: float) -> bool:
            if not flight:
                flight.append(InFlight(lambda: action(self.timeout_s)))
            try:
                return flight[0].result(slice_s)
            except KafkaException as err:
                flight.clear()
                if not err.args[0].retriable() and err.args[0].code() not in retry:
                    raise self._error(what, err) from None
                failures[:] = [err]
                time.sleep(RETRY_PAUSE_S)
                return False

        try:
            self.patience.wait(what, attempt, self._outages_before)
        except StillBlocked:
            raise self._stuck(what) from None
        except WaitEnded as ended:
            raise self.wait_error(ended, failures[0] if failures else None) from None

    def wait_error(self, ended: WaitEnded, last: KafkaException | None = None) -> ConnectorError:
        cause = f" (last error: {last.args[0].str()})" if last is not None else ""
        return ConnectorError(
            f"table '{self.request.opts.table}': Kafka transaction '{self.id}': {ended}{cause}; "
            "the last checkpoint is intact: start the job again once the brokers are "
            "reachable, it redoes the unfinished epoch"
        )

    def _stuck(self, what: str) -> TransactionStuck:
        return TransactionStuck(
            f"table '{self.request.opts.table}': Kafka transaction '{self.id}' could not "
            f"{what}: the call has not returned {STUCK_AFTER_S:g} s after the brokers came back"
        )

    def _error(self, what: str, err: KafkaException) -> ConnectorError:
        kafka = err.args[0]
        where = f"table '{self.request.opts.table}': Kafka transaction '{self.id}' could not {what}"
        fenced = kafka.code() in FENCED or "fenced" in kafka.str()
        if fenced or kafka.fatal():
            cause = "" if fenced else "most likely "
            return ConnectorError(
                f"{where}: {cause}another producer with the same transactional id '{self.id}' "
                "started, which fences this one (librdkafka: "
                f"{kafka.str()}). Two jobs, or two processes of one job, use "
                f"'sink.transactional-id-prefix' = '{self.request.prefix}': give each job a "
                "prefix of its own. This job stopped; its last checkpoint is intact"
            )
        return ConnectorError(
            f"{where}: {kafka.str()}; restart the job, it resumes from its last "
            "checkpoint and redoes the unfinished epoch"
        )


def _keep(client, marker) -> None:
    """An abandoned producer's helper thread: drops its records, closes the marker's
    consumer and holds both clients until the process ends (never destroyed)."""
    client.purge(in_queue=True, in_flight=True, blocking=False)
    marker.close()
    threading.Event().wait()


class SharedProducer:
    """The transactional producer as the exactly-once sinks see it: ``produce`` is the
    client's own, ``flush`` waits in slices with the job's patience, and a wait for
    room in a full queue (``poll`` with a timeout) ends when the job is stopped."""

    def __init__(self, client, txn: EpochTransactions) -> None:
        self.produce = client.produce
        self._client, self._txn = client, txn

    def poll(self, timeout: float = 0) -> int:
        if timeout > 0 and self._txn.patience.stop.is_set():
            raise self._txn.wait_error(
                WaitEnded("the job was asked to stop while its queue was full")
            )
        return self._client.poll(timeout)

    def flush(self, timeout: float) -> int:  # noqa: ARG002 - the job's patience decides
        self._txn.flush()
        return 0

    def purge(self, *args, **kwargs) -> None:
        self._client.purge(*args, **kwargs)
