"""LookupJoin: ``JOIN dim FOR SYSTEM_TIME AS OF s.proc_time ON ...`` against an LMDB mirror.

The looked-up table is mirrored in an LMDB indexed table (rows keyed by all their
columns, indexed by the lookup key columns). Its changes arrive through
``Graph.push_lookup``; the stream input probes the mirror as it is at that
moment, as Flink probes the external table: each input change emits one joined
row per matching table row with the input's own kind, and a LEFT join emits the
input padded with NULLs when nothing matches. The non-equi ``condition`` filters
the pairs; a NULL probe key matches nothing. Later changes of the table do not
revise rows already joined (Flink's processing-time lookup semantics).
"""

from __future__ import annotations

from deltaflow.formats.changelog import Batch
from deltaflow.processor.exprs.compile import compile_predicate
from deltaflow.processor.plan import LookupJoin
from deltaflow.processor.runtime.base import Operator, key_getter


class LookupJoinOperator(Operator):
    def __init__(self, node: LookupJoin, backend, ctx) -> None:
        width = len(node.table_fields)
        self.table = node.table
        self.mirror = backend.indexed(
            f"{node.node_id}:LookupJoin:mirror",
            list(range(width)),
            {"probe": list(node.lookup_keys)},
        )
        self.probe_of = key_getter(node.probe_keys)
        self.nulls = (None,) * width
        self.left = node.join_type.upper() == "LEFT"
        self.condition = None
        if node.condition is not None:
            self.condition = compile_predicate(node.condition, ctx.eval_context())

    def apply_table(self, batch: Batch) -> None:
        """Changes of the looked-up table, applied to its mirror."""
        if batch:
            self.mirror.apply(batch.kinds, batch.rows)

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        keys = [self.probe_of(r) for r in batch.rows]
        wanted = [k for k in dict.fromkeys(keys) if None not in k]
        found = dict(zip(wanted, self.mirror.lookup("probe", wanted), strict=True))
        cond = self.condition
        out = Batch()
        for kind, row, key in zip(batch.kinds, batch.rows, keys, strict=True):
            matched = False
            for other in found.get(key, ()):
                joined = row + other
                if cond is None or cond(joined):
                    out.append(kind, joined)
                    matched = True
            if not matched and self.left:
                out.append(kind, row + self.nulls)
        return out
