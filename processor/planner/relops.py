"""Small relational steps shared by the query binders: filter, project, star expansion, names."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import DataType
from deltaflow.processor.exprs.functions import make_cast
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef
from deltaflow.processor.plan import Field
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import ScopeColumn, bind
from deltaflow.processor.planner.relation import Rel, and_all, conjuncts_of, fields_of
from deltaflow.processor.sql.errors import position

Functions = dict[str, str]


def require_no_window(rel: Rel, what: str, node: exp.Expr) -> None:
    """A window table function's output only feeds a window aggregation (GROUP BY window_start,
    window_end) in deltaflow; window joins, window Top-N and plain projections are not run."""
    if rel.window is not None:
        raise SqlError(
            f"{what} over a window table function is not supported yet; aggregate it with "
            "GROUP BY window_start, window_end, ...", *position(node))  # fmt: skip


def filter_rel(rel: Rel, cond: Expr) -> Rel:
    # a window TVF's last three columns are not yet in its node's output: the Calc passes only
    # the node's own columns (a filter on window columns is refused before this)
    real = rel.columns[:-3] if rel.window is not None else rel.columns
    projection: list[Expr] = [InputRef(c.type, i) for i, c in enumerate(real)]
    node = L.Calc(
        [rel.node],
        fields_of(real),
        projection=projection,
        condition=and_all(conjuncts_of(cond)),
    )
    return Rel(node, rel.columns, rel.window)


def project_rel(rel: Rel, items: list[exp.Expr], functions: Functions) -> Rel:
    """SELECT items over ``rel``; no Calc when they are ``rel``'s columns unchanged."""
    scope = rel.scope(functions)
    projection = [bind(item.unalias(), scope) for item in items]
    cols = []
    for i, (item, expr) in enumerate(zip(items, projection, strict=True)):
        src = rel.columns[expr.index] if isinstance(expr, InputRef) else None
        if src is not None:  # a column kept as it is keeps its time and window attributes
            cols.append(replace(src, qualifier=None, name=item_name(item, i), type=expr.type))
        else:
            attr = "PROCTIME" if _is_proctime(expr) else None
            cols.append(ScopeColumn(None, item_name(item, i), expr.type, attr))
    unchanged = len(projection) == len(rel.columns) and all(
        isinstance(p, InputRef) and p.index == i and cols[i].name == rel.columns[i].name
        for i, p in enumerate(projection)
    )
    if unchanged:
        return Rel(rel.node, cols, rel.window)
    return Rel(L.Calc([rel.node], fields_of(cols), projection=projection), cols)


def _is_proctime(expr: Expr) -> bool:
    """``PROCTIME()`` in a SELECT (a view's, a subquery's) is a processing-time attribute."""
    return isinstance(expr, Call) and expr.op == "PROCTIME" and not expr.operands


def expand_star(items: list[exp.Expr], rel: Rel) -> list[exp.Expr]:
    """``*`` and ``t.*`` replaced by the columns they stand for."""
    out: list[exp.Expr] = []
    for item in items:
        qualified_star = isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
        if not (isinstance(item, exp.Star) or qualified_star):
            out.append(item)
            continue
        qual = item.table if isinstance(item, exp.Column) else None  # a qualified star
        for c in rel.columns:
            if (c.qualifier or "").startswith("__sq"):
                continue  # a decorrelated subquery's join (subqueries.py)
            if not qual or c.qualifier == qual:
                out.append(
                    exp.column(c.name, table=c.qualifier) if c.qualifier else exp.column(c.name)
                )
    return out


def item_name(item: exp.Expr, position: int) -> str:
    """Flink's name for a SELECT item: its alias, its column name, else ``EXPR$<position>``."""
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Column):
        return item.name
    return f"EXPR${position}"


def cast_rel(rel: Rel, types: list[DataType]) -> L.LNode:
    """``rel``'s node with a Calc casting the columns whose type differs (nullability aside)."""
    projection: list[Expr] = []
    for i, (col, target) in enumerate(zip(rel.columns, types, strict=True)):
        ref = InputRef(col.type, i)
        same = col.type.with_nullable(True) == target.with_nullable(True) or col.type.root == "NULL"
        projection.append(ref if same else make_cast(ref, target.with_nullable(col.type.nullable)))
    if all(isinstance(p, InputRef) for p in projection):
        return rel.node
    fields = [Field(c.name, p.type) for c, p in zip(rel.columns, projection, strict=True)]
    return L.Calc([rel.node], fields, projection=projection)
