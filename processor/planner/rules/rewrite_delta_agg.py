"""``table.optimizer.delta-agg.strategy``: a GROUP BY over a mirrored source becomes a
DeltaAggregate, which keeps no accumulators: each group a batch changes is read back from
the source's mirror (its rows before the batch) and the batch's changes are folded in.

Values as for the delta join (see ``rewrite_delta_join``): NONE; AUTO (default) rewrites only
when the table's ``'bucket.key'`` lies within the group key; FORCE derives the index and
fails with the reason when the aggregate is not eligible; EVENTUAL is FORCE here (an
aggregate's output is exact either way).

Eligible: a non-windowed GROUP BY with a group key, over a changelog source with a primary
key under at most one Calc, group keys that are plain source columns, no non-deterministic
function in the Calc, and only COUNT, SUM, SUM0, AVG and MIN/MAX (DISTINCT and FILTER
allowed). LISTAGG, FIRST_VALUE and LAST_VALUE depend on the order rows arrived in, which a
mirror (rows by primary key) does not keep, so they stay on GroupAggregate.
"""

from __future__ import annotations

from deltaflow.formats.errors import PlanError
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.delta_nodes import (
    DeltaAggregate,
    SourceRead,
    choose_index,
    read_source,
    strategy_of,
)
from deltaflow.processor.planner.explain import describe
from deltaflow.processor.planner.traits import derive

STRATEGY = "table.optimizer.delta-agg.strategy"
ORDER_FREE = frozenset({"COUNT", "SUM", "SUM0", "$SUM0", "AVG", "MIN", "MAX"})


def rewrite_delta_agg(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    strategy = strategy_of(settings, STRATEGY)
    if strategy == "NONE":
        return node
    node.inputs = [rewrite_delta_agg(c, settings) for c in node.inputs]
    if type(node) is not L.Aggregate:
        return node
    read = _eligible(node, strategy)
    if isinstance(read, SourceRead):
        return DeltaAggregate(
            node.inputs,
            node.fields,
            group_keys=node.group_keys,
            aggs=node.aggs,
            index=read.index,
            positions=read.positions,
            index_names=read.index_names,
        )
    if strategy in ("FORCE", "EVENTUAL"):
        derive(node)
        raise PlanError(
            f"{STRATEGY} = '{strategy}': {describe(node)} cannot be a delta aggregate (rule "
            f"rewrite_delta_agg): {read}; SET it to 'AUTO' or 'NONE' to keep GroupAggregate",
            node=describe(node),
        )
    return node


def _eligible(node: L.Aggregate, strategy: str) -> SourceRead | str:
    if not node.group_keys:
        return "it has no GROUP BY key to look the mirror up by"
    unordered = [a.function for a in node.aggs if a.function.upper() not in ORDER_FREE]
    if unordered:
        return (
            f"{unordered[0]} depends on the order rows arrived in, which the mirror does not keep"
        )
    read = read_source(node.inputs[0], node.group_keys, "input")
    if isinstance(read, str):
        return read
    reason = choose_index(read, strategy)
    return reason if reason else read
