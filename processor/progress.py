"""What a running job counts and tells its user: its counters (``JobStats``, also on
the metrics endpoint), a line whenever a source skipped more unreadable records, the
catch-up progress line on a terminal (offsets done / end per source, events/s,
checkpoints, and the deletes of unknown primary keys once there are any), and where
stderr is not a terminal one log line every ``deltaflow.progress.interval``
(``Observer``: events/s, lag, checkpoint age)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from deltaflow.connectors import kafka_logs

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
    checkpoint_s_total: float = 0.0  # the duration of all checkpoints, summed
    checkpointed_at: float | None = None  # time.monotonic() of the last checkpoint
    started: float = field(default_factory=time.monotonic)
    # table -> (topic, partition) -> records not read yet; replaced whole by
    # ``refresh_lag`` in the job's thread, so the metrics thread reads a consistent copy
    lag: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)

    @property
    def total_in(self) -> int:
        return sum(self.events_in.values())

    @property
    def total_out(self) -> int:
        return sum(self.events_out.values())

    def checkpoint_age_s(self) -> float:
        """Seconds since the last checkpoint (since the start when there was none)."""
        return time.monotonic() - (self.checkpointed_at or self.started)

    def checkpointed(self, duration_s: float) -> None:
        self.checkpoints += 1
        self.last_checkpoint_s = duration_s
        self.checkpoint_s_total += duration_s
        self.checkpointed_at = time.monotonic()


def refresh_lag(job) -> None:
    """``job.stats.lag`` from the sources that know theirs (Kafka: per partition); two
    scans of one table report the larger lag of each partition."""
    lag: dict[str, dict[tuple[str, int], int]] = {}
    readers = [(s.table, job.inputs.sources.get(s.node_id)) for s in job.scans]
    readers += list(job.inputs.lookups.items())
    for table, source in readers:
        partition_lag = source.partition_lag() if source is not None else None
        if partition_lag is None:
            continue
        mine = lag.setdefault(table, {})
        for tp, n in partition_lag.items():
            mine[tp] = max(n, mine.get(tp, 0))
    job.stats.lag = lag


class Observer:
    """Called once per loop of the job: refreshes the lag, tells librdkafka's rate limiter
    the time, and writes the periodic progress line (``every_s``; None: none)."""

    def __init__(self, job, every_s: float | None, stream=None) -> None:
        self.job = job
        self.every_s = every_s
        self.stream = stream
        self.refreshed = 0.0
        self.logged = time.monotonic()
        self.counts = (0, 0)

    def tick(self) -> None:
        now = time.monotonic()
        if now - self.refreshed < REFRESH_S:
            return
        self.refreshed = now
        refresh_lag(self.job)
        kafka_logs.LIMITER.tick()
        if self.every_s and now - self.logged >= self.every_s:
            counts = (self.job.stats.total_in, self.job.stats.total_out)
            rates = [
                (n - m) / (now - self.logged) for n, m in zip(counts, self.counts, strict=True)
            ]
            self.logged, self.counts = now, counts
            print(self.line(*rates), file=self.stream or sys.stderr, flush=True)

    def line(self, rate_in: float, rate_out: float) -> str:
        stats = self.job.stats
        parts = [f"{rate_in:,.0f} events/s in, {rate_out:,.0f} out"]
        lags = {t: sum(p.values()) for t, p in stats.lag.items()}
        if lags:
            each = ", ".join(f"{public_name(t)} {n:,}" for t, n in lags.items())
            parts.append(f"lag {sum(lags.values()):,} records ({each})")
        if stats.checkpointed_at is None:
            parts.append("no checkpoint yet")
        else:
            parts.append(
                f"last checkpoint {stats.checkpoint_age_s():.1f} s ago (epoch {self.job.epoch.number}, "
                f"took {stats.last_checkpoint_s * 1000:.0f} ms)"
            )
        return "deltaflow: progress: " + "; ".join(parts)

    def close(self) -> None:
        """The final lag (the sources are still open)."""
        refresh_lag(self.job)


def public_name(table: str) -> str:
    """A table's name as the job wrote it (the catalog and database are the defaults)."""
    return table.removeprefix("default_catalog.default_database.")


def report_skipped(job) -> None:
    """One line whenever a source skipped more unreadable records (never a silent drop)."""
    for scan in job.scans:
        source = job.inputs.sources[scan.node_id]
        count = source.skipped
        if count > job.stats.skipped.get(scan.table, 0):
            job.stats.skipped[scan.table] = count
            print(
                f"deltaflow: table '{scan.table}': {count} unreadable record(s) skipped "
                "so far (the format's ignore-parse-errors is on)",
                file=sys.stderr,
            )
        messages = source.logical_messages
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
            source = self.job.inputs.sources.get(scan.node_id)
            if source is None:  # reopening after an in-process recovery
                continue
            done, end = source.progress()
            parts.append(
                f"{scan.table} {done}/{end}" if end is not None else f"{scan.table} {done}"
            )
        parts.append(f"{rate:,.0f} events/s")
        parts.append(f"checkpoints {self.job.stats.checkpoints}")
        # 'deltaflow.unknown-key-delete' = count/policy: shown once there is one
        unknown = sum(check.unknown for check in self.job.inputs.presence.values())
        if unknown:
            parts.append(f"unknown-key deletes {unknown:,}")
        return " | ".join(parts)

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
