"""Push every conjunct of WHERE and ON down to the lowest join or input holding all its
columns, as Flink's FilterJoinRule / JoinConditionPushRule do, at every level of a join tree
however it was written (``FROM a, b, c WHERE ...``, CROSS JOIN plus WHERE, JOIN ... ON,
mixed). An equality of one left and one right column becomes a join key; other two-sided
conjuncts become the join's condition; a conjunct on one side filters that input. Common
conjuncts of the branches of an OR are factored out first (``(a AND x) OR (a AND y)`` is
``a AND (x OR y)``), so an equality repeated in every branch is a join key (TPC-H Q19).

Outer joins keep their meaning: a WHERE conjunct goes below an outer join only into the
preserved side; an ON conjunct only into the null-producing side (the preserved side's rows
stay whether or not they match). A WHERE conjunct that rejects NULLs of the null-producing
side turns the outer join into an inner one (LEFT into INNER, FULL into LEFT/RIGHT), as
Calcite's ``simplifyJoin`` does. Non-deterministic conjuncts stay where they are written.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from deltaflow.processor.exprs.functions import infer_call, is_deterministic
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, UdfCall, children, input_refs
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.binder import and_all, conjuncts_of
from deltaflow.processor.planner.rules.expr_join_keys import key_join, split_key_equalities
from deltaflow.processor.planner.rules.merge_calcs import substitute
from deltaflow.processor.planner.semi_join import SemiJoin


def push_filters(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    return _push(node, [])


def _push(node: L.LNode, preds: list[Expr]) -> L.LNode:
    """``node`` with the conjuncts ``preds`` (over its output) applied as low as they go."""
    if isinstance(node, L.Calc) and node.inputs:
        return _push_calc(node, preds)
    if type(node) is L.Join:
        return _push_join(node, preds)
    if isinstance(node, SemiJoin):
        return _push_semi(node, preds)
    node = L.with_inputs(node, [_push(c, []) for c in node.inputs])
    return _filter(node, preds)


def _push_calc(calc: L.Calc, preds: list[Expr]) -> L.LNode:
    """Conjuncts over the Calc's output are rewritten over its input (unless they read a
    non-deterministic projection) and join the Calc's own condition on the way down. The Calc
    is copied first: a table's computed-column Calc is one node shared by every scan of the
    table (a self-join), and each side gets its own filters."""
    calc = copy.copy(calc)
    had_condition = calc.condition is not None
    keep: list[Expr] = []
    down: list[Expr] = []
    for c in preds:
        if all(_deterministic(calc.projection[i]) for i in input_refs(c)):
            down.append(substitute(c, calc.projection))
        else:
            keep.append(c)
    stay: list[Expr] = []
    for c in conjuncts_of(calc.condition):
        (down if _deterministic(c) else stay).append(c)
    below = calc.inputs[0]
    if isinstance(below, L.Calc | L.Join | SemiJoin) and below.inputs:
        calc.inputs = [_push(below, down)]
        calc.condition = and_all(stay)
    else:
        calc.inputs = [_push(below, [])]
        calc.condition = and_all(_dedupe(down + stay))
    out = calc.inputs[0]
    identity = len(calc.projection) == len(out.fields) and all(
        isinstance(p, InputRef) and p.index == i for i, p in enumerate(calc.projection)
    )
    same_names = [f.name for f in calc.fields] == [f.name for f in out.fields]
    if calc.condition is None and identity and (same_names or had_condition):
        return _filter(out, keep)
    return _filter(calc, keep)


def _push_join(join: L.Join, preds: list[Expr]) -> L.LNode:
    join = copy.copy(join)  # rewritten below (type, condition, keys, inputs): its own copy
    width = len(join.inputs[0].fields)
    where = [x for c in preds for x in factor_or(c)]
    join.join_type = _simplify_outer(join.join_type, where, width)
    above: list[Expr] = []
    on: list[Expr] = []
    sides: tuple[list[Expr], list[Expr]] = ([], [])
    jt = join.join_type
    for c in where:
        side = _side(c, width)
        if side is None or not _deterministic(c):
            above.append(c)
        elif side == 0 and jt in ("INNER", "LEFT") or side == 1 and jt in ("INNER", "RIGHT"):
            sides[side].append(c)
        elif side == 2 and jt == "INNER":
            on.append(c)
        else:
            above.append(c)
    for c in (x for on_c in conjuncts_of(join.condition) for x in factor_or(on_c)):
        side = _side(c, width)
        if side == 0 and jt in ("INNER", "RIGHT") and _deterministic(c):
            sides[0].append(c)
        elif side == 1 and jt in ("INNER", "LEFT") and _deterministic(c):
            sides[1].append(c)
        else:
            on.append(c)
    if jt == "INNER":
        for c in on:
            for side, derived in _derived_side_filters(c, width):
                sides[side].append(derived)
    join.condition = None
    pairs, on = split_key_equalities(_dedupe(on), width, _deterministic)
    for c in on:
        _into_join(join, c, width)
    join.inputs = [
        _push(join.inputs[0], sides[0]),
        _push(join.inputs[1], [shift(c, -width) for c in sides[1]]),
    ]
    return _filter(key_join(join, pairs) if pairs else join, above)


def _push_semi(join: SemiJoin, preds: list[Expr]) -> L.LNode:
    """A semi / anti join's output is its left rows: conjuncts over it filter the left input.
    Of its condition, a conjunct over right columns alone filters the right input (it only
    narrows the matches), one over left columns alone the left input of a semi join.
    The join is copied first (rules copy what they change)."""
    join = copy.copy(join)
    width = len(join.inputs[0].fields)
    above = [c for c in preds if not _deterministic(c)]
    sides: tuple[list[Expr], list[Expr]] = ([c for c in preds if _deterministic(c)], [])
    on: list[Expr] = []
    for c in conjuncts_of(join.condition):
        side = _side(c, width)
        if side == 1 and _deterministic(c):
            sides[1].append(shift(c, -width))
        elif side == 0 and not join.anti and _deterministic(c):
            sides[0].append(c)
        else:
            on.append(c)
    join.condition = and_all(on)
    join.inputs = [_push(join.inputs[0], sides[0]), _push(join.inputs[1], sides[1])]
    return _filter(join, above)


def _derived_side_filters(cond: Expr, width: int) -> list[tuple[int, Expr]]:
    """For a two-sided OR in an inner join's condition, a filter on each side implied by it
    (Flink's JoinDependentConditionDerivationRule): when every branch holds conjuncts on that
    side alone, their OR over the branches. The join keeps the whole OR."""
    if not (isinstance(cond, Call) and cond.op == "OR" and _deterministic(cond)):
        return []
    branches = [conjuncts_of(b) for b in _disjuncts(cond)]
    out = []
    for side in (0, 1):
        parts = [and_all([c for c in b if _side(c, width) == side]) for b in branches]
        if all(p is not None for p in parts):
            derived = parts[0]
            for p in parts[1:]:
                derived = infer_call("OR", [derived, p])  # type: ignore[list-item]
            out.append((side, derived))
    return out  # type: ignore[return-value]


def _side(cond: Expr, width: int) -> int | None:
    """0: left columns only, 1: right only, 2: both, None: no column."""
    refs = input_refs(cond)
    if not refs:
        return None
    if max(refs) < width:
        return 0
    return 1 if min(refs) >= width else 2


def _simplify_outer(join_type: str, where: list[Expr], width: int) -> str:
    """An outer join whose null-producing side a WHERE conjunct rejects NULLs of is narrower."""
    left_strict = any(_rejects_nulls(c, lambda i: i < width) for c in where)
    right_strict = any(_rejects_nulls(c, lambda i: i >= width) for c in where)
    if join_type == "LEFT" and right_strict or join_type == "RIGHT" and left_strict:
        return "INNER"
    if join_type == "FULL":
        if left_strict and right_strict:
            return "INNER"
        if left_strict:
            return "LEFT"
        if right_strict:
            return "RIGHT"
    return join_type


_STRICT_OPS = frozenset({"=", "<>", "<", "<=", ">", ">=", "IS NOT NULL", "LIKE", "BETWEEN"})
_STRICT_ARITH = frozenset({"+", "-", "*", "/", "CAST", "UPPER", "LOWER"})


def _rejects_nulls(cond: Expr, on_side) -> bool:  # noqa: ANN001 - a predicate on indexes
    """``cond`` is not TRUE when the columns of one side are all NULL: a comparison (or IS NOT
    NULL) with an operand that is such a column, possibly under arithmetic or a cast."""
    if isinstance(cond, Call) and cond.op == "AND":
        return any(_rejects_nulls(o, on_side) for o in cond.operands)
    if isinstance(cond, Call) and cond.op == "OR":
        return all(_rejects_nulls(o, on_side) for o in cond.operands)
    if not (isinstance(cond, Call) and cond.op in _STRICT_OPS):
        return False
    return any(_strict_column(o, on_side) for o in cond.operands)


def _strict_column(e: Expr, on_side) -> bool:  # noqa: ANN001
    if isinstance(e, InputRef):
        return on_side(e.index)
    if isinstance(e, Call) and e.op in _STRICT_ARITH:
        return any(_strict_column(o, on_side) for o in e.operands)
    return False


def factor_or(cond: Expr) -> list[Expr]:
    """``cond`` as conjuncts, with the conjuncts common to every branch of an OR pulled out."""
    if not (isinstance(cond, Call) and cond.op == "OR"):
        return [cond]
    branches = [[_canonical(c) for c in conjuncts_of(b)] for b in _disjuncts(cond)]
    common = [c for c in branches[0] if all(c in b for b in branches[1:])]
    if not common or not all(_deterministic(c) for c in common):
        return [cond]
    rests = [[c for c in b if c not in common] for b in branches]
    if any(not r for r in rests):
        return _dedupe(common)  # a branch holds only the common part: the OR adds nothing
    rest = [and_all(r) for r in rests]
    out = rest[0]
    for r in rest[1:]:
        out = infer_call("OR", [out, r])  # type: ignore[list-item]
    return _dedupe(common) + [out]  # type: ignore[list-item]


def _canonical(cond: Expr) -> Expr:
    """An equality with its operands in one order, so ``a = b`` and ``b = a`` are one conjunct."""
    if isinstance(cond, Call) and cond.op == "=" and len(cond.operands) == 2:
        a, b = cond.operands
        if repr(b) < repr(a):
            return replace(cond, operands=(b, a))
    return cond


def _disjuncts(cond: Expr) -> list[Expr]:
    if isinstance(cond, Call) and cond.op == "OR":
        return [x for o in cond.operands for x in _disjuncts(o)]
    return [cond]


def _dedupe(conds: list[Expr]) -> list[Expr]:
    out: list[Expr] = []
    for c in conds:
        if c not in out:
            out.append(c)
    return out


def _into_join(join: L.Join, cond: Expr, width: int) -> None:
    """An equality of one left and one right column becomes a key pair, anything else the condition."""
    if (
        isinstance(cond, Call)
        and cond.op == "="
        and all(isinstance(o, InputRef) for o in cond.operands)
    ):
        a, b = sorted(o.index for o in cond.operands)  # type: ignore[attr-defined]
        if a < width <= b:
            pairs = set(zip(join.left_keys, join.right_keys, strict=True))
            if (a, b - width) not in pairs:
                join.left_keys += (a,)
                join.right_keys += (b - width,)
            return
    join.condition = and_all([*conjuncts_of(join.condition), cond])


def _filter(node: L.LNode, conds: list[Expr]) -> L.LNode:
    if not conds:
        return node
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


def deterministic(expr: Expr) -> bool:
    """``expr`` holds no non-deterministic function or UDF (such a conjunct stays where written)."""
    return _deterministic(expr)
