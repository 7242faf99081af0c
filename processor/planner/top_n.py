"""``SELECT ... FROM (SELECT ..., ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..) AS rn FROM t)
WHERE rn <= N`` to Rank: Top-N, and deduplication (``rn = 1`` ordered by a time attribute),
which Flink 2.3 also plans and prints as Rank."""

from __future__ import annotations

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import BIGINT, DataType
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import Scope, ScopeColumn, bind
from deltaflow.processor.planner.relation import Rel, fields_of
from deltaflow.processor.planner.relops import (
    expand_star,
    filter_rel,
    project_rel,
    require_no_window,
)
from deltaflow.processor.planner.window_rank import tvf_partitioned, window_rank
from deltaflow.processor.sql.errors import position


def row_number_item(select: exp.Select) -> tuple[exp.Subquery, exp.Expr] | None:
    """The subquery in FROM and its ROW_NUMBER() item, when ``select`` is a Top-N pattern."""
    from_ = select.args.get("from_") or select.args.get("from")
    sub = from_.this if from_ is not None else None
    if (
        not isinstance(sub, exp.Subquery)
        or not isinstance(sub.this, exp.Select)
        or select.args.get("joins")
    ):
        return None
    for item in sub.this.expressions:
        inner = item.unalias()
        if isinstance(inner, exp.Window) and isinstance(inner.this, exp.RowNumber):
            return sub, item
    return None


def bind_top_n(binder, select: exp.Select, sub: exp.Subquery, rn_item: exp.Expr) -> Rel:  # noqa: ANN001 - QueryBinder
    inner: exp.Select = sub.this
    rel = binder.froms.from_clause(inner)
    window = rn_item.unalias()
    assert isinstance(window, exp.Window)  # the caller found a ROW_NUMBER() OVER item
    if not tvf_partitioned(rel, _partition(rel, window, binder.functions)):
        require_no_window(rel, "ROW_NUMBER()", rn_item)
    if inner.args.get("where") is not None:
        rel = filter_rel(rel, bind(inner.args["where"].this, rel.scope(binder.functions)))
    rn = rn_item.alias or "rn"
    where = select.args.get("where")
    rank_start, rank_end, rest = _rank_bound(where.this if where is not None else None, rn, select)
    uses_rn = any(
        isinstance(e, exp.Star) or c.name == rn or isinstance(c.this, exp.Star)
        for e in [*select.expressions, *([rest] if rest else [])]
        for c in [e, *e.find_all(exp.Column)]
        if isinstance(c, exp.Column | exp.Star)
    )  # SELECT * keeps rn in the output, as in Flink
    ranked = _rank_node(rel, window, (rank_start, rank_end), rn, uses_rn, binder.functions)
    items = []
    for item in expand_star(inner.expressions, rel):
        if item is rn_item:
            if uses_rn:
                items.append(exp.alias_(exp.column(rn, quoted=True), rn))
        else:
            items.append(item)
    out = project_rel(ranked, items, binder.functions).requalified(sub.alias or None)
    if rest is not None:
        out = filter_rel(out, bind(rest, out.scope(binder.functions)))
    return out


def _rank_node(
    rel: Rel, window: exp.Window, bounds: tuple[int, int], rn: str, uses_rn: bool, functions
) -> Rel:  # noqa: ANN001
    scope = Scope(rel.columns, functions)
    partition = tuple(_column_index(p, scope) for p in window.args.get("partition_by") or [])
    order_by = window.args.get("order")
    order = []
    for o in order_by.expressions if order_by else []:
        asc = not o.args.get("desc")
        order.append((_column_index(o.this, scope), asc, bool(o.args.get("nulls_first", asc))))
    if not order:
        raise SqlError("ROW_NUMBER() needs ORDER BY in its OVER clause", *position(window))
    time_attr = rel.columns[order[0][0]].time_attr
    cols = list(rel.columns)
    if uses_rn:
        cols.append(ScopeColumn(None, rn, DataType(BIGINT, False)))
    node = L.Rank([rel.node], fields_of(cols), partition_keys=partition, order_keys=tuple(order),
                  rank_start=bounds[0], rank_end=bounds[1], output_rank_number=uses_rn, time_order=time_attr)  # fmt: skip
    return Rel(window_rank(rel, node) or node, cols)  # PARTITION BY window bounds: WindowRank


def _partition(rel: Rel, window: exp.Window, functions) -> tuple[int, ...]:  # noqa: ANN001
    scope = Scope(rel.columns, functions)
    return tuple(_column_index(p, scope) for p in window.args.get("partition_by") or [])


def _column_index(node: exp.Expr, scope: Scope) -> int:
    ref = bind(node, scope)
    index = getattr(ref, "index", None)
    if index is None or not isinstance(node, exp.Column):
        raise SqlError(
            "PARTITION BY and ORDER BY of ROW_NUMBER() take columns; compute expressions in a subquery",
            *position(node),
        )
    return index


def _rank_bound(
    cond: exp.Expr | None, rn: str, select: exp.Select
) -> tuple[int, int, exp.Expr | None]:
    """(rank start, rank end, remaining conjuncts) of the outer WHERE: ``rn <= N``, ``rn < N``,
    ``rn = N``, ``rn >= M``, ``rn > M`` and ``rn BETWEEN M AND N`` with integer literals."""
    parts = (
        list(cond.flatten()) if isinstance(cond, exp.And) else [cond] if cond is not None else []
    )
    start, end = 1, None
    rest: exp.Expr | None = None
    for p in parts:
        bound = _bound(p, rn)
        if bound is None:
            rest = p if rest is None else exp.And(this=rest, expression=p)
            continue
        low, high = bound
        start = max(start, low) if low is not None else start
        end = (
            min(end, high)
            if end is not None and high is not None
            else end
            if high is None
            else high
        )
    if end is None:
        raise SqlError(
            f"ROW_NUMBER() needs an upper bound in the outer WHERE, such as {rn} <= 10 or {rn} = 1",
            *position(select))  # fmt: skip
    if start > end:
        raise SqlError(
            f"the bounds on {rn} leave no rows (from {start} to {end})", *position(select)
        )
    return start, end, rest


def _bound(p: exp.Expr, rn: str) -> tuple[int | None, int | None] | None:
    """(lowest, highest) rank a conjunct on ``rn`` keeps, or None when it is not one."""
    if isinstance(p, exp.Between) and isinstance(p.this, exp.Column) and p.this.name == rn:
        low, high = p.args.get("low"), p.args.get("high")
        if isinstance(low, exp.Literal) and isinstance(high, exp.Literal):
            return int(low.this), int(high.this)
        return None
    ops = (exp.LTE, exp.LT, exp.EQ, exp.GTE, exp.GT)
    if not (isinstance(p, ops) and isinstance(p.this, exp.Column) and p.this.name == rn):
        return None
    if not (isinstance(p.expression, exp.Literal) and not p.expression.is_string):
        return None
    n = int(p.expression.this)
    return {
        exp.LTE: (None, n),
        exp.LT: (None, n - 1),
        exp.EQ: (n, n),
        exp.GTE: (n, None),
        exp.GT: (n + 1, None),
    }[type(p)]
