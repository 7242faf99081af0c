"""Interval joins: an equi-join whose condition bounds one input's event time by the other's,
``a.ts BETWEEN b.ts - INTERVAL '1' MINUTE AND b.ts`` (or ``>``, ``>=``, ``<``, ``<=`` forms),
planned as Flink's ``IntervalJoin`` instead of a regular join.

The bounds are Flink's ``windowBounds``: a left row at ``tl`` and a right row at ``tr`` can
pair when ``tr + leftLowerBound <= tl <= tr + leftUpperBound`` (ms; a strict bound is moved
by 1 ms). Both inputs must be append-only; the output is append-only too, and each input's
rows are kept only until the watermark passes the last time a row of the other input could
still pair with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltaflow.formats.errors import PlanError
from deltaflow.processor import plan as P
from deltaflow.processor.exprs.coercion import INTERVAL_DAY_TIME
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, Literal
from deltaflow.processor.plan import Key, Mode
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.relation import and_all, conjuncts_of

_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}


@dataclass(eq=False)
class IntervalJoin(L.LNode):
    join_type: str = "INNER"
    left_keys: Key = ()
    right_keys: Key = ()
    condition: Expr | None = None  # the whole non-equi condition, time bounds included
    remaining: Expr | None = None  # what is left of it once the bounds are taken out
    lower_ms: int = 0
    upper_ms: int = 0
    left_time: int = 0  # column of the left input
    right_time: int = 0  # column of the right input

    def produces(self, inputs: list[Mode]) -> Mode:
        from deltaflow.processor.planner.explain import describe  # explain renders this node
        from deltaflow.processor.planner.traits import producer_of_updates

        for child, mode in zip(self.inputs, inputs, strict=True):
            if mode != L.INSERT_ONLY:
                node = describe(producer_of_updates(child))
                raise PlanError(
                    "StreamPhysicalIntervalJoin doesn't support consuming update and delete "
                    f"changes which is produced by node {node}. An interval join (time bounds "
                    "between two event-time attributes) needs append-only inputs; join a "
                    "changelog with a regular join, without the time bounds",
                    node=node,
                )
        return L.INSERT_ONLY


@dataclass(frozen=True)
class _Side:
    """``column + offset_ms`` of one input (0 left, 1 right) of a join condition."""

    side: int
    column: int
    offset: int


def interval_join(join: L.Join) -> IntervalJoin | None:
    """``join`` as an IntervalJoin when its condition bounds a left event-time attribute by a
    right one from both sides; else None (it stays a regular join)."""
    width = len(join.inputs[0].fields)
    lower: dict[tuple[int, int], int] = {}
    upper: dict[tuple[int, int], int] = {}
    bound_conjuncts: dict[tuple[int, int], list[Expr]] = {}
    for cond in conjuncts_of(join.condition):
        for op, a, b in _comparisons(cond):
            found = _bound(op, a, b, width, set(join.rowtimes))
            if found is None:
                continue
            pair, kind, value = found
            table = lower if kind == "lower" else upper
            table[pair] = (
                max(table.get(pair, value), value)
                if kind == "lower"
                else min(table.get(pair, value), value)
            )
            bound_conjuncts.setdefault(pair, []).append(cond)
    pairs = [p for p in lower if p in upper]
    if not pairs:
        return None
    pair = pairs[0]
    taken = {id(c) for c in bound_conjuncts[pair]}
    remaining = and_all([c for c in conjuncts_of(join.condition) if id(c) not in taken])
    node = IntervalJoin(list(join.inputs), list(join.fields), join_type=join.join_type,
                        left_keys=join.left_keys, right_keys=join.right_keys,
                        condition=join.condition, remaining=remaining, lower_ms=lower[pair],
                        upper_ms=upper[pair], left_time=pair[0], right_time=pair[1] - width)  # fmt: skip
    return node


def _comparisons(cond: Expr) -> list[tuple[str, Expr, Expr]]:
    if not isinstance(cond, Call):
        return []
    if cond.op in _FLIP and len(cond.operands) == 2:
        return [(cond.op, cond.operands[0], cond.operands[1])]
    if cond.op == "BETWEEN" and len(cond.operands) == 3:
        x, lo, hi = cond.operands
        return [(">=", x, lo), ("<=", x, hi)]
    return []


def _bound(
    op: str, a: Expr, b: Expr, width: int, rowtimes: set[int]
) -> tuple[tuple[int, int], str, int] | None:
    """``a op b`` as a bound of ``left_time - right_time``: (columns, lower|upper, ms)."""
    x, y = _side(a, width, rowtimes), _side(b, width, rowtimes)
    if x is None or y is None or x.side == y.side:
        return None
    if x.side == 1:
        x, y, op = y, x, _FLIP[op]
    # left + x.offset  op  right + y.offset   =>   left - right  op  y.offset - x.offset
    value = y.offset - x.offset
    pair = (x.column, y.column)
    if op == ">=":
        return pair, "lower", value
    if op == ">":
        return pair, "lower", value + 1
    if op == "<=":
        return pair, "upper", value
    return pair, "upper", value - 1


def _side(expr: Expr, width: int, rowtimes: set[int]) -> _Side | None:
    """``expr`` as an event-time column plus or minus a day-time interval literal."""
    offset = 0
    while isinstance(expr, Call) and expr.op in ("+", "-") and len(expr.operands) == 2:
        a, b = expr.operands
        if isinstance(b, Literal) and b.type.root == INTERVAL_DAY_TIME and b.value is not None:
            offset += b.value if expr.op == "+" else -b.value  # type: ignore[operator]
            expr = a
        elif expr.op == "+" and isinstance(a, Literal) and a.type.root == INTERVAL_DAY_TIME:
            offset += a.value  # type: ignore[operator]
            expr = b
        else:
            return None
    if not isinstance(expr, InputRef) or expr.index not in rowtimes:
        return None
    return _Side(0 if expr.index < width else 1, expr.index, offset)


def describe_interval_join(node: IntervalJoin, render, join_names: dict[str, str]) -> str:  # noqa: ANN001
    names = [f.name for f in node.fields]
    width = len(node.inputs[0].fields)
    parts = [
        f"=({names[a]}, {names[b + width]})"
        for a, b in zip(node.left_keys, node.right_keys, strict=True)
    ]
    parts += [render(c, names) for c in conjuncts_of(node.condition)]
    where = parts[0] if len(parts) == 1 else f"AND({', '.join(parts)})" if parts else "true"
    bounds = (
        f"isRowTime=true, leftLowerBound={node.lower_ms}, leftUpperBound={node.upper_ms}, "
        f"leftTimeIndex={node.left_time}, rightTimeIndex={node.right_time}"
    )
    select = ", ".join(names)
    return (
        f"IntervalJoin(joinType=[{join_names[node.join_type]}], windowBounds=[{bounds}], "
        f"where=[{where}], select=[{select}])"
    )


def build_interval_join(node: IntervalJoin, base: dict[str, Any]) -> P.Node:
    return P.IntervalJoin(
        **base,
        join_type=node.join_type,
        left_keys=node.left_keys,
        right_keys=node.right_keys,
        condition=node.remaining,
        lower_ms=node.lower_ms,
        upper_ms=node.upper_ms,
        left_time=node.left_time,
        right_time=node.right_time,
    )
