"""Rank: ``ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..)`` Top-N with retraction.

Per partition the state is the list of the partition's rows in sort order (rows
with equal sort keys in arrival order, as Flink's sorted buffer keeps them). Each
input record changes the list; the rows at the ranks ``rank_start..rank_end``
before and after are compared and the difference is emitted, record by record:

- with the rank number in the output, each rank whose row changed emits
  ``-U(old)``/``+U(new)`` (``-U`` only when the node's mode has UB), a rank that
  appears emits ``+I`` and one that disappears ``-D``;
- without it, rows that left the top emit ``-D`` and rows that entered ``+I``
  (the ``-D`` first, then the ``+I``, as Flink 2.3 prints for both insert-only and
  updating input: ``+I[a, 1] +I[a, 5] -D[a, 1] +I[a, 3]`` for a top 2 by v DESC).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable

from deltaflow.formats.changelog import ADDS, DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor.plan import Rank
from deltaflow.processor.runtime.base import Operator, key_getter, row_freezer


class _Desc:
    """Reverses the order of a value (for ``ORDER BY x DESC``)."""

    __slots__ = ("v",)

    def __init__(self, v: object) -> None:
        self.v = v

    def __lt__(self, other: _Desc) -> bool:
        return other.v < self.v  # type: ignore[operator]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.v == other.v

    def __hash__(self) -> int:
        return hash(self.v)


def sort_key(order: tuple[tuple[int, bool, bool], ...]) -> Callable[[tuple], tuple]:
    """A key function ordering rows by ``(column, ascending, nulls_first)`` items."""

    def key(row: tuple) -> tuple:
        out = []
        for col, asc, nulls_first in order:
            v = row[col]
            if v is None:
                out.append((0 if nulls_first else 2, 0))
            else:
                out.append((1, v if asc else _Desc(v)))
        return tuple(out)

    return key


class RankOperator(Operator):
    def __init__(self, node: Rank, backend, ctx) -> None:
        self.partition_of = key_getter(node.partition_keys)
        self.key = sort_key(node.order_keys)
        self.start = node.rank_start
        self.end = node.rank_end
        self.with_number = node.output_rank_number
        self.ub = 1 in node.changelog_mode
        self.state = backend.table(f"{node.node_id}:Rank:rows")
        self.freeze = row_freezer(node.inputs[0].types) or (lambda row: row)
        # insert-only input: a row beyond rank_end can never move up again (Flink's
        # AppendOnlyTopNFunction keeps only the top rows too)
        append_only = node.inputs[0].changelog_mode <= {0}
        self.keep = node.rank_end if append_only and node.rank_end is not None else None

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        parts = [self.partition_of(r) for r in batch.rows]
        distinct = list(dict.fromkeys(parts))
        stored = dict(zip(distinct, self.state.get_many(distinct), strict=True))
        lists = {k: list(v) if v else [] for k, v in stored.items()}
        out = Batch()
        for kind, row, part in zip(batch.kinds, batch.rows, parts, strict=True):
            rows = lists[part]
            before = self._top(rows)
            if not self._change(rows, kind, row):
                continue
            self._emit(out, before, self._top(rows))
            if self.keep is not None and len(rows) > self.keep:
                del rows[self.keep :]
        for part, rows in lists.items():
            if rows == list(stored[part] or ()):
                continue  # unchanged (a row that did not enter a kept top): no write, so
                # with state TTL the partition expires from its last change, as in Flink
            if rows:
                self.state.put(part, rows)
            else:
                self.state.delete(part)
        return out

    def _top(self, rows: list[tuple]) -> list[tuple]:
        return rows[self.start - 1 : self.end]

    def _change(self, rows: list[tuple], kind: int, row: tuple) -> bool:
        key = self.key
        if ADDS[kind]:
            rows.insert(bisect_right(rows, key(row), key=key), row)
            return True
        k = key(row)
        lo, hi = bisect_left(rows, k, key=key), bisect_right(rows, k, key=key)
        for i in range(lo, hi):
            if rows[i] == row:
                del rows[i]
                return True
        return False  # a retraction of a row never added: nothing to emit

    def _emit(self, out: Batch, before: list[tuple], after: list[tuple]) -> None:
        if not self.with_number:
            # as Flink: the -D of the row that left the top first, then the +I of the one
            # that entered (checked against Flink 2.3 by tests/conformance)
            deletes = _difference(before, after, DELETE, self.freeze)
            inserts = _difference(after, before, INSERT, self.freeze)
            for kind, row in deletes + inserts:
                out.append(kind, row)
            return
        for i in range(max(len(before), len(after))):
            rank = self.start + i
            old = before[i] + (rank,) if i < len(before) else None
            new = after[i] + (rank,) if i < len(after) else None
            if old == new:
                continue
            if old is None:
                out.append(INSERT, new)  # type: ignore[arg-type]
            elif new is None:
                out.append(DELETE, old)
            else:
                if self.ub:
                    out.append(UPDATE_BEFORE, old)
                out.append(UPDATE_AFTER, new)


def _difference(
    rows: list[tuple], minus: list[tuple], kind: int, freeze
) -> list[tuple[int, tuple]]:
    """(kind, row) for each row of ``rows`` beyond its copies in ``minus``, in order."""
    extra = Counter(map(freeze, rows))
    extra.subtract(map(freeze, minus))
    out = []
    for row in rows:
        frozen = freeze(row)
        if extra[frozen] > 0:
            extra[frozen] -= 1
            out.append((kind, row))
    return out
