"""The catch-up progress line on a terminal: offsets done / end per source, events/s."""

from __future__ import annotations

import sys
import time

REFRESH_S = 0.5


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
            done, end = self.job.sources[scan.node_id].progress()
            parts.append(f"{scan.table} {done}/{end}" if end is not None else f"{scan.table} {done}")
        return " | ".join(parts) + f" | {rate:,.0f} events/s | checkpoints {self.job.stats.checkpoints}"

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
