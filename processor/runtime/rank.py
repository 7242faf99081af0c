"""Rank: ``ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..)`` Top-N with retraction.

Per partition the state is the list of the partition's rows in sort order (rows
with equal sort keys in arrival order, as Flink's sorted buffer keeps them; in
reverse arrival order for ``later_first``, Flink's Deduplicate keep-last). Each
input record changes the list; the rows at the ranks ``rank_start..rank_end``
before and after are compared and the difference is emitted, record by record:

- with the rank number in the output, each rank whose row changed emits
  ``-U(old)``/``+U(new)`` (``-U`` only when the node's mode has UB), a rank that
  appears emits ``+I`` and one that disappears ``-D``;
- without it, rows that left the top emit ``-D`` and rows that entered ``+I``
  (the ``-D`` first, then the ``+I``, as Flink 2.3 prints for both insert-only and
  updating input: ``+I[a, 1] +I[a, 5] -D[a, 1] +I[a, 3]`` for a top 2 by v DESC);
- over an insert-only input, a single rank (``rn = 1``) changes as an update without the
  rank number too, and every rank from a new row's down is emitted, even where an equal
  row takes an equal row's place (Flink 2.3 prints those -U/+U of equal rows);
- ties (docs/FLINK_COMPATIBILITY.md, "Ties"): equal sort keys rank in arrival order,
  except ``later_first`` (Deduplicate keep-last), where the last arrival ranks first.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable

from deltaflow.formats.changelog import ADDS, DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.formats.generated import define
from deltaflow.formats.types import DataType
from deltaflow.processor.plan import Rank
from deltaflow.processor.runtime.base import Operator, key_getter, row_freezer
from deltaflow.processor.runtime.rank_first import FirstOnWatermarkOperator


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


_NEGATABLE = ("TINYINT", "SMALLINT", "INTEGER", "INT", "BIGINT", "FLOAT", "DOUBLE")


def sort_key(
    order: tuple[tuple[int, bool, bool], ...], types: list[DataType] | None = None
) -> Callable[[tuple], tuple]:
    """A key function ordering rows by ``(column, ascending, nulls_first)`` items: per
    column ``(0, 0)`` for a NULL first, ``(2, 0)`` for a NULL last, else ``(1, value)``,
    the value reversed for DESC. A DESC column of an integer or floating type (``types``
    given) is reversed by negating it (exact, and NaN compares as it did), any other by
    ``_Desc``. One generated function."""
    parts, env = [], {"Desc": _Desc}
    for i, (col, asc, nulls_first) in enumerate(order):
        if asc:
            value = f"v{i}"
        elif types is not None and types[col].root in _NEGATABLE:
            value = f"-v{i}"
        else:
            value = f"Desc(v{i})"
        null = "(0, 0)" if nulls_first else "(2, 0)"
        parts.append(f"{null} if (v{i} := row[{col}]) is None else (1, {value})")
    body = ", ".join(parts) + ("," if len(parts) == 1 else "")
    return define(f"def key(row):\n    return ({body})\n", "key", env, "sort key")


class RankOperator(Operator):
    def __init__(self, node: Rank, backend, ctx) -> None:
        self.partition_of = key_getter(node.partition_keys)
        self.key = sort_key(node.order_keys, node.inputs[0].types)
        self.start = node.rank_start
        self.end = node.rank_end
        self.with_number = node.output_rank_number
        self.ub = 1 in node.changelog_mode
        self.state = backend.table(f"{node.node_id}:Rank:rows")
        self.freeze = row_freezer(node.inputs[0].types) or (lambda row: row)
        # insert-only input: a row beyond rank_end can never move up again (Flink's
        # AppendOnlyTopNFunction keeps only the top rows too)
        append_only = self.append_only = node.inputs[0].changelog_mode <= {0}
        self.keep = node.rank_end if append_only and node.rank_end is not None else None
        # where a new row goes among its equal sort keys: behind them (Flink's Rank), or
        # before them (Deduplicate keep-last: of equal times the last arrival is kept)
        self.place = bisect_left if node.later_first else bisect_right
        # one rank of an insert-only input: Flink 2.3 prints a change of its row as an
        # update (-U/+U, just +U where the mode has no UB), not as -D/+I
        self.single = append_only and node.rank_start == node.rank_end
        self._removed: tuple = ()  # the row the last retraction removed (``_change``)

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        if self.single and self.start == 1:
            return self._process_first(batch)
        return self._process_rows(batch)

    def _process_rows(self, batch: Batch) -> Batch:
        """Each record into its partition's sorted list, the changes at the ranks emitted."""
        parts = [self.partition_of(r) for r in batch.rows]
        distinct = list(dict.fromkeys(parts))
        stored = dict(zip(distinct, self.state.get_many(distinct), strict=True))
        lists = {k: list(v) if v else [] for k, v in stored.items()}
        out = Batch()
        moved = not self.with_number and not self.single
        for kind, row, part in zip(batch.kinds, batch.rows, parts, strict=True):
            rows = lists[part]
            if moved:  # the rows that left and entered the ranks, from where it moved
                at = self._change(rows, kind, row)
                if at is not None:
                    self._emit_moved(out, rows, ADDS[kind], at)
                if self.keep is not None and len(rows) > self.keep:
                    del rows[self.keep :]
                continue
            before = self._top(rows)
            at = self._change(rows, kind, row)
            if at is None:
                continue
            # over an insert-only input Flink emits every rank from the new row's down, even
            # where an equal row takes the place of an equal one (duplicates; Deduplicate
            # keep-last replacing an equal row)
            shifted = at - self.start + 1 if self.append_only and ADDS[kind] else None
            self._emit(out, before, self._top(rows), shifted)
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

    def _process_first(self, batch: Batch) -> Batch:
        """``rn = 1`` over an insert-only input: per partition only its first row is kept,
        and a row that sorts before it (at an equal sort key: only for keep-last) takes
        its place as an update, as the general path does with a list of one row."""
        parts = [self.partition_of(r) for r in batch.rows]
        distinct = list(dict.fromkeys(parts))
        found: list = self.state.get_many(distinct)
        stored = {k: v[0] if v else None for k, v in zip(distinct, found, strict=True)}
        best = dict(stored)  # per partition: its first row
        keys: dict[tuple, tuple] = {}  # and that row's sort key
        key, later_first, ub = self.key, self.place is bisect_left, self.ub
        rank = (1,) if self.with_number else ()
        out = Batch()
        for row, part in zip(batch.rows, parts, strict=True):
            k, top = key(row), best[part]
            if top is not None:
                tk = keys.get(part)
                if tk is None:
                    tk = keys[part] = key(top)
                # where bisect puts the row in a list of one: before ``top`` or not
                if (tk < k) if later_first else not (k < tk):
                    continue
                if ub:
                    out.append(UPDATE_BEFORE, top + rank)
                out.append(UPDATE_AFTER, row + rank)
            else:
                out.append(INSERT, row + rank)
            best[part], keys[part] = row, k
        for part in keys:
            if best[part] != stored[part]:  # unchanged partitions are not written (TTL)
                self.state.put(part, [best[part]])
        return out

    def _top(self, rows: list[tuple]) -> list[tuple]:
        return rows[self.start - 1 : self.end]

    def _change(self, rows: list[tuple], kind: int, row: tuple) -> int | None:
        """Adds or retracts ``row``; the index it went to or came from (None: a retraction
        of a row never added, nothing to emit)."""
        key = self.key
        if ADDS[kind]:
            at = self.place(rows, key(row), key=key)
            rows.insert(at, row)
            return at
        k = key(row)
        lo, hi = bisect_left(rows, k, key=key), bisect_right(rows, k, key=key)
        for i in range(lo, hi):
            if rows[i] == row:
                self._removed = rows[i]
                del rows[i]
                return i
        return None

    def _emit_moved(self, out: Batch, rows: list[tuple], added: bool, at: int) -> None:
        """``_emit`` without the rank number, from where one change moved the list: a row
        added or removed at ``at`` (``rows`` is the list after it) shifts the rows below
        it by one, so at most one row leaves the ranks and one enters, found by index
        instead of comparing the ranks before and after (O(1), not O(ranks), per
        change). As ``_emit``: the -D first, then the +I, and nothing when the two are
        equal rows. ``s``/``e``: the first rank's index and the index past the last."""
        s, e, n = self.start - 1, self.end, len(rows)
        if e is None:
            e = n + 2  # no last rank: nothing leaves at the bottom
        if at >= e:
            return  # below the ranks: they do not change
        left: tuple | None
        entered: tuple | None
        if added:
            if at < s:  # above the first rank: the row before it moves into it
                entered = rows[s] if s < n else None
            else:
                entered = rows[at]
            left = rows[e] if e < n else None  # the last rank's row, moved past it
        else:
            if at < s:  # above the first rank: its row moves up out of the ranks
                left = rows[s - 1] if s - 1 < n else None
            else:
                left = self._removed
            entered = rows[e - 1] if e - 1 < n else None  # the row past the last, moved up
        if left is not None and entered is not None and self.freeze(left) == self.freeze(entered):
            return
        if left is not None:
            out.append(DELETE, left)
        if entered is not None:
            out.append(INSERT, entered)

    def _emit(
        self, out: Batch, before: list[tuple], after: list[tuple], shifted: int | None
    ) -> None:
        """The changes from ``before`` to ``after`` (the rows at the ranks); from the rank
        ``shifted`` on (0: the first) an unchanged row is emitted too."""
        if not self.with_number and not self.single:
            # as Flink: the -D of the row that left the top first, then the +I of the one
            # that entered (checked against Flink 2.3 by tests/conformance)
            deletes = _difference(before, after, DELETE, self.freeze)
            inserts = _difference(after, before, INSERT, self.freeze)
            for kind, row in deletes + inserts:
                out.append(kind, row)
            return
        number, ub, nb, na = self.with_number, self.ub, len(before), len(after)
        # the ranks above ``shifted`` hold the rows they held (the same tuples): skipped
        first = 0 if shifted is None else max(shifted, 0)
        for i in range(first, max(nb, na)):
            rank = (self.start + i,) if number else ()
            old = before[i] + rank if i < nb else None
            new = after[i] + rank if i < na else None
            if old == new and (shifted is None or i < shifted):
                continue
            if old is None:
                out.append(INSERT, new)  # type: ignore[arg-type]
            elif new is None:
                out.append(DELETE, old)
            else:
                if ub:
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


def rank_operator(node: Rank, backend, ctx) -> Operator:
    """The operator of a Rank node: Flink's Deduplicate keep-first on event time waits for
    the watermark (``rank_first``), every other Rank is ``RankOperator``."""
    if node.first_on_watermark:
        return FirstOnWatermarkOperator(node, backend, ctx)
    return RankOperator(node, backend, ctx)
