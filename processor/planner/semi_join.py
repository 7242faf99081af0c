"""Semi and anti joins (``IN`` / ``EXISTS``, ``NOT IN`` / ``NOT EXISTS``, INTERSECT /
EXCEPT) as Flink plans them: ``Join(joinType=[LeftSemiJoin|LeftAntiJoin], ...)``.

The output is the left input's rows: a semi join passes a left row while at least one right
row matches it (the equi keys and the ``condition`` over left + right columns), an anti join
while none does. Each key is compared with ``=`` (a NULL matches nothing) unless its entry of
``null_safe`` is set (INTERSECT / EXCEPT compare rows, NULLs equal: Flink's ``IS NOT
DISTINCT FROM``). Traits, as Flink 2.3's EXPLAIN shows them: a semi join of two insert-only
inputs is insert-only, anything else emits ``[I,UB,UA,D]`` (a right change flips left rows in
or out); the output has no upsert key.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from deltaflow.processor import plan as P
from deltaflow.processor.exprs.nodes import Call, Expr
from deltaflow.processor.planner import logical as L


@dataclass(eq=False)
class SemiJoin(L.LNode):
    anti: bool = False
    left_keys: P.Key = ()
    right_keys: P.Key = ()
    condition: Expr | None = None
    null_safe: tuple[bool, ...] = ()
    names: list[str] = field(default_factory=list)  # left + right column names, for EXPLAIN
    reason: str = ""  # why it is not a delta join (rules/rewrite_delta_semi_join), for EXPLAIN

    def produces(self, inputs: list[L.Mode]) -> L.Mode:
        if not self.anti and all(m == L.INSERT_ONLY for m in inputs):
            return L.INSERT_ONLY
        return L.ALL

    def can_drop_update_before(self) -> bool:
        return False  # a right -U retracts left rows with its own kind (Flink's operator)

    def upsert_keys(self) -> tuple[P.Key, ...]:
        return ()

    def input_spec(self, side: int) -> str:
        keys = self.inputs[side].keys
        join_keys = set(self.left_keys if side == 0 else self.right_keys)
        if any(set(k) <= join_keys for k in keys):
            return "JoinKeyContainsUniqueKey"
        return "HasUniqueKey" if keys else "NoUniqueKey"


def describe_semi_join(node: SemiJoin, render) -> str:  # noqa: ANN001 - explain.render
    names, width = node.names, len(node.inputs[0].fields)
    parts = []
    safe = node.null_safe or (False,) * len(node.left_keys)
    for a, b, is_safe in zip(node.left_keys, node.right_keys, safe, strict=True):
        x, y = names[a], names[b + width]
        if not is_safe:
            parts.append(f"=({x}, {y})")
        elif len(node.left_keys) == 1 and node.condition is None:
            parts.append(f"IS NOT DISTINCT FROM({x}, {y})")
        else:
            parts.append(f"OR(=({x}, {y}), AND(IS NULL({x}), IS NULL({y})))")
    if node.condition is not None:
        parts.append(render(node.condition, names))
    cond = parts[0] if len(parts) == 1 else f"AND({', '.join(parts)})" if parts else "true"
    kind = "LeftAntiJoin" if node.anti else "LeftSemiJoin"
    select = ", ".join(f.name for f in node.fields)
    reason = f", deltaJoin=[not rewritten: {node.reason}]" if node.reason else ""
    return (
        f"Join(joinType=[{kind}], where=[{cond}], select=[{select}], "
        f"leftInputSpec=[{node.input_spec(0)}], rightInputSpec=[{node.input_spec(1)}]{reason})"
    )


def build_semi_join(node: SemiJoin, base: dict[str, Any]) -> P.Node:
    return P.SemiJoin(
        **base,
        anti=node.anti,
        left_keys=node.left_keys,
        right_keys=node.right_keys,
        condition=node.condition,
        null_safe=node.null_safe or (False,) * len(node.left_keys),
    )


def without_impossible_nulls(cond: Expr | None) -> Expr | None:
    """``cond`` without the ``IS NULL(x)`` branches of an OR whose ``x`` cannot be NULL (NOT IN
    over NOT NULL columns: Flink's condition shows only the nullable sides), the OR flat."""
    if not isinstance(cond, Call):
        return cond
    if cond.op == "AND":
        return replace(cond, operands=tuple(without_impossible_nulls(o) for o in cond.operands))  # type: ignore[misc]  # an operand stays an Expr
    if cond.op != "OR":
        return cond
    branches = [b for b in _disjuncts(cond) if not _impossible_null(b)]
    if len(branches) == 1:
        return branches[0]
    return Call(cond.type, "OR", tuple(branches))  # one OR, printed as Flink prints it


def _disjuncts(cond: Expr) -> list[Expr]:
    if isinstance(cond, Call) and cond.op == "OR":
        return [x for o in cond.operands for x in _disjuncts(o)]
    return [cond]


def _impossible_null(e: Expr) -> bool:
    return isinstance(e, Call) and e.op == "IS NULL" and not e.operands[0].type.nullable
