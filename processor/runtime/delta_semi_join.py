"""DeltaSemiJoin: a semi / anti join's changelog computed from the sources' mirrors, with no
join state (the rules are those of ``semi_join``, Flink's StreamingSemiAntiJoinOperator).

Each input is a source scan; its batch is applied to that table's mirror and passed through
the side's Calc. A left change looks up the right rows of its key (one lookup per distinct
key of the batch) and is emitted with its kind when it matches (semi) or matches nothing
(anti). A right batch looks up the left rows of its keys and the right rows as they were
before the batch; each left row's number of matching right rows is counted once per key,
then updated change by change, and a left row whose count goes 0 -> 1 or 1 -> 0 is emitted
as the regular operator emits it. A mirror holds one row per primary key, so left rows
have no copies.
"""

from __future__ import annotations

from deltaflow.formats.changelog import ADDS, DELETE, INSERT, Batch
from deltaflow.processor.exprs.compile import compile_predicate
from deltaflow.processor.plan import DeltaSemiJoin
from deltaflow.processor.runtime.base import Operator
from deltaflow.processor.runtime.mirror import SourceReader


class DeltaSemiJoinOperator(Operator):
    def __init__(self, node: DeltaSemiJoin, backend, ctx) -> None:  # noqa: ANN001
        self.anti = node.anti
        self.readers = (
            SourceReader(node.left, node.left_keys, backend, ctx, node.inputs[0].types),
            SourceReader(node.right, node.right_keys, backend, ctx, node.inputs[1].types),
        )
        self.condition = None
        if node.condition is not None:
            self.condition = compile_predicate(node.condition, ctx.eval_context())

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        mine, other = self.readers[port], self.readers[1 - port]
        kinds, rows = mine.changes(batch)
        if not rows:
            return Batch()
        keys = list(map(mine.key_of, rows))
        live = [k for k in dict.fromkeys(keys) if None not in k]
        if port == 0:
            # a self-join: the right input has not taken the batch yet when the left sees it
            rights = other.rows(live, batch) if live else {}
            return self._left(kinds, rows, keys, rights)
        lefts = other.rows(live, None) if live else {}
        before = mine.rows(live, batch) if live else {}
        return self._right(kinds, rows, keys, lefts, before)

    def _matches(self, left: tuple, rights: list[tuple]) -> int:
        cond = self.condition
        if cond is None:
            return len(rights)
        return sum(1 for r in rights if cond(left + r))

    def _left(self, kinds, rows, keys, rights) -> Batch:  # noqa: ANN001
        out = Batch()
        anti = self.anti
        for kind, row, key in zip(kinds, rows, keys, strict=True):
            found = rights.get(key)
            matched = self._matches(row, found) if found and None not in key else 0
            if (matched > 0) != anti:
                out.append(kind, row)
        return out

    def _right(self, kinds, rows, keys, lefts, before) -> Batch:  # noqa: ANN001
        out = Batch()
        cond, anti = self.condition, self.anti
        counts: dict[tuple, list[int]] = {}
        for kind, row, key in zip(kinds, rows, keys, strict=True):
            if None in key or not lefts.get(key):
                continue
            mine = lefts[key]
            if key not in counts:
                counts[key] = [self._matches(lrow, before.get(key, [])) for lrow in mine]
            n = counts[key]
            adds = ADDS[kind]
            for i, lrow in enumerate(mine):
                if cond is not None and not cond(lrow + row):
                    continue
                n[i] += 1 if adds else -1
                if n[i] == (1 if adds else 0):
                    out.append((DELETE if adds else INSERT) if anti else kind, lrow)
        return out
