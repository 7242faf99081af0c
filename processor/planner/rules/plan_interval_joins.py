"""Regular joins whose condition bounds one input's event time by the other's from both sides
become IntervalJoins (after push_filters, so WHERE bounds of an inner join count too, and
before the delta rewrites, which leave an IntervalJoin alone), as Flink plans them."""

from __future__ import annotations

from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.interval_join import interval_join


def plan_interval_joins(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    node = L.with_inputs(node, [plan_interval_joins(c, settings) for c in node.inputs])
    if type(node) is L.Join and node.rowtimes:
        return interval_join(node) or node
    return node
