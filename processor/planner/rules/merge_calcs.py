"""Fuse a Calc over a Calc into one (Materialize's MapFilterProject): one compiled function."""

from __future__ import annotations

from dataclasses import replace

from deltaflow.processor.exprs.functions import infer_call
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, UdfCall
from deltaflow.processor.planner import logical as L


def merge_calcs(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    node = L.with_inputs(node, [merge_calcs(c, settings) for c in node.inputs])
    if (
        not (isinstance(node, L.Calc) and isinstance(node.inputs[0], L.Calc))
        if node.inputs
        else True
    ):
        return node
    lower = node.inputs[0]
    assert isinstance(node, L.Calc) and isinstance(lower, L.Calc)
    projection = [substitute(e, lower.projection) for e in node.projection]
    cond = node.condition and substitute(node.condition, lower.projection)
    if lower.condition is not None and cond is not None:
        cond = infer_call("AND", [lower.condition, cond])
    elif lower.condition is not None:
        cond = lower.condition
    return L.Calc(lower.inputs, node.fields, projection=projection, condition=cond)


def substitute(expr: Expr, below: list[Expr]) -> Expr:
    """``expr`` over a Calc's output rewritten over that Calc's input."""
    if isinstance(expr, InputRef):
        return below[expr.index]
    if isinstance(expr, Call | UdfCall):
        return replace(expr, operands=tuple(substitute(o, below) for o in expr.operands))
    return expr
