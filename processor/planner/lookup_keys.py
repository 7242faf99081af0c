"""A lookup join's node, with lookup keys computed from the probe row.

``JOIN dim FOR SYSTEM_TIME AS OF s.p ON mod(s.auction, 10000) = dim.key``: as Flink does, a
Calc under the LookupJoin appends each such expression of the probe row's columns as a
column (``$f<n>``), which then probes the table's column like a plain equi-join key, and a
Calc over it leaves those columns out again.
"""

from __future__ import annotations

from dataclasses import replace

from deltaflow.processor.exprs.functions import is_deterministic
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, UdfCall, children, input_refs
from deltaflow.processor.plan import Field
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.relation import and_all, conjuncts_of, unique_fields


def lookup_join_node(left: L.LNode, table, join_type: str, keys, out) -> L.LNode:  # noqa: ANN001
    """The LookupJoin of ``left`` against ``table``; ``keys`` = (probe, lookup, rest) over
    (left + table) columns, ``out`` the joined ScopeColumns."""
    lk, rk, rest = keys
    width = len(left.fields)
    computed, kept = [], []
    for cond in conjuncts_of(rest):
        pair = _computed_pair(cond, width)
        if pair is None:
            kept.append(cond)
        else:
            computed.append(pair)
    if not computed:
        return L.LookupJoin([left], unique_fields(out), join_type=join_type, table=table,
                            probe_keys=lk, lookup_keys=rk, condition=rest)  # fmt: skip
    n = len(computed)
    projection: list[Expr] = [InputRef(f.type, i) for i, f in enumerate(left.fields)]
    projection += [expr for expr, _ in computed]
    fields = list(left.fields) + [
        Field(f"$f{width + i}", e.type) for i, (e, _) in enumerate(computed)
    ]
    probe = L.Calc([left], fields, projection=projection)
    joined = unique_fields(out[:width]) + fields[width:] + unique_fields(out)[width:]
    node = L.LookupJoin(
        [probe], joined, join_type=join_type, table=table,
        probe_keys=lk + tuple(width + i for i in range(n)),
        lookup_keys=rk + tuple(col - width for _, col in computed),
        condition=and_all([_past(c, width, n) for c in kept]),
    )  # fmt: skip
    keep: list[Expr] = [
        InputRef(f.type, i) for i, f in enumerate(joined) if not width <= i < width + n
    ]
    return L.Calc([node], unique_fields(out), projection=keep)


def _computed_pair(cond: Expr, width: int) -> tuple[Expr, int] | None:
    """``expr(probe columns) = table column`` (either way round) as (expr, table column)."""
    if not (isinstance(cond, Call) and cond.op == "=" and len(cond.operands) == 2):
        return None
    for a, b in (cond.operands, cond.operands[::-1]):
        if not (isinstance(b, InputRef) and b.index >= width) or isinstance(a, InputRef):
            continue
        refs = input_refs(a)
        if refs and max(refs) < width and _deterministic(a):
            return a, b.index
    return None


def _past(expr: Expr, width: int, n: int) -> Expr:
    """``expr`` with the table's column indexes moved past ``n`` appended probe columns."""
    if isinstance(expr, InputRef):
        return InputRef(expr.type, expr.index + n) if expr.index >= width else expr
    if isinstance(expr, Call | UdfCall):
        return replace(expr, operands=tuple(_past(o, width, n) for o in expr.operands))
    return expr


def _deterministic(expr: Expr) -> bool:
    if isinstance(expr, Call) and not is_deterministic(expr.op):
        return False
    if isinstance(expr, UdfCall) and not expr.deterministic:
        return False
    return all(_deterministic(c) for c in children(expr))
