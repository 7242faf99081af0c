"""Changelog-mode and upsert-key inference: bottom-up from the sources, then refined
top-down from the sinks (a consumer that does not need -U rows lets its producer drop them)."""

from __future__ import annotations

from deltaflow.processor.planner import logical as L


def derive(node: L.LNode) -> None:
    """Bottom-up: what each node can produce, and its upsert keys."""
    for child in node.inputs:
        derive(child)
    node.mode = node.produces([c.mode for c in node.inputs])
    node.keys = node.upsert_keys()


def refine(node: L.LNode, needs_ub: bool) -> L.LNode:
    """Top-down: drop -U where no consumer needs them; a source that cannot stop emitting
    them gets a DropUpdateBefore above it. Returns the node to use in place of ``node``."""
    for i, (child, need) in enumerate(
        zip(node.inputs, node.needs_update_before(needs_ub), strict=True)
    ):
        node.inputs[i] = refine(child, need)
    if needs_ub or L.UB not in node.mode:
        return node
    if node.can_drop_update_before():
        node.mode = node.mode - {L.UB}
        return node
    drop = L.DropUpdateBefore([node], list(node.fields))
    drop.mode = node.mode - {L.UB}
    drop.keys = node.keys
    return drop


def producer_of_updates(node: L.LNode) -> L.LNode:
    """The node that introduces updates below a pass-through chain (named in sink errors)."""
    while (
        isinstance(node, L.Calc | L.DropUpdateBefore)
        and node.inputs
        and node.inputs[0].mode != L.INSERT_ONLY
    ):
        node = node.inputs[0]
    return node
