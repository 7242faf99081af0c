"""UNION ALL, UNION, INTERSECT and EXCEPT (ALL and distinct) to logical nodes, as Flink
plans them.

UNION: a GroupAggregate on every column over the UNION ALL. INTERSECT / EXCEPT: a semi /
anti join of the two sides on every column with NULLs equal (``IS NOT DISTINCT FROM``),
under a GroupAggregate on every column. INTERSECT ALL / EXCEPT ALL: each row's copies per
side counted in a GroupAggregate over the UNION ALL of the marked sides, and the row
repeated as many times as it is left with (``$REPLICATE_ROWS$1``, a Correlate).
"""

from __future__ import annotations

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import BIGINT, BOOLEAN, DataType
from deltaflow.processor.exprs.coercion import common_type
from deltaflow.processor.exprs.functions import infer_call
from deltaflow.processor.exprs.nodes import Expr, InputRef, Literal
from deltaflow.processor.plan import AggCall, Field
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import ScopeColumn
from deltaflow.processor.planner.correlate import Correlate
from deltaflow.processor.planner.relation import Rel, fields_of, unique_fields
from deltaflow.processor.planner.relops import cast_rel
from deltaflow.processor.planner.semi_join import SemiJoin
from deltaflow.processor.sql.errors import position

_LONG = DataType(BIGINT, False)
_BOOL = DataType(BOOLEAN, True)
REPLICATE_ROWS = "$REPLICATE_ROWS$1"
_REPLICATE = "deltaflow.processor.exprs.gen_nested.replicate_rows"


def bind_set_operation(binder, node: exp.SetOperation) -> Rel:  # noqa: ANN001 - QueryBinder
    word = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}[type(node)]
    distinct = bool(node.args.get("distinct"))
    if node.args.get("order") is not None or node.args.get("limit") is not None:
        raise SqlError(
            f"ORDER BY / LIMIT over a {word} is not supported yet; wrap it in a subquery: "
            f"SELECT * FROM (... {word} ...) ORDER BY ... LIMIT n", *position(node))  # fmt: skip
    label = f"{word}{'' if distinct else ' ALL'}"
    cols, inputs = _aligned(binder, node, label)
    if word == "UNION":
        out = Rel(L.Union(inputs, fields_of(cols)), cols)
        if not distinct:
            return out
        keys = tuple(range(len(cols)))
        return Rel(L.Aggregate([out.node], fields_of(cols), group_keys=keys, aggs=[]), cols)
    if distinct:
        return _semi(cols, inputs, word == "INTERSECT")
    return _replicated(cols, inputs, word == "INTERSECT")


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


def _semi(cols: list[ScopeColumn], inputs: list[L.LNode], intersect: bool) -> Rel:
    """Flink's plan: a semi (INTERSECT) or anti (EXCEPT) join on every column, NULLs equal,
    under a GroupAggregate on every column (each row once)."""
    n = len(cols)
    names = [f.name for f in unique_fields([*cols, *_columns(inputs[1])])]
    keys = tuple(range(n))
    join = SemiJoin(inputs, fields_of(cols), anti=not intersect, left_keys=keys,
                    right_keys=keys, null_safe=(True,) * n, names=names)  # fmt: skip
    return Rel(L.Aggregate([join], fields_of(cols), group_keys=keys, aggs=[]), cols)


def _columns(node: L.LNode) -> list[ScopeColumn]:
    return [ScopeColumn(None, f.name, f.type) for f in node.fields]


def _replicated(cols: list[ScopeColumn], inputs: list[L.LNode], intersect: bool) -> Rel:
    """INTERSECT ALL / EXCEPT ALL as Flink plans them: each side's rows marked, their UNION
    ALL counted per row (INTERSECT: COUNT of each side's marker, EXCEPT: SUM of 1 / -1), a
    Calc keeping the rows with copies left and their number (the smaller count; the sum),
    and ``$REPLICATE_ROWS$1`` repeating each row that many times (a Correlate)."""
    n = len(cols)
    if intersect:
        markers = [("vcol_left_marker", _BOOL), ("vcol_right_marker", _BOOL)]
        values: list[list[Expr]] = [[Literal(_BOOL, True), Literal(_BOOL, None)],
                                    [Literal(_BOOL, None), Literal(_BOOL, True)]]  # fmt: skip
        aggs = [AggCall("COUNT", (n,), _LONG, "vcol_left_cnt"),
                AggCall("COUNT", (n + 1,), _LONG, "vcol_right_cnt")]  # fmt: skip
    else:
        markers = [("vcol_marker", _LONG)]
        values = [[Literal(_LONG, 1)], [Literal(_LONG, -1)]]
        aggs = [AggCall("SUM", (n,), _LONG, "sum_vcol_marker")]
    fields = [*fields_of(cols), *(Field(name, t) for name, t in markers)]
    marked: list[L.LNode] = []
    for node, extra in zip(inputs, values, strict=True):
        projection: list[Expr] = [InputRef(f.type, i) for i, f in enumerate(node.fields)]
        marked.append(L.Calc([node], fields, projection=projection + extra))
    agg_fields = [*fields_of(cols), *(Field(a.name, a.type) for a in aggs)]
    agg = L.Aggregate([L.Union(marked, fields)], agg_fields, group_keys=tuple(range(n)), aggs=aggs)
    refs = [InputRef(c.type, i) for i, c in enumerate(cols)]
    copies: Expr
    if intersect:
        left, right = InputRef(_LONG, n), InputRef(_LONG, n + 1)
        copies = infer_call("IF", [infer_call(">", [left, right]), right, left])
        one = Literal(_LONG, 1)
        keep = infer_call("AND", [infer_call(">=", [left, one]), infer_call(">=", [right, one])])
        first = "$f0"
    else:
        copies = InputRef(_LONG, n)
        keep = infer_call(">", [copies, Literal(_LONG, 0)])
        first = "sum_vcol_marker"
    counted = L.Calc([agg], [Field(first, _LONG), *fields_of(cols)], projection=[copies, *refs],
                     condition=keep)  # fmt: skip
    return Rel(replicate_rows(counted, cols), cols)


def replicate_rows(counted: L.LNode, cols: list[ScopeColumn]) -> L.LNode:
    """``$REPLICATE_ROWS$1(n, cols..)`` over rows (n, cols..): each row's columns n times,
    then those columns alone."""
    n = len(cols)
    inner: list[Expr] = [InputRef(f.type, i) for i, f in enumerate(counted.fields)]
    declared = [ScopeColumn(None, c.name, c.type) for c in cols]
    names = unique_fields([*_columns(counted), *declared])
    corr = Correlate([counted], names, function=REPLICATE_ROWS, target=_REPLICATE,
                     operands=inner, join_type="INNER")  # fmt: skip
    projection: list[Expr] = [InputRef(c.type, n + 1 + i) for i, c in enumerate(cols)]
    return L.Calc([corr], fields_of(cols), projection=projection)
