"""``table.optimizer.delta-join.strategy`` for semi and anti joins (IN / EXISTS, NOT IN / NOT
EXISTS): an eligible one (``delta_semi_join.eligible``) becomes a DeltaSemiJoin, which looks
each change up in the other side's mirror and keeps no join state. AUTO rewrites every
eligible one and records why not on the others' EXPLAIN lines; FORCE and EVENTUAL fail with
the reason."""

from __future__ import annotations

import copy

from deltaflow.formats.errors import PlanError
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.delta_nodes import strategy_of
from deltaflow.processor.planner.delta_semi_join import delta_semi_join, eligible
from deltaflow.processor.planner.explain import describe
from deltaflow.processor.planner.rules.rewrite_delta_join import STRATEGY
from deltaflow.processor.planner.semi_join import SemiJoin
from deltaflow.processor.planner.traits import derive


def rewrite_delta_semi_join(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    strategy = strategy_of(settings, STRATEGY)
    if strategy == "NONE":
        return node
    node = L.with_inputs(node, [rewrite_delta_semi_join(c, settings) for c in node.inputs])
    if type(node) is not SemiJoin:
        return node
    reads = eligible(node, strategy)
    if isinstance(reads, tuple):
        return delta_semi_join(node, *reads)
    if strategy in ("FORCE", "EVENTUAL"):
        derive(node)
        raise PlanError(
            f"{STRATEGY} = '{strategy}': {describe(node)} cannot be a delta join (rule "
            f"rewrite_delta_semi_join): {reads}; SET it to 'AUTO' or 'NONE' to keep the regular "
            "join", node=describe(node))  # fmt: skip
    marked = copy.copy(node)  # the rule copies what it changes (the tree may be shared)
    marked.reason = reads
    return marked
