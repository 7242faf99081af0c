"""Changelog-mode and upsert-key inference, as Flink's two steps: what each node can produce
(bottom-up from the sources), then which update kinds each consumer needs (top-down from
the sinks). A consumer that needs no -U rows asks its producer to leave them out; a
producer that cannot (a CDC source, a filtering Calc) keeps them, and the consumer takes
both kinds, as Flink falls back from "update-after only" to "before and after"."""

from __future__ import annotations

from deltaflow.processor.planner import logical as L


def derive(node: L.LNode) -> None:
    """Bottom-up: what each node can produce, and its upsert keys."""
    for child in node.inputs:
        derive(child)
    node.mode = node.produces([c.mode for c in node.inputs])
    node.keys = node.upsert_keys()


def refine(node: L.LNode, needs_ub: bool) -> L.LNode:
    """Top-down: drop -U rows no consumer needs. ``needs_ub`` False is only passed to a node
    whose ``can_drop_update_before()`` holds. Returns ``node``."""
    if not needs_ub:
        node.mode = node.mode - {L.UB}
    for child, need in zip(node.inputs, node.input_needs_update_before(needs_ub), strict=True):
        refine(child, need or not child.can_drop_update_before())
    return node


def producer_of_updates(node: L.LNode) -> L.LNode:
    """The node that introduces updates below a pass-through chain (named in sink errors)."""
    while (
        isinstance(node, L.Calc | L.DropUpdateBefore)
        and node.inputs
        and node.inputs[0].mode != L.INSERT_ONLY
    ):
        node = node.inputs[0]
    return node
