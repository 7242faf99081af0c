"""Move WHERE conjuncts of a Calc over a Join into the join, as Flink does: an equality of a
left and a right column becomes a join key (so ``FROM a, b WHERE a.x = b.y`` is an equi-join,
not a cross join), other two-sided conjuncts of an inner join become its condition, and a
conjunct on one side only filters that input before the join (the preserved side of an
outer join). Non-deterministic conjuncts stay where they are."""

from __future__ import annotations

from dataclasses import replace

from deltaflow.processor.exprs.functions import is_deterministic
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, UdfCall, children, input_refs
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.binder import and_all, conjuncts_of


def push_filters(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    node.inputs = [push_filters(c, settings) for c in node.inputs]
    if not (
        isinstance(node, L.Calc)
        and node.condition is not None
        and isinstance(node.inputs[0], L.Join)
    ):
        return node
    join = node.inputs[0]
    width = len(join.inputs[0].fields)
    keep: list[Expr] = []
    sides: tuple[list[Expr], list[Expr]] = ([], [])
    for cond in conjuncts_of(node.condition):
        refs = input_refs(cond)
        if not refs or not _deterministic(cond):
            keep.append(cond)
        elif max(refs) < width and join.join_type in ("INNER", "LEFT"):
            sides[0].append(cond)
        elif min(refs) >= width and join.join_type in ("INNER", "RIGHT"):
            sides[1].append(shift(cond, -width))
        elif join.join_type == "INNER":
            _into_join(join, cond, width)
        else:
            keep.append(cond)
    for i, conds in enumerate(sides):
        if conds:
            join.inputs[i] = _filter(join.inputs[i], conds)
    node.condition = and_all(keep)
    unchanged = all(isinstance(p, InputRef) and p.index == i for i, p in enumerate(node.projection))
    if node.condition is None and unchanged and len(node.projection) == len(join.fields):
        return join
    return node


def _into_join(join: L.Join, cond: Expr, width: int) -> None:
    """An equality of one left and one right column becomes a key pair, anything else the condition."""
    if (
        isinstance(cond, Call)
        and cond.op == "="
        and all(isinstance(o, InputRef) for o in cond.operands)
    ):
        a, b = sorted(o.index for o in cond.operands)  # type: ignore[attr-defined]
        if a < width <= b:
            join.left_keys += (a,)
            join.right_keys += (b - width,)
            return
    join.condition = and_all([*conjuncts_of(join.condition), cond])


def _filter(node: L.LNode, conds: list[Expr]) -> L.LNode:
    projection: list[Expr] = [InputRef(f.type, i) for i, f in enumerate(node.fields)]
    return L.Calc([node], list(node.fields), projection=projection, condition=and_all(conds))


def shift(expr: Expr, delta: int) -> Expr:
    """``expr`` with every column index moved by ``delta``."""
    if isinstance(expr, InputRef):
        return InputRef(expr.type, expr.index + delta)
    if isinstance(expr, Call | UdfCall):
        return replace(expr, operands=tuple(shift(o, delta) for o in expr.operands))
    return expr


def _deterministic(expr: Expr) -> bool:
    if isinstance(expr, Call) and not is_deterministic(expr.op):
        return False
    if isinstance(expr, UdfCall) and not expr.deterministic:
        return False
    return all(_deterministic(c) for c in children(expr))
