"""What a running job reads: its open sources and what hangs on them.

``Inputs`` holds the sources of the plan's scans, the sources feeding lookup-join
mirrors, the key-presence checks, the sources' dead-letter writers and the
per-partition watermarks; they are opened together at a checkpoint's positions
(``processor/job.py``) and closed together (at the end, or before a stuck
transaction is settled in process)."""

from __future__ import annotations

from dataclasses import dataclass, field

from deltaflow.connectors.base import Source
from deltaflow.connectors.dead_letters import DeadLetterWriter
from deltaflow.processor.job_tables import LOOKUP_PREFIX
from deltaflow.processor.runtime import key_presence
from deltaflow.processor.runtime.key_presence import KeyCheck


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
