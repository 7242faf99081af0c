"""DeltaJoin: a regular join's changelog computed from the sources' mirrors, with no join state.

Each input is a source scan; its batch is applied to that table's mirror (see ``mirror``)
and passed through the side's Calc. For every change, in order, the other side's rows with
the same join key are looked up in its mirror (one lookup per distinct key of the batch) and
the rules of the regular join (``join.py``) are followed, so the output is the same
changelog: the change's kind on joined rows, and for an outer other side the null-padded
row retracted when a row gains its first match and restored when it loses its last one.
Where the regular join keeps a match count per row, this operator counts matches from its
own side's mirror as it was before the batch, updated change by change in memory.

The one difference: the joined rows one change produces come in the other side's primary
key order, not in the order the regular join's state holds them; as a multiset per change,
and so as a result, the output is identical.

``eventual`` (VVR's EVENTUAL): additions emit the joined rows with their kind (+I/+U), and
retractions emit nothing, so a row that stops matching stays in an upsert sink until its key
is overwritten.
"""

from __future__ import annotations

from deltaflow.formats.changelog import ADDS, DELETE, INSERT, Batch
from deltaflow.processor.exprs.compile import compile_predicate
from deltaflow.processor.plan import DeltaJoin
from deltaflow.processor.runtime.base import Operator
from deltaflow.processor.runtime.mirror import SourceReader

_OUTER = {  # join type -> (left side outer, right side outer)
    "INNER": (False, False),
    "LEFT": (True, False),
    "RIGHT": (False, True),
    "FULL": (True, True),
}


class _Side:
    __slots__ = ("nulls", "outer", "reader")

    def __init__(self, reader: SourceReader, outer: bool) -> None:
        self.reader = reader
        self.outer = outer
        self.nulls = (None,) * reader.width


class DeltaJoinOperator(Operator):
    def __init__(self, node: DeltaJoin, backend, ctx) -> None:
        left_outer, right_outer = _OUTER[node.join_type.upper()]
        self.sides = (
            _Side(SourceReader(node.left, node.left_keys, backend, ctx), left_outer),
            _Side(SourceReader(node.right, node.right_keys, backend, ctx), right_outer),
        )
        self.eventual = node.eventual
        self.condition = None
        if node.condition is not None:
            self.condition = compile_predicate(node.condition, ctx.eval_context())

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        is_left = port == 0
        mine, other = self.sides[port], self.sides[1 - port]
        kinds, rows = mine.reader.changes(batch)
        out = Batch()
        if not rows:
            return out
        key_of = mine.reader.key_of
        keys = [key_of(r) for r in rows]
        live = [k for k in dict.fromkeys(keys) if None not in k]
        # The other side as the regular join's state holds it: in a self-join the left
        # input has taken the batch already when the right one sees it.
        others = other.reader.rows(live, batch if is_left else None) if live else {}
        if self.eventual:
            self._eventual(out, kinds, rows, keys, others, is_left)
            return out
        own = mine.reader.rows(live, batch) if other.outer and live else {}
        for kind, row, key in zip(kinds, rows, keys, strict=True):
            matches = self._matches(row, others[key], is_left) if key in others else []
            mine_rows = own.get(key)
            if ADDS[kind]:
                self._add(out, kind, row, matches, mine_rows, mine, other, is_left)
                if mine_rows is not None:
                    mine_rows.append(row)
            else:
                if mine_rows is not None and row in mine_rows:
                    mine_rows.remove(row)
                self._retract(out, kind, row, matches, mine_rows, mine, other, is_left)
        return out

    def _eventual(self, out: Batch, kinds, rows, keys, others, is_left: bool) -> None:
        for kind, row, key in zip(kinds, rows, keys, strict=True):
            if ADDS[kind] and key in others:
                self._joined(out, kind, row, self._matches(row, others[key], is_left), is_left)

    def _matches(self, row: tuple, candidates: list[tuple], is_left: bool) -> list[tuple]:
        cond = self.condition
        if cond is None:
            return candidates
        if is_left:
            return [e for e in candidates if cond(row + e)]
        return [e for e in candidates if cond(e + row)]

    def _count(self, other_row: tuple, mine_rows: list[tuple], is_left: bool) -> int:
        """How many of this side's rows the other side's row matches."""
        cond = self.condition
        if cond is None:
            return len(mine_rows)
        if is_left:
            return sum(1 for r in mine_rows if cond(r + other_row))
        return sum(1 for r in mine_rows if cond(other_row + r))

    def _add(self, out, kind, row, matches, mine_rows, mine: _Side, other: _Side, is_left):
        if mine.outer and not matches:
            out.append(INSERT, row + other.nulls if is_left else other.nulls + row)
            return
        if other.outer:
            for e in matches:
                if self._count(e, mine_rows, is_left) == 0:
                    out.append(DELETE, mine.nulls + e if is_left else e + mine.nulls)
        self._joined(out, INSERT if (mine.outer or other.outer) else kind, row, matches, is_left)

    def _retract(self, out, kind, row, matches, mine_rows, mine: _Side, other: _Side, is_left):
        if not matches:
            if mine.outer:
                out.append(DELETE, row + other.nulls if is_left else other.nulls + row)
            return
        self._joined(out, DELETE if mine.outer else kind, row, matches, is_left)
        if other.outer:
            for e in matches:
                if self._count(e, mine_rows, is_left) == 0:
                    out.append(INSERT, mine.nulls + e if is_left else e + mine.nulls)

    @staticmethod
    def _joined(out: Batch, kind: int, row: tuple, matches: list[tuple], is_left: bool) -> None:
        kinds, rows = out.kinds, out.rows
        for e in matches:
            kinds.append(kind)
            rows.append(row + e if is_left else e + row)
