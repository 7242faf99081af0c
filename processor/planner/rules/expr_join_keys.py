"""Join keys over expressions, as Flink plans them: an equality ``f(left) = g(right)``
(``a.auction.seller = p.person.id``, ``UPPER(a.x) = b.y``) becomes a key pair over columns
that a Calc below each side computes (``$f5``), and a Calc above the join drops them again,
so the join is keyed rather than a keyless cross product with a condition."""

from __future__ import annotations

from dataclasses import replace

from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, UdfCall, input_refs
from deltaflow.processor.plan import Field
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import ScopeColumn
from deltaflow.processor.planner.binder import unique_fields


def split_key_equalities(
    conds: list[Expr], width: int, deterministic
) -> tuple[list[tuple[Expr, Expr]], list[Expr]]:  # noqa: ANN001 - a predicate on expressions
    """(left expression, right expression) of each equality with one side on each input and
    not both plain columns; the other conditions unchanged."""
    pairs: list[tuple[Expr, Expr]] = []
    rest: list[Expr] = []
    for c in conds:
        if isinstance(c, Call) and c.op == "=" and deterministic(c):
            x, y = c.operands
            sx, sy = _side(x, width), _side(y, width)
            plain = isinstance(x, InputRef) and isinstance(y, InputRef)
            if not plain and {sx, sy} == {0, 1}:
                left, right = (x, y) if sx == 0 else (y, x)
                pairs.append((left, _shift(right, -width)))
                continue
        rest.append(c)
    return pairs, rest


def key_join(join: L.Join, pairs: list[tuple[Expr, Expr]]) -> L.LNode:
    """``join`` with the expression pairs as key columns (a plain column side is used as it is,
    an expression is computed below the join); a Calc above keeps the join's fields."""
    left, right = join.inputs
    lw, rw = len(left.fields), len(right.fields)
    lkeys, lextra = _key_columns([p[0] for p in pairs], lw)
    rkeys, rextra = _key_columns([p[1] for p in pairs], rw)
    nl = len(lextra)
    join.inputs = [_extend(left, lextra), _extend(right, rextra)]
    join.left_keys += lkeys
    join.right_keys += rkeys
    if join.condition is not None:
        join.condition = _remap(join.condition, lw, nl)
    original = list(join.fields)
    nulls_left = join.join_type in ("RIGHT", "FULL")
    nulls_right = join.join_type in ("LEFT", "FULL")
    types = [f.type for f in original[:lw]]
    types += [
        f.type.with_nullable(f.type.nullable or nulls_left) for f in join.inputs[0].fields[lw:]
    ]
    types += [f.type for f in original[lw:]]
    types += [
        f.type.with_nullable(f.type.nullable or nulls_right) for f in join.inputs[1].fields[rw:]
    ]
    cols = [
        ScopeColumn(None, f.name, f.type) for f in join.inputs[0].fields + join.inputs[1].fields
    ]
    join.fields = [Field(f.name, t) for f, t in zip(unique_fields(cols), types, strict=True)]
    keep: list[Expr] = [InputRef(f.type, i if i < lw else i + nl) for i, f in enumerate(original)]
    return L.Calc([join], original, projection=keep)


def _key_columns(exprs: list[Expr], width: int) -> tuple[tuple[int, ...], list[Expr]]:
    """The key column of each expression and the expressions to compute as new columns."""
    keys: list[int] = []
    extra: list[Expr] = []
    for e in exprs:
        if isinstance(e, InputRef):
            keys.append(e.index)
        else:
            keys.append(width + len(extra))
            extra.append(e)
    return tuple(keys), extra


def _extend(node: L.LNode, exprs: list[Expr]) -> L.LNode:
    if not exprs:
        return node
    width = len(node.fields)
    projection: list[Expr] = [InputRef(f.type, i) for i, f in enumerate(node.fields)]
    fields = list(node.fields) + [Field(f"$f{width + i}", e.type) for i, e in enumerate(exprs)]
    return L.Calc([node], fields, projection=projection + exprs)


def _side(e: Expr, width: int) -> int | None:
    refs = input_refs(e)
    if not refs:
        return None
    if max(refs) < width:
        return 0
    return 1 if min(refs) >= width else None


def _shift(e: Expr, delta: int) -> Expr:
    return _map(e, lambda i: i + delta)


def _remap(e: Expr, lw: int, n: int) -> Expr:
    return _map(e, lambda i: i if i < lw else i + n)


def _map(e: Expr, fn) -> Expr:  # noqa: ANN001
    if isinstance(e, InputRef):
        return InputRef(e.type, fn(e.index))
    if isinstance(e, Call | UdfCall):
        return replace(e, operands=tuple(_map(o, fn) for o in e.operands))
    return e
