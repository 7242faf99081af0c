"""Per-partition watermarks of one source scan, as Flink's Kafka source keeps them.

Each partition's watermark is the largest watermark-expression value its records
gave. The scan's watermark is the minimum over the partitions that count:

- every assigned partition counts from its assignment on; one without any record
  yet holds the scan's watermark at its minimum;
- with an idle timeout (table option ``scan.watermark.idle-timeout``, else the
  job setting ``table.exec.source.idle-timeout``; 0 or unset: never idle) a
  partition without a record for that long (wall clock, since its last record or
  its assignment) is idle and does not count until a record arrives again;
- a partition at the end of a bounded read is finished and does not count (Flink
  emits the maximum watermark for a finished split).

With every partition finished the scan's watermark is the maximum; with none
counting otherwise (some idle) it stays where it is, as an idle Flink source emits
no watermark.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable

from deltaflow.processor.runtime.base import MAX_WATERMARK, MIN_WATERMARK
from deltaflow.processor.settings import parse_duration_ms

TABLE_IDLE_OPTION = "scan.watermark.idle-timeout"
JOB_IDLE_SETTING = "table.exec.source.idle-timeout"

__all__ = ["JOB_IDLE_SETTING", "TABLE_IDLE_OPTION", "SourceMarks", "idle_timeout_ms"]


def idle_timeout_ms(options: dict[str, str], settings: dict[str, str], table: str = "") -> int:
    """The scan's idle timeout in ms (0: partitions never go idle); the table option
    takes precedence over the job setting, as in Flink."""
    text = options.get(TABLE_IDLE_OPTION)
    if text is not None:
        where = f"{TABLE_IDLE_OPTION} of table {table}" if table else TABLE_IDLE_OPTION
        return parse_duration_ms(text, where)
    text = settings.get(JOB_IDLE_SETTING)
    return parse_duration_ms(text, JOB_IDLE_SETTING) if text else 0


class SourceMarks:
    """The watermarks, last-record times and finished set of one scan's partitions."""

    def __init__(self, idle_ms: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_s = idle_ms / 1000
        self.clock = clock
        self.marks: dict[Hashable, int] = {}
        self.seen_at: dict[Hashable, float] = {}
        self.finished: set[Hashable] = set()

    def assign(self, partitions: Iterable[Hashable]) -> None:
        """Partitions assigned to the scan; a new one counts from now, at the minimum."""
        now = None
        for part in partitions:
            if part not in self.marks:
                now = self.clock() if now is None else now
                self.marks[part] = MIN_WATERMARK
                self.seen_at[part] = now

    def finish(self, partitions: Iterable[Hashable]) -> None:
        """Partitions at the end of their bounded read: they stop holding the scan back."""
        self.finished.update(partitions)

    def observe(self, part: Hashable, mark: int | None) -> None:
        """A partition returned records (``mark``: their largest watermark value, None
        when no record had one); it is active again."""
        self.seen_at[part] = self.clock()
        old = self.marks.get(part, MIN_WATERMARK)
        self.marks[part] = old if mark is None or mark < old else mark

    def combined(self) -> int | None:
        """The scan's watermark: the minimum over the counting partitions (None: none counts)."""
        if self.idle_s <= 0 and not self.finished:
            return min(self.marks.values()) if self.marks else None
        cutoff = self.clock() - self.idle_s if self.idle_s > 0 else None
        counting = [
            mark
            for part, mark in self.marks.items()
            if part not in self.finished and (cutoff is None or self.seen_at[part] > cutoff)
        ]
        if counting:
            return min(counting)
        return MAX_WATERMARK if self.finished.issuperset(self.marks) and self.marks else None
