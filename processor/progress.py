"""What a running job counts and tells its user: its counters (``JobStats``, also on
the metrics endpoint), a line whenever a source skipped more unreadable records, and
the catch-up progress line on a terminal (offsets done / end per source, events/s,
checkpoints, and the deletes of unknown primary keys once there are any)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

REFRESH_S = 0.5


@dataclass
class JobStats:
    events_in: dict[str, int] = field(default_factory=dict)
    events_out: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    # Debezium logical decoding messages (op "m") per table: no row change, skipped
    messages: dict[str, int] = field(default_factory=dict)
    checkpoints: int = 0
    last_checkpoint_s: float = 0.0
    started: float = field(default_factory=time.monotonic)

    @property
    def total_in(self) -> int:
        return sum(self.events_in.values())


_DECODERS = ("value_decoder", "key_decoder")


def report_skipped(job) -> None:
    """One line whenever a source skipped more unreadable records (never a silent drop)."""
    for scan in job.scans:
        decoders = [getattr(job.sources[scan.node_id], n, None) for n in _DECODERS]
        count = sum(getattr(d, "skipped", 0) for d in decoders)
        if count > job.stats.skipped.get(scan.table, 0):
            job.stats.skipped[scan.table] = count
            print(
                f"deltaflow: table '{scan.table}': {count} unreadable record(s) skipped "
                "so far (the format's ignore-parse-errors is on)",
                file=sys.stderr,
            )
        messages = sum(getattr(d, "logical_messages", 0) for d in decoders)
        if messages > job.stats.messages.get(scan.table, 0):
            job.stats.messages[scan.table] = messages
            print(
                f"deltaflow: table '{scan.table}': {messages} Debezium logical decoding "
                "message(s) (op 'm', no row change) skipped so far",
                file=sys.stderr,
            )


class Display:
    def __init__(self, job, enabled: bool, stream=None) -> None:
        self.job = job
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.last = 0.0
        self.last_count = 0
        self.shown = False

    def tick(self) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < REFRESH_S:
            return
        count = self.job.stats.total_in
        rate = (count - self.last_count) / (now - self.last) if self.last else 0.0
        self.last, self.last_count = now, count
        self.stream.write("\r" + self.line(rate) + "\x1b[K")
        self.stream.flush()
        self.shown = True

    def line(self, rate: float) -> str:
        parts = []
        for scan in self.job.scans:
            source = self.job.sources.get(scan.node_id)
            if source is None:  # reopening after an in-process recovery
                continue
            done, end = source.progress()
            parts.append(
                f"{scan.table} {done}/{end}" if end is not None else f"{scan.table} {done}"
            )
        parts.append(f"{rate:,.0f} events/s")
        parts.append(f"checkpoints {self.job.stats.checkpoints}")
        # 'deltaflow.unknown-key-delete' = count/policy: shown once there is one
        unknown = sum(check.unknown for check in self.job.presence.values())
        if unknown:
            parts.append(f"unknown-key deletes {unknown:,}")
        return " | ".join(parts)

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
