"""OverAggregate: each input row out again with aggregates over its frame, as Flink's over
aggregate functions.

On event time (ROWTIME) rows wait in ``pending`` ``(ts, seq) -> row`` until the watermark
reaches their time; then each partition's rows are taken in time order (arrival order
among equal times) and emitted ``+I[row, values]``. A row whose time is not after the last
time its partition has emitted is late (Flink's ``lastTriggeringTs`` check): it is dropped
and counted in ``late_rows``; so is a row whose time attribute is NULL. On processing time
(PROCTIME) rows are emitted as they arrive, timed by the wall clock.

Frames: ROWS ``n`` PRECEDING holds the row and the ``n`` rows before it; RANGE ``ms``
PRECEDING the rows whose time is within ``ms`` before the row's, and all rows of the same
time (peers, which get equal values); UNBOUNDED PRECEDING every row of the partition so
far. Per partition the state is ``[last_ts, accumulator, frame]``, where ``frame`` holds
``[ts, row]`` of a bounded frame's rows, retracted from the accumulator as they leave it.
"""

from __future__ import annotations

from itertools import groupby

from deltaflow.formats.changelog import INSERT, Batch
from deltaflow.processor.plan import OverAggregate
from deltaflow.processor.runtime.aggs import Aggregates
from deltaflow.processor.runtime.base import MIN_WATERMARK, Operator, epoch_ms, key_getter


class OverAggOperator(Operator):
    def __init__(self, node: OverAggregate, backend, ctx) -> None:
        self.window = node.window
        self.rowtime = node.time_kind == "ROWTIME"
        self.clock = ctx.clock
        self.key_of = key_getter(node.window.partition_keys)
        self.aggs = Aggregates(node.aggs, node.inputs[0].types)
        name = f"{node.node_id}:OverAggregate"
        self.pending = backend.table(f"{name}:pending")
        self.partitions = backend.table(f"{name}:partition")
        self.progress = backend.table(f"{name}:progress")
        stored = self.progress.get(("watermark",))
        self.watermark = MIN_WATERMARK if stored is None else int(stored)  # type: ignore[call-overload]
        self.seq = int(self.progress.get(("seq",)) or 0)  # type: ignore[call-overload]
        self.late_rows: int = 0

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        if not self.rowtime:
            now = self.clock()
            return self._emit([(now, row) for row in batch.rows])
        col = self.window.order_key
        rows = [(row[col], row) for row in batch.rows]
        keys = list(dict.fromkeys(self.key_of(row) for _, row in rows))
        last = {
            k: (s[0] if s is not None else MIN_WATERMARK)
            for k, s in zip(keys, self.partitions.get_many(keys), strict=True)
        }
        for value, row in rows:
            ts = None if value is None else epoch_ms(value)
            if ts is None or ts <= last[self.key_of(row)]:
                self.late_rows += 1
                continue
            self.pending.put((ts, self.seq), row)
            self.seq += 1
        self.progress.put(("seq",), self.seq)
        return Batch()

    def on_watermark(self, watermark: int) -> Batch:
        if not self.rowtime or watermark <= self.watermark:
            return Batch()
        self.watermark = watermark
        self.progress.put(("watermark",), watermark)
        due = []
        for key, row in self.pending.scan_prefix(()):
            if key[0] > watermark:
                break
            due.append((key, row))
        for key, _ in due:
            self.pending.delete(key)
        return self._emit([(key[0], row) for key, row in due])

    def _emit(self, timed: list[tuple[int, tuple]]) -> Batch:
        """Rows in time order (``[(ts, row)]``) through their partitions' frames."""
        by_key: dict[tuple, list[tuple[int, tuple]]] = {}
        for ts, row in timed:
            by_key.setdefault(self.key_of(row), []).append((ts, row))
        keys = list(by_key)
        out = Batch()
        for key, stored in zip(keys, self.partitions.get_many(keys), strict=True):
            aggs = self.aggs
            if stored is None:
                last, acc, frame = MIN_WATERMARK, aggs.init(), []
            else:
                last, acc, frame = stored[0], aggs.load(stored[1]), list(stored[2])
            for ts, peers in groupby(by_key[key], key=lambda tr: tr[0]):
                self._advance(ts, [row for _, row in peers], acc, frame, out)
                last = max(last, ts)
            self.partitions.put(key, [last, aggs.dump(acc), frame])
        return out

    def _advance(self, ts: int, rows: list[tuple], acc: list, frame: list, out: Batch) -> None:
        """Rows of one time into the frame, each emitted with its frame's values."""
        w, aggs = self.window, self.aggs
        bounded = w.preceding is not None
        if w.kind == "ROWS":
            for row in rows:
                aggs.accumulate(acc, row)
                if bounded:
                    frame.append([ts, row])
                    if len(frame) > w.preceding + 1:  # type: ignore[operator]
                        aggs.retract(acc, frame.pop(0)[1])
                out.append(INSERT, row + tuple(aggs.values(acc)))
            return
        for row in rows:
            aggs.accumulate(acc, row)
            if bounded:
                frame.append([ts, row])
        if bounded:
            while frame and frame[0][0] < ts - w.preceding:  # type: ignore[operator]
                aggs.retract(acc, frame.pop(0)[1])
        values = tuple(aggs.values(acc))
        for row in rows:
            out.append(INSERT, row + values)
