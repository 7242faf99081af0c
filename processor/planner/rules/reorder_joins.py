"""Join a chain of INNER joins in a connected order when the written order would cross two
inputs with no equality between them although WHERE and ON connect them (TPC-H Q2, Q8, Q9:
``FROM part, supplier, partsupp ... WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey``
joins ``part`` with ``supplier`` first, a keyless cross product).

A chain is a left-deep tree of plain INNER joins (commas, CROSS JOIN, JOIN ... ON) with the
WHERE Calc right above it; its inputs (a table, a subquery, an outer / semi / lateral /
temporal / window join) are kept whole, so nothing moves across them. The order keeps the
written one as far as it can: when the next input has no equality with the inputs joined so
far, the first later input that has one comes first. A chain whose written order has no
such step is left exactly as it is. Otherwise the joins are rebuilt in that order without
conditions, every ON conjunct goes onto the top join and the WHERE stays in its Calc
(push_filters then moves each conjunct to the lowest join holding its columns), and a Calc
puts the columns back in the written order, so the rows are the same. A deliberate
difference from Flink 2.3, which does not reorder joins by default
(docs/FLINK_COMPATIBILITY.md, Join planning).
"""

from __future__ import annotations

from deltaflow.processor.exprs.functions import infer_call
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, input_refs
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.binder import and_all, conjuncts_of
from deltaflow.processor.planner.rules.merge_calcs import substitute
from deltaflow.processor.planner.rules.push_filters import deterministic, factor_or
from deltaflow.processor.planner.semi_join import SemiJoin


def reorder_joins(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    return _walk(node, {})


def _walk(node: L.LNode, done: dict[int, L.LNode]) -> L.LNode:
    """``node`` with its chains reordered; a node shared by several parents (a table's Calc
    read twice) is rewritten once."""
    if id(node) in done:
        return done[id(node)]
    if isinstance(node, L.Calc) and node.inputs:
        out = L.with_inputs(
            node, [_under_where(node.inputs[0], conjuncts_of(node.condition), done)]
        )
    elif _is_inner(node):
        out = _reorder(node, [], done)  # type: ignore[arg-type]
    else:
        out = L.with_inputs(node, [_walk(c, done) for c in node.inputs])
    done[id(node)] = out
    return out


def _under_where(node: L.LNode, where: list[Expr], done: dict[int, L.LNode]) -> L.LNode:
    """``node`` walked under a WHERE: its conjuncts count for a chain at ``node`` or under
    the preserved side of LEFT joins and the left side of semi / anti joins (where
    push_filters takes those over that side; TPC-H Q2's scalar subquery is a LEFT join above
    the FROM's chain)."""
    if _is_inner(node):
        return _reorder(node, where, done)  # type: ignore[arg-type]
    if type(node) is L.Join and node.join_type == "LEFT":  # type: ignore[attr-defined]
        width = len(node.inputs[0].fields)
        left = [c for c in where if input_refs(c) and max(input_refs(c)) < width]
        return L.with_inputs(
            node, [_under_where(node.inputs[0], left, done), _walk(node.inputs[1], done)]
        )
    if isinstance(node, SemiJoin):  # its rows are its left input's
        return L.with_inputs(
            node, [_under_where(node.inputs[0], where, done), _walk(node.inputs[1], done)]
        )
    return _walk(node, done)


def _is_inner(node: L.LNode) -> bool:
    return type(node) is L.Join and node.join_type == "INNER"  # type: ignore[attr-defined]


def _reorder(top: L.Join, where: list[Expr], done: dict[int, L.LNode]) -> L.LNode:
    """The chain under ``top`` in a connected order (a Calc restoring the written columns
    above it), or ``top`` itself with its inputs walked when the written order is one."""
    joins: list[L.Join] = []
    node: L.LNode = top
    while _is_inner(node):
        joins.append(node)  # type: ignore[arg-type]
        node = node.inputs[0]
    joins.reverse()
    leaves = [_walk(x, done) for x in [node] + [j.inputs[1] for j in joins]]
    on = [c for j in joins for c in _on_conjuncts(j)]
    conds = [x for c in where + on for x in factor_or(c)]
    order = _connected_order(leaves, conds)
    if order == list(range(len(leaves))) or not all(map(deterministic, conds)):
        return _rebuild_written(joins, leaves)
    return _rebuild(top, leaves, order, on)


def _on_conjuncts(join: L.Join) -> list[Expr]:
    """The join's ON condition, its key pairs as equalities again (over its own row)."""
    width = len(join.inputs[0].fields)
    keys = [
        infer_call(
            "=",
            [
                InputRef(join.fields[a].type, a),
                InputRef(join.fields[width + b].type, width + b),
            ],
        )
        for a, b in zip(join.left_keys, join.right_keys, strict=True)
    ]
    return keys + conjuncts_of(join.condition)


def _connected_order(leaves: list[L.LNode], conds: list[Expr]) -> list[int]:
    """The written order, except that an input with no equality to the inputs before it
    gives way to the first later input that has one."""
    owner = [i for i, leaf in enumerate(leaves) for _ in leaf.fields]
    edges = [e for c in conds if (e := _equality(c, owner)) is not None]
    order, rest = [0], list(range(1, len(leaves)))
    while rest:
        joined = set(order)
        pick = next((r for r in rest if _linked(joined, r, edges)), rest[0])
        order.append(pick)
        rest.remove(pick)
    return order


def _equality(cond: Expr, owner: list[int]) -> tuple[frozenset[int], frozenset[int]] | None:
    """The inputs each operand of an equality reads, when both read some."""
    if not (isinstance(cond, Call) and cond.op == "=" and len(cond.operands) == 2):
        return None
    a, b = (frozenset(owner[i] for i in input_refs(o)) for o in cond.operands)
    return (a, b) if a and b and not a & b else None


def _linked(
    joined: set[int], leaf: int, edges: list[tuple[frozenset[int], frozenset[int]]]
) -> bool:
    """An equality would be a key of the join of ``joined`` with ``leaf``."""
    one = frozenset((leaf,))
    return any(a <= joined and b == one or b <= joined and a == one for a, b in edges)


def _rebuild_written(joins: list[L.Join], leaves: list[L.LNode]) -> L.LNode:
    node = leaves[0]
    for join, right in zip(joins, leaves[1:], strict=True):
        node = L.with_inputs(join, [node, right])
    return node


def _rebuild(top: L.Join, leaves: list[L.LNode], order: list[int], on: list[Expr]) -> L.LNode:
    """Left-deep joins of ``leaves`` in ``order`` under a Calc giving ``top``'s columns."""
    starts = [0]
    for leaf in leaves:
        starts.append(starts[-1] + len(leaf.fields))
    new_index: dict[int, int] = {}
    for n in order:
        for i in range(starts[n], starts[n + 1]):
            new_index[i] = len(new_index)
    columns = sorted(new_index, key=new_index.__getitem__)  # old index of each new column
    node: L.LNode = leaves[order[0]]
    for k in range(1, len(order)):
        width = len(node.fields) + len(leaves[order[k]].fields)
        node = join = L.Join(
            [node, leaves[order[k]]],
            [top.fields[i] for i in columns[:width]],
            join_type="INNER",
            rowtimes=tuple(sorted(new_index[r] for r in top.rowtimes if new_index[r] < width)),
        )
    moved: list[Expr] = [InputRef(f.type, new_index[i]) for i, f in enumerate(top.fields)]
    join.condition = and_all([substitute(c, moved) for c in on])
    return L.Calc([node], list(top.fields), projection=moved)
