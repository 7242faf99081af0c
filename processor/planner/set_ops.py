"""UNION ALL, UNION, INTERSECT and EXCEPT (distinct) to logical nodes.

UNION is Flink's plan: a GroupAggregate on every column over the UNION ALL. INTERSECT and
EXCEPT count each row's copies per side: the UNION ALL of the left rows with markers
(1, 0) and the right rows with (0, 1), a GroupAggregate on every column summing both
markers, and a filter (both sums above 0 for INTERSECT; the left's above 0 and the right's
0 for EXCEPT). Grouping makes NULLs equal, as the set operations compare rows. Flink plans
them as a semi / anti join under a GroupAggregate; the rows are the same.
"""

from __future__ import annotations

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import BIGINT, DataType
from deltaflow.processor.exprs.coercion import common_type
from deltaflow.processor.exprs.functions import infer_call
from deltaflow.processor.exprs.nodes import Expr, InputRef, Literal
from deltaflow.processor.plan import AggCall, Field
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import ScopeColumn
from deltaflow.processor.planner.relation import Rel, fields_of
from deltaflow.processor.planner.relops import cast_rel
from deltaflow.processor.sql.errors import position

_LONG = DataType(BIGINT, False)


def bind_set_operation(binder, node: exp.SetOperation) -> Rel:  # noqa: ANN001 - QueryBinder
    word = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}[type(node)]
    distinct = bool(node.args.get("distinct"))
    if node.args.get("order") is not None or node.args.get("limit") is not None:
        raise SqlError(
            f"ORDER BY / LIMIT over a {word} is not supported yet; wrap it in a subquery: "
            f"SELECT * FROM (... {word} ...) ORDER BY ... LIMIT n", *position(node))  # fmt: skip
    if word != "UNION" and not distinct:
        raise SqlError(f"{word} ALL is not supported yet; {word} (distinct) is", *position(node))
    label = f"{word}{'' if distinct else ' ALL'}"
    cols, inputs = _aligned(binder, node, label)
    if word == "UNION":
        out = Rel(L.Union(inputs, fields_of(cols)), cols)
        if not distinct:
            return out
        keys = tuple(range(len(cols)))
        return Rel(L.Aggregate([out.node], fields_of(cols), group_keys=keys, aggs=[]), cols)
    return _counted(cols, inputs, word == "INTERSECT")


def _aligned(binder, node: exp.SetOperation, label: str) -> tuple[list[ScopeColumn], list[L.LNode]]:  # noqa: ANN001
    """Both sides' columns cast to their common types (the left side's names)."""
    left, right = binder.query(node.this), binder.query(node.expression)
    if len(left.columns) != len(right.columns):
        raise SqlError(
            f"both sides of {label} need the same number of columns ({len(left.columns)} and "
            f"{len(right.columns)})", *position(node))  # fmt: skip
    types = []
    for i, (a, b) in enumerate(zip(left.columns, right.columns, strict=True)):
        common = common_type([a.type, b.type])
        if common is None:
            raise SqlError(
                f"{label} column {i + 1} ({a.name}) has types {a.type.sql()} and {b.type.sql()}, "
                "which have no common type; CAST one side", *position(node))  # fmt: skip
        types.append(common)
    cols = [ScopeColumn(None, a.name, t) for a, t in zip(left.columns, types, strict=True)]
    return cols, [cast_rel(side, types) for side in (left, right)]


def _counted(cols: list[ScopeColumn], inputs: list[L.LNode], intersect: bool) -> Rel:
    n = len(cols)
    fields = [*fields_of(cols), Field("$left", _LONG), Field("$right", _LONG)]
    marked: list[L.LNode] = []
    for side, node in enumerate(inputs):
        projection: list[Expr] = [InputRef(f.type, i) for i, f in enumerate(node.fields)]
        projection += [Literal(_LONG, 1 - side), Literal(_LONG, side)]
        marked.append(L.Calc([node], fields, projection=projection))
    sums = [AggCall("SUM", (n + s,), DataType(BIGINT, True), name) for s, name in
            enumerate(("$left", "$right"))]  # fmt: skip
    agg = L.Aggregate(
        [L.Union(marked, fields)], [*fields_of(cols), *(Field(a.name, a.type) for a in sums)],
        group_keys=tuple(range(n)), aggs=sums,
    )  # fmt: skip
    zero = Literal(_LONG, 0)
    left = infer_call(">", [InputRef(sums[0].type, n), zero])
    right = infer_call(">" if intersect else "=", [InputRef(sums[1].type, n + 1), zero])
    projection = [InputRef(c.type, i) for i, c in enumerate(cols)]
    calc = L.Calc([agg], fields_of(cols), projection=projection,
                  condition=infer_call("AND", [left, right]))  # fmt: skip
    return Rel(calc, cols)
