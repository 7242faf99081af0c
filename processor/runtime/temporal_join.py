"""TemporalJoin on event time: append-only left rows join the versioned right table as it
was at each left row's time, as Flink's row-time temporal join.

The right input's changes are versions: ``key -> [[ts, adds, row], ...]`` in time order, one
per right time (a later change at the same time replaces it; -U rows are left out, as
Flink's DropUpdateBefore does; a -D is a version that matches nothing). Left rows wait in
``(ts, seq) -> row`` until the watermark reaches their time; then each joins the latest
version of its key at or before its time, if that version adds a row and the condition
holds (a LEFT join pads the others with NULLs). Versions older than the latest one at or
before the watermark can no longer be chosen and are forgotten (when a change of the key
arrives or a left row of it is joined). As in Flink no row is
dropped as late: a left row behind the watermark joins at the next one.
"""

from __future__ import annotations

from bisect import bisect_right

from deltaflow.formats.changelog import ADDS, INSERT, UPDATE_BEFORE, Batch
from deltaflow.processor.exprs.compile import compile_predicate
from deltaflow.processor.plan import TemporalJoin
from deltaflow.processor.runtime.base import MIN_WATERMARK, Operator, epoch_ms, key_getter


class TemporalJoinOperator(Operator):
    def __init__(self, node: TemporalJoin, backend, ctx) -> None:
        self.left_key = key_getter(node.left_keys)
        self.right_key = key_getter(node.right_keys)
        self.times = (node.left_time, node.right_time)
        self.pad = (None,) * len(node.inputs[1].fields)
        self.left_outer = node.join_type == "LEFT"
        self.condition = None
        if node.condition is not None:
            self.condition = compile_predicate(node.condition, ctx.eval_context())
        name = f"{node.node_id}:TemporalJoin"
        self.pending = backend.table(f"{name}:left")
        self.versions = backend.table(f"{name}:versions")
        self.progress = backend.table(f"{name}:progress")
        stored = self.progress.get(("watermark",))
        self.watermark = MIN_WATERMARK if stored is None else int(stored)  # type: ignore[call-overload]
        self.seq = int(self.progress.get(("seq",)) or 0)  # type: ignore[call-overload]

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if port == 0:
            for row in batch.rows:
                value = row[self.times[0]]
                if value is not None:  # Flink drops rows whose time attribute is NULL
                    self.pending.put((epoch_ms(value), self.seq), row)
                    self.seq += 1
            self.progress.put(("seq",), self.seq)
            return Batch()
        changes: dict[tuple, list[tuple[int, bool, tuple]]] = {}
        for kind, row in zip(batch.kinds, batch.rows, strict=True):
            value = row[self.times[1]]
            if kind != UPDATE_BEFORE and value is not None:
                changes.setdefault(self.right_key(row), []).append(
                    (epoch_ms(value), ADDS[kind], row)
                )
        keys = list(changes)
        for key, stored in zip(keys, self.versions.get_many(keys), strict=True):
            versions = {v[0]: v for v in stored or ()}
            for ts, adds, row in changes[key]:
                versions[ts] = [ts, adds, row]
            self.versions.put(key, self._live(sorted(versions.values())))
        return Batch()

    def _live(self, versions: list) -> list:
        """The versions a left row at or after the watermark may still choose."""
        at = bisect_right([v[0] for v in versions], self.watermark)
        return versions[max(at - 1, 0) :]

    def on_watermark(self, watermark: int) -> Batch:
        if watermark <= self.watermark:
            return Batch()
        due = []
        for key, row in self.pending.scan_prefix(()):
            if key[0] > watermark:
                break
            due.append((key, row))
        for key, _ in due:
            self.pending.delete(key)
        by_key: dict[tuple, list[tuple[int, tuple]]] = {}
        for (ts, _), row in due:
            by_key.setdefault(self.left_key(row), []).append((ts, row))
        keys = list(by_key)
        out = Batch()
        self.watermark = watermark
        self.progress.put(("watermark",), watermark)
        for key, stored in zip(keys, self.versions.get_many(keys), strict=True):
            versions = list(stored or ())
            for ts, row in by_key[key]:
                self._join(ts, row, versions if None not in key else [], out)
            if versions:
                self.versions.put(key, self._live(versions))
        return out

    def _join(self, ts: int, row: tuple, versions: list, out: Batch) -> None:
        at = bisect_right([v[0] for v in versions], ts)
        version = versions[at - 1] if at else None
        if version is not None and version[1]:
            pair = row + tuple(version[2])
            if self.condition is None or self.condition(pair):
                out.append(INSERT, pair)
                return
        if self.left_outer:
            out.append(INSERT, row + self.pad)
