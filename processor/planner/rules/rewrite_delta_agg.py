"""``table.optimizer.delta-agg.strategy``: a GROUP BY over a mirrored source becomes a
DeltaAggregate, which keeps no accumulators: each group a batch changes is read back from
the source's mirror (its rows before the batch) and the batch's changes are folded in.

Values as for the delta join (see ``rewrite_delta_join``): NONE; AUTO (default) rewrites only
when the table's ``'bucket.key'`` lies within the group key; FORCE derives the index and
fails with the reason when the aggregate is not eligible; EVENTUAL is FORCE here (an
aggregate's output is exact either way).

Eligible: a non-windowed GROUP BY with a group key, over a changelog source with a primary
key under at most one Calc, group keys that are plain source columns, no non-deterministic
function in the Calc, and only COUNT, SUM, SUM0, AVG, MIN/MAX (DISTINCT and FILTER allowed),
LISTAGG (with a constant separator, if any), FIRST_VALUE and LAST_VALUE (DISTINCT and FILTER
allowed). The last three depend on the order values arrived in, which the mirror does not
keep; the operator keeps an arrival number per source row for them
(``runtime/delta_agg_order``). Not rewritten: LISTAGG with a separator column (Flink joins
with the last separator that arrived) and ARRAY/MAP/MULTISET arguments (compared by value).
"""

from __future__ import annotations

from deltaflow.formats.errors import PlanError
from deltaflow.processor.exprs.nodes import Literal
from deltaflow.processor.plan import AggCall
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
ORDERED = frozenset({"LISTAGG", "FIRST_VALUE", "LAST_VALUE"})
_UNHASHABLE = frozenset({"ARRAY", "MAP", "MULTISET"})


def rewrite_delta_agg(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    strategy = strategy_of(settings, STRATEGY)
    if strategy == "NONE":
        return node
    node = L.with_inputs(node, [rewrite_delta_agg(c, settings) for c in node.inputs])
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
    for call in node.aggs:
        reason = _unsupported(call, node.inputs[0])
        if reason:
            return reason
    read = read_source(node.inputs[0], node.group_keys, "input")
    if isinstance(read, str):
        return read
    reason = choose_index(read, strategy)
    return reason if reason else read


def _unsupported(call: AggCall, child: L.LNode) -> str | None:
    name = call.function.upper()
    if name in ORDER_FREE:
        return None
    if name not in ORDERED:
        return f"the delta aggregate does not compute {call.function}"
    if len(call.args) > 1 and not _constant(child, call.args[1]):
        return (
            "LISTAGG with a separator column joins with the last separator that arrived, which "
            "the delta aggregate does not track"
        )
    if call.args and child.fields[call.args[0]].type.root in _UNHASHABLE:
        return f"{name} over a {child.fields[call.args[0]].type.root} column"
    return None


def _constant(child: L.LNode, column: int) -> bool:
    return isinstance(child, L.Calc) and isinstance(child.projection[column], Literal)
