"""WindowRank: each window's rows ranked once the watermark reaches its end - 1, as Flink's
window Top-N. Rows wait in ``(window_end, window_start, seq) -> row``; a window's rows are
grouped by the partition keys, sorted (equal sort keys in arrival order) and the ranks
``rank_start..rank_end`` emitted as ``+I`` (with the rank number when selected), then the
window is forgotten. A row of a window already ranked is late: dropped and counted.
A keep-last window deduplication ranks equal sort keys in reverse arrival order instead, so
the last to arrive wins, as Flink's WindowDeduplicate keeps it.
"""

from __future__ import annotations

from deltaflow.formats.changelog import INSERT, Batch
from deltaflow.processor.plan import WindowRank
from deltaflow.processor.runtime.base import (
    MIN_WATERMARK,
    Operator,
    epoch_ms,
    from_epoch_ms,
    key_getter,
)
from deltaflow.processor.runtime.rank import sort_key
from deltaflow.processor.runtime.window import check_window, windows_of


class WindowRankOperator(Operator):
    def __init__(self, node: WindowRank, backend, ctx) -> None:
        self.bounds = node.bounds
        self.partition_of = key_getter(node.partition_keys)
        self.sort_key = sort_key(node.order_keys, node.inputs[0].types)
        self.ranks = (node.rank_start, node.rank_end)
        self.numbered = node.output_rank_number
        self.keep_last = node.keep_last
        self.rows = backend.table(f"{node.node_id}:WindowRank:rows")
        self.progress = backend.table(f"{node.node_id}:WindowRank:progress")
        stored = self.progress.get(("watermark",))
        self.watermark = MIN_WATERMARK if stored is None else int(stored)  # type: ignore[call-overload]
        self.seq = int(self.progress.get(("seq",)) or 0)  # type: ignore[call-overload]
        self.late_rows: int = 0
        self.assign = node.assign
        if node.assign is not None:
            check_window(node.assign)

    def _windowed(self, rows: list[tuple]) -> list[tuple]:
        """Each row once per window holding its time, with window_start, window_end, window_time."""
        spec = self.assign
        out = []
        for row in rows:
            value = row[spec.time_column]  # type: ignore[union-attr]
            if value is None:
                continue  # Flink drops rows whose time attribute is NULL
            for start, end in windows_of(spec, epoch_ms(value)):  # type: ignore[arg-type]
                bounds = (from_epoch_ms(start, False), from_epoch_ms(end, False))
                out.append(row + bounds + (from_epoch_ms(end - 1, False),))
        return out

    def process(self, batch: Batch, port: int = 0) -> Batch:
        start_col, end_col = self.bounds
        rows = batch.rows if self.assign is None else self._windowed(batch.rows)
        for row in rows:  # append-only input
            end = epoch_ms(row[end_col])
            if end - 1 <= self.watermark:
                self.late_rows += 1
                continue
            self.rows.put((end, epoch_ms(row[start_col]), self.seq), row)
            self.seq += 1
        self.progress.put(("seq",), self.seq)
        return Batch()

    def on_watermark(self, watermark: int) -> Batch:
        if watermark <= self.watermark:
            return Batch()
        self.watermark = watermark
        self.progress.put(("watermark",), watermark)
        partitions: dict[tuple, list[tuple]] = {}
        due = []
        for key, row in self.rows.scan_prefix(()):
            if key[0] - 1 > watermark:
                break
            due.append(key)
            partitions.setdefault(self.partition_of(row), []).append(row)
        for key in due:
            self.rows.delete(key)
        out = Batch()
        first, last = self.ranks
        for rows in partitions.values():
            # stable: ties keep arrival order (reversed for a keep-last deduplication)
            ranked = sorted(rows[::-1] if self.keep_last else rows, key=self.sort_key)
            for n, row in enumerate(ranked[first - 1 : last], start=first):
                out.append(INSERT, row + (n,) if self.numbered else row)
        return out
