"""What a running job reads: its open sources and what hangs on them.

``Inputs`` holds the sources of the plan's scans, the sources feeding lookup-join
mirrors, the key-presence checks, the sources' dead-letter writers and the
per-partition watermarks; they are opened together at a checkpoint's positions
(``processor/job.py``) and closed together (at the end, or before a stuck
transaction is settled in process)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from deltaflow.connectors.base import Source
from deltaflow.connectors.dead_letters import DeadLetterWriter
from deltaflow.connectors.transactions import EpochTransactions, Patience
from deltaflow.formats.prefilter import PreFilter
from deltaflow.processor.job_tables import LOOKUP_PREFIX
from deltaflow.processor.plan import TableSourceScan
from deltaflow.processor.runtime import key_presence, normalize_source
from deltaflow.processor.runtime.key_presence import KeyCheck
from deltaflow.state.backend import StateBackend

if TYPE_CHECKING:  # imported when the job starts (``explain`` never needs it)
    from deltaflow.processor.runtime.graph import Graph


@dataclass
class Inputs:
    """The open sources of a job, keyed as the checkpoint's positions are."""

    sources: dict[int, Source] = field(default_factory=dict)  # scan node_id -> its source
    lookups: dict[str, Source] = field(default_factory=dict)  # looked-up table -> its source
    presence: dict[str, KeyCheck] = field(default_factory=dict)  # table -> its key check
    dead_letters: list[DeadLetterWriter] = field(default_factory=list)  # flushed with sinks
    partitioned: dict = field(default_factory=dict)  # scan -> its per-partition watermarks
    _report: key_presence.PresenceReport | None = None

    def positions(self) -> dict[str, object]:
        """Every source's position, as a checkpoint stores them (step 2)."""
        offsets: dict[str, object] = {str(k): s.position() for k, s in self.sources.items()}
        offsets.update({LOOKUP_PREFIX + t: s.position() for t, s in self.lookups.items()})
        return offsets

    def route_dead_letters(
        self, source: Source, patience_for: Callable[[str | None], Patience],
        txn: EpochTransactions | None,
    ) -> None:  # fmt: skip
        """A source's dead letters wait for the brokers as the sinks do, and go into the
        job's exactly-once transaction when it is on their cluster (GUARANTEES.md)."""
        writer = source.dead_letter_writer
        if writer is not None:
            writer.bind_patience(patience_for)
            self.dead_letters.append(writer)
            if txn is not None and not writer.join_transaction(txn):
                print(f"deltaflow: {writer.at_least_once_note()}", file=sys.stderr)

    def open_lookup(
        self, table: str, source: Source, position: dict | None, graph: Graph,
        records: int, timeout_s: float,
    ) -> None:  # fmt: skip
        """Opens a looked-up table's source at ``position`` and reads it up to its present
        end, so probes see it loaded."""
        self.lookups[table] = source
        source.open(position)
        while not source.finished():
            batch = source.poll(records, timeout_s)
            if not batch:
                return
            graph.push_lookup(table, batch)

    def poll_lookups(self, graph: Graph, records: int) -> None:
        """What the looked-up tables' sources have now (never waiting)."""
        for table, source in self.lookups.items():
            if not source.finished():
                batch = source.poll(records, 0.0)
                if batch:
                    graph.push_lookup(table, batch)

    def all_finished(self) -> bool:
        return all(s.finished() for s in self.sources.values())

    def flush_dead_letters(self, timeout_s: float) -> list[tuple[DeadLetterWriter, int]]:
        """(writer, letters written) of each dead-letter writer that wrote some."""
        written = []
        for writer in self.dead_letters:
            count = writer.flush(timeout_s)
            if count:
                written.append((writer, count))
        return written

    def report_presence(self, force: bool = False) -> None:
        """The key-presence checks' line, when there are any (see key_presence.py)."""
        if self.presence:
            if self._report is None:
                self._report = key_presence.PresenceReport(self.presence)
            self._report.tick(force=force)

    def close(self) -> None:
        for source in [*self.sources.values(), *self.lookups.values()]:
            source.close()


def install_checks(
    source: Source, scan: TableSourceScan, state: StateBackend, unknown_keys: str, fresh: bool,
    prefilter: PreFilter | None = None,
) -> KeyCheck | None:  # fmt: skip
    """The source's before-images from state (its normalizer checks keys too, and applies
    ``prefilter``: ``planner/prefilter.state_prefilters``), or its unknown-key check; the
    check to report, or None."""
    if scan.normalize:
        check = normalize_source.install(source, scan, state, unknown_keys, fresh, prefilter)
        return check if unknown_keys != "ignore" else None
    return key_presence.install(source, scan, state, unknown_keys, fresh)
