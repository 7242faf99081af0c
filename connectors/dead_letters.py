"""A source's dead-letter topic (``deadletter.topic``): the records its decoders refused.

Each refused record goes to the topic raw: its original key and value, with headers
naming where it came from and why it was refused (``deltaflow.topic``,
``deltaflow.partition``, ``deltaflow.offset``, ``deltaflow.reason``). A letter is
produced when its record is met and is acknowledged before a checkpoint commits the
source's position past it (the job flushes the writer with its sinks), in one of two
ways:

- at-least-once, through a producer of its own: the flush waits with the job's
  patience (``connectors/patience.py``: slices that end soon after a SIGTERM, or after
  'deltaflow.broker.timeout'); an epoch redone after a crash writes its letters again;
- inside the job's exactly-once transaction (``join_transaction``), when the job has
  one on the cluster of the dead-letter topic: a letter becomes visible to
  ``read_committed`` readers with its epoch's output, and a redone epoch's letters were
  aborted with it, so each refused record is in the topic once.
"""

from __future__ import annotations

from collections.abc import Callable

from deltaflow.connectors.kafka_sink import RecordWriter
from deltaflow.connectors.options import TableOptions

# (source topic, partition, offset, raw value, reason): as the decoders list them
Letter = tuple[str, int, int, bytes | None, str]


class DeadLetterWriter:
    """Writes one source table's dead letters; see the module docstring. Its producer is
    made at the first letter (most jobs never write one)."""

    def __init__(self, opts: TableOptions, conf: dict, topic: str) -> None:
        self.opts, self.conf, self.topic = opts, conf, topic
        self.servers = conf.get("bootstrap.servers")
        self.writer: RecordWriter | None = None
        self.written = 0  # letters produced since the last flush
        self.total = 0  # letters produced by this writer
        self.first: Letter | None = None  # the first letter since the last flush
        self.transactional = False
        self._patience_for = None
        self._producer = None
        self._begin: Callable[[], None] | None = None

    def bind_patience(self, patience_for) -> None:
        """``patience_for(bootstrap servers)``: the job's Patience for a cluster."""
        self._patience_for = patience_for
        if self.writer is not None:
            self.writer.bind_patience(patience_for)

    def join_transaction(self, txn) -> bool:
        """Write through the job's exactly-once transaction ``txn`` (``EpochTransactions``)
        from now on, when it is on this topic's cluster (the same bootstrap servers: one
        transaction cannot span clusters); False, and at-least-once, otherwise. A letter
        met before the epoch's first output opens its transaction (``txn.begin``)."""
        if self.servers != txn.request.conf.get("bootstrap.servers"):
            return False
        self._producer, self._begin, self.transactional = txn.producer, txn.begin, True
        if self.writer is not None:
            self.writer.join_transaction(txn.producer)
        return True

    def at_least_once_note(self) -> str:
        """The line a job prints when the letters cannot join its transaction."""
        return (
            f"table '{self.opts.table}': its dead letters go to brokers ({self.servers}) "
            "other than those of the exactly-once sinks' transaction, so they are written "
            "at-least-once (an epoch redone after a crash writes its letters again)"
        )

    def send(self, letters: list[Letter], key_of: dict) -> None:
        """Produces the letters (``key_of``: offset -> the record's original key)."""
        if not letters:
            return
        writer = self.writer or self._open()
        if self._begin is not None:
            self._begin()
        keys = [key_of.get(offset) for _, _, offset, _, _ in letters]
        values = [value for _, _, _, value, _ in letters]
        writer.produce(keys, values, None, list(map(_headers, letters)))
        self.first = self.first or letters[0]
        self.written += len(letters)
        self.total += len(letters)

    def _open(self) -> RecordWriter:
        self.writer = RecordWriter(self.opts, self.conf, self.topic, "at-least-once", "default")
        if self._patience_for is not None:
            self.writer.bind_patience(self._patience_for)
        if self._producer is not None:
            self.writer.join_transaction(self._producer)
        return self.writer

    def flush(self, timeout: float) -> int:
        """Waits until every letter is acknowledged (at-least-once) or in the open
        transaction's acknowledged records; returns how many were written since the
        previous flush. A wait given up raises ``ConnectorError`` naming the topic."""
        if self.writer is None:
            return 0
        self.writer.flush(timeout)
        written, self.written = self.written, 0
        return written

    def report(self, count: int) -> str:
        """The line a job prints after a checkpoint that wrote ``count`` letters."""
        line = (
            f"table '{self.opts.table}': {count} unreadable record(s) sent to dead-letter topic "
            f"'{self.topic}' ({self.total} so far)"
        )
        if self.first is not None:
            topic, partition, offset, _, reason = self.first
            line += f"; the first: topic '{topic}' partition {partition} offset {offset}: {reason[:200]}"
            self.first = None
        return line

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _headers(letter: Letter) -> dict[str, bytes]:
    topic, partition, offset, _, reason = letter
    return {
        "deltaflow.topic": str(topic).encode(),
        "deltaflow.partition": str(partition).encode(),
        "deltaflow.offset": str(offset).encode(),
        "deltaflow.reason": reason.encode("utf-8", errors="replace"),
    }
