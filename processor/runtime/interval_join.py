"""IntervalJoin: an event-time equi-join of two append-only inputs whose rows pair only when
``tr + lower <= tl <= tr + upper`` (ms), as Flink's row-time interval join.

Each input keeps its rows per join key, ``key -> [[ts, row, matched], ...]``, plus a time
index ``(ts, *key)`` for expiry. A row arriving on one input pairs with the other input's
kept rows of its key whose time is in range (and the remaining condition holds), then is
kept while rows of the other input may still pair with it: a left row while the watermark
is below ``tl - lower``, a right row while it is below ``tr + upper``. A row arriving when
that time has already passed is late: it still pairs with what is kept (as in Flink), is
not kept, and is counted in ``late_rows``. On each watermark ``W`` left rows at or before
``W + lower - 1`` and right rows at or before ``W - upper - 1`` are forgotten (Flink's
expiration times); for an outer side, a forgotten row that never paired is emitted padded
with NULLs then. A row whose time attribute is NULL is dropped and counted as late.
Output rows are all ``+I``: left columns then right columns.
"""

from __future__ import annotations

from deltaflow.formats.changelog import INSERT, Batch
from deltaflow.processor.exprs.compile import compile_predicate
from deltaflow.processor.plan import IntervalJoin
from deltaflow.processor.runtime.base import MIN_WATERMARK, Operator, epoch_ms, key_getter

_SIDES = ("left", "right")


class IntervalJoinOperator(Operator):
    def __init__(self, node: IntervalJoin, backend, ctx) -> None:
        self.lower, self.upper = node.lower_ms, node.upper_ms
        self.key_of = (key_getter(node.left_keys), key_getter(node.right_keys))
        self.time_of = (node.left_time, node.right_time)
        self.widths = (len(node.inputs[0].fields), len(node.inputs[1].fields))
        full = node.join_type == "FULL"
        self.outer = (full or node.join_type == "LEFT", full or node.join_type == "RIGHT")
        self.condition = None
        if node.condition is not None:
            self.condition = compile_predicate(node.condition, ctx.eval_context())
        name = f"{node.node_id}:IntervalJoin"
        self.rows = tuple(backend.table(f"{name}:{s}") for s in _SIDES)
        self.times = tuple(backend.table(f"{name}:{s}_times") for s in _SIDES)
        self.progress = backend.table(f"{name}:watermark")
        stored = self.progress.get(("watermark",))
        self.watermark = MIN_WATERMARK if stored is None else int(stored)  # type: ignore[call-overload]
        self.late_rows: int = 0

    def _range(self, side: int, ts: int) -> tuple[int, int]:
        """The times of the other input's rows a row of ``side`` at ``ts`` pairs with."""
        if side == 0:
            return ts - self.upper, ts - self.lower
        return ts + self.lower, ts + self.upper

    def _kept_until(self, side: int, ts: int) -> int:
        """The row is kept while the watermark is below this time."""
        return ts - self.lower if side == 0 else ts + self.upper

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        side, other = port, 1 - port
        time_col, key_of = self.time_of[side], self.key_of[side]
        staged = []
        for row in batch.rows:  # append-only input: every row is an insert
            value = row[time_col]
            if value is None:
                self.late_rows += 1
                continue
            staged.append((epoch_ms(value), key_of(row), row))
        keys = list(dict.fromkeys(k for _, k, _ in staged))
        theirs = dict(zip(keys, self.rows[other].get_many(keys), strict=True))
        mine = dict(zip(keys, self.rows[side].get_many(keys), strict=True))
        changed_theirs: set[tuple] = set()
        grown: set[tuple] = set()
        out = Batch()
        for ts, key, row in staged:
            matched = self._probe(side, ts, key, row, theirs, changed_theirs, out)
            if self.watermark < self._kept_until(side, ts):
                if key not in grown:  # a new list: stored values are shared, never changed
                    mine[key] = list(mine[key] or ())
                    grown.add(key)
                mine[key].append([ts, row, matched])
                self.times[side].put((ts, *key), 1)
            else:
                self.late_rows += 1
                if not matched and self.outer[side]:
                    out.append(INSERT, self._padded(side, row))
        for key in changed_theirs:
            self.rows[other].put(key, theirs[key])
        for key in grown:
            self.rows[side].put(key, mine[key])
        return out

    def _probe(self, side, ts, key, row, theirs, changed, out) -> bool:  # noqa: ANN001
        entries = theirs.get(key)
        if not entries or None in key:
            return False
        lo, hi = self._range(side, ts)
        cond, mark = self.condition, self.outer[1 - side]
        matched = False
        for i, (other_ts, other_row, other_matched) in enumerate(entries):
            if not lo <= other_ts <= hi:
                continue
            pair = row + other_row if side == 0 else other_row + row
            if cond is not None and not cond(pair):
                continue
            out.append(INSERT, pair)
            matched = True
            if mark and not other_matched:
                if key not in changed:  # copy before the first change: stored values are shared
                    entries = theirs[key] = [list(e) for e in entries]
                    changed.add(key)
                entries[i][2] = True
        return matched

    def _padded(self, side: int, row: tuple) -> tuple:
        if side == 0:
            return row + (None,) * self.widths[1]
        return (None,) * self.widths[0] + row

    def on_watermark(self, watermark: int) -> Batch:
        if watermark <= self.watermark:
            return Batch()
        self.watermark = watermark
        self.progress.put(("watermark",), watermark)
        out = Batch()
        self._expire(0, watermark + self.lower - 1, out)
        self._expire(1, watermark - self.upper - 1, out)
        return out

    def _expire(self, side: int, until: int, out: Batch) -> None:
        """Forgets the rows of ``side`` at or before ``until``; pads the unmatched outer ones."""
        index = self.times[side]
        due = []
        for tkey, _ in index.scan_prefix(()):
            if tkey[0] > until:
                break
            due.append(tkey)
        if not due:
            return
        for tkey in due:
            index.delete(tkey)
        expired = dict.fromkeys(tkey[1:] for tkey in due)
        keys = list(expired)
        table = self.rows[side]
        for key, entries in zip(keys, table.get_many(keys), strict=True):
            kept = []
            for entry in entries or ():
                if entry[0] > until:
                    kept.append(entry)
                elif self.outer[side] and not entry[2]:
                    out.append(INSERT, self._padded(side, entry[1]))
            if kept:
                table.put(key, kept)
            else:
                table.delete(key)
