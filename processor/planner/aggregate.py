"""GROUP BY / HAVING / aggregate calls to GroupAggregate or WindowAggregate.

As in Flink: a Calc computes the group keys and aggregate arguments, the aggregate
outputs keys then aggregate values (then window_start, window_end, window_time for a
window aggregate), and a Calc over it evaluates the SELECT items and HAVING.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import BIGINT, DataType, decimal, string
from deltaflow.processor.exprs.functions import function_names, infer_call
from deltaflow.processor.exprs.nested import field_name, holds_collection
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef
from deltaflow.processor.plan import AggCall, Field, WindowSpec
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import Scope, ScopeColumn, bind
from deltaflow.processor.planner.reduce_variance import M2, reduce_variances
from deltaflow.processor.planner.relation import Rel, fields_of
from deltaflow.processor.planner.relops import Functions, item_name
from deltaflow.processor.planner.window_props import grouped_bounds, window_over_bounds
from deltaflow.processor.planner.window_tvf import materialize_window, session_rows_grouped
from deltaflow.processor.planner.windows import session_keys
from deltaflow.processor.sql.errors import closest, position

AGGREGATES = {
    exp.Count: "COUNT", exp.Sum: "SUM", exp.Avg: "AVG", exp.Min: "MIN", exp.Max: "MAX",
    exp.FirstValue: "FIRST_VALUE", exp.LastValue: "LAST_VALUE",
}  # fmt: skip
NAMED_AGGREGATES = frozenset({"LISTAGG", "FIRST_VALUE", "LAST_VALUE", "SUM0", M2})
_SPECIAL_CALLS = frozenset({"PROCTIME", "TIMESTAMPDIFF", "TIMESTAMPADD"})  # bound on their own


@dataclass(frozen=True)
class AggUse:
    node: exp.Expr  # the aggregate call
    name: str  # the alias, EXPR$<item> for an unaliased item, else $f<column>
    whole: exp.Expr  # what the SELECT item holds: the call, or ``call FILTER (WHERE cond)``

    @property
    def condition(self) -> exp.Expr | None:
        return self.whole.expression.this if isinstance(self.whole, exp.Filter) else None


def has_aggregate(items: list[exp.Expr]) -> bool:
    return any(
        _is_aggregate(n) for item in items for n in item.find_all(exp.AggFunc, exp.Anonymous)
    )


def bind_aggregate(
    select: exp.Select, rel: Rel, items: list[exp.Expr], functions: Functions
) -> Rel:
    scope = rel.scope(functions)
    items, reduced_having = reduce_variances(items, _having(select), scope)
    if reduced_having is not None:
        select = select.copy()
        select.set("having", exp.Having(this=reduced_having))
    group = select.args.get("group")
    grouped = [bind(g, scope) for g in group.expressions] if group else []
    if session_rows_grouped(rel, [g.index for g in grouped if isinstance(g, InputRef)]):
        rel = materialize_window(rel)  # a GroupAggregate over the session rows, as Flink
        scope = rel.scope(functions)
    window_idx = _window_columns(rel)
    bounds = (
        None
        if window_idx
        else grouped_bounds(rel, [bind(g, scope) for g in group.expressions] if group else [])
    )
    if bounds is not None:  # GROUP BY an earlier window aggregate's window_start, window_end
        window_idx = {bounds[0], bounds[1]}
    keys: list[tuple[exp.Expr, Expr]] = []
    grouped_windows = set()
    for g in group.expressions if group else []:
        ref = bind(g, scope)
        if holds_collection(ref.type) and window_idx:
            raise SqlError(
                f"deltaflow cannot group a window by a {ref.type.sql()} value yet; group by its "
                f"elements or fields (arr[1], r.f), or by CAST({g.sql()} AS STRING)", *position(g))  # fmt: skip
        if isinstance(ref, InputRef) and ref.index in window_idx:
            grouped_windows.add(ref.index)
        else:
            keys.append((g, ref))
    if (
        bounds is None
        and window_idx
        and not {min(window_idx), min(window_idx) + 1} <= grouped_windows
    ):
        raise SqlError(
            "a window aggregation groups by window_start and window_end; add both to GROUP BY",
            *position(group or select))  # fmt: skip
    having = select.args.get("having")
    uses = _aggregate_uses(items, having.this if having else None, len(keys))
    pre = [k for _, k in keys]
    pre_cols = [_pre_column(e, i, rel, key=True) for i, e in enumerate(pre)]
    aggs = []
    for use in uses:
        args = []
        for arg in _agg_args(use.node):
            pre.append(bind(arg, scope))
            pre_cols.append(_pre_column(pre[-1], len(pre) - 1, rel))
            args.append(len(pre) - 1)
        agg = AggCall(_agg_function(use.node), tuple(args), _agg_type(use.node, pre, args), use.name,
                      distinct=_is_distinct(use.node))  # fmt: skip
        if use.condition is not None:  # as Flink: IS TRUE, so an unknown condition skips the row
            pre.append(infer_call("IS TRUE", [bind(use.condition, scope)]))
            pre_cols.append(_pre_column(pre[-1], len(pre) - 1, rel))
            agg = replace(agg, filter_arg=len(pre) - 1)
        aggs.append(agg)
    out_cols = pre_cols[: len(keys)] + [ScopeColumn(None, a.name, a.type) for a in aggs]
    if bounds is not None:
        node = window_over_bounds(rel, bounds, pre, pre_cols, out_cols, len(keys), aggs)
    else:
        node = _aggregate_node(rel, pre, pre_cols, out_cols, len(keys), aggs)
    return _select_over(select, Rel(node, out_cols), keys, uses, items, functions)


def _having(select: exp.Select) -> exp.Expr | None:
    having = select.args.get("having")
    return having.this if having is not None else None


def _window_columns(rel: Rel) -> set[int]:
    n = len(rel.columns)
    return {n - 3, n - 2, n - 1} if rel.window is not None else set()


def _pre_column(expr: Expr, i: int, rel: Rel, key: bool = False) -> ScopeColumn:
    if isinstance(expr, InputRef):
        src = rel.columns[expr.index]
        return ScopeColumn(src.qualifier, src.name, expr.type)
    if key and isinstance(expr, Call) and expr.op == "FIELD":  # GROUP BY r.f: the key is named f
        return ScopeColumn(None, field_name(expr), expr.type)
    return ScopeColumn(None, f"$f{i}", expr.type)


def _aggregate_node(
    rel: Rel,
    pre: list[Expr],
    pre_cols: list[ScopeColumn],
    out_cols: list[ScopeColumn],
    nkeys: int,
    aggs: list[AggCall],
) -> L.LNode:
    keys = tuple(range(nkeys))
    if rel.window is None:
        calc = L.Calc([rel.node], fields_of(pre_cols), projection=pre)
        return L.Aggregate([calc], fields_of(out_cols), group_keys=keys, aggs=aggs)
    spec = rel.window
    time_col = rel.columns[spec.time_column]
    projection = [*pre, InputRef(time_col.type, spec.time_column)]
    calc = L.Calc(
        [rel.node],
        [*fields_of(pre_cols), Field(time_col.name, time_col.type)],
        projection=projection,
    )
    moved = WindowSpec(
        spec.kind, len(pre), spec.size_ms, spec.slide_ms, spec.step_ms, spec.offset_ms,
        session_keys(spec, pre[:nkeys]), proctime=spec.proctime,
    )  # fmt: skip
    out_cols += rel.columns[-3:]
    return L.WindowAggregate([calc], fields_of(out_cols), window=moved, group_keys=keys, aggs=aggs)


def _select_over(
    select: exp.Select,
    agg: Rel,
    keys,
    uses: list[AggUse],
    items: list[exp.Expr],
    functions: Functions,
) -> Rel:  # noqa: ANN001
    """The SELECT items and HAVING, evaluated over the aggregate's output."""
    targets = {
        g.sql(): i
        for i, (g, ref) in enumerate(keys)
        if not isinstance(g, exp.Column) or not isinstance(ref, InputRef)  # r.f is a Column too
    }
    targets.update({u.whole.sql(): len(keys) + i for i, u in enumerate(uses)})
    placeholders = {f"$agg{i}": i for i in set(targets.values())}

    def swap(n: exp.Expr) -> exp.Expr:
        at = targets.get(n.sql())
        return exp.column(f"$agg{at}", quoted=True) if at is not None else n

    scope = Scope(agg.columns, functions, placeholders)
    having = select.args.get("having")
    for item in [*items, *([having.this] if having else [])]:
        _check_grouped(item.copy().transform(swap), scope)
    cond = bind(having.this.copy().transform(swap), scope) if having else None
    projection = [bind(item.copy().transform(swap).unalias(), scope) for item in items]
    cols = [  # a window bound or window_time selected as it is stays one
        replace(agg.columns[p.index], qualifier=None, name=item_name(it, i), type=p.type)
        if isinstance(p, InputRef) and agg.columns[p.index].window_prop is not None
        else ScopeColumn(None, item_name(it, i), p.type)
        for i, (it, p) in enumerate(zip(items, projection, strict=True))
    ]
    unchanged = (
        cond is None
        and len(projection) == len(agg.columns)
        and all(isinstance(p, InputRef) and p.index == i for i, p in enumerate(projection))
    )
    if unchanged:
        return Rel(agg.node, cols)
    return Rel(L.Calc([agg.node], fields_of(cols), projection=projection, condition=cond), cols)


def _check_grouped(node: exp.Expr, scope: Scope) -> None:
    """Flink's check: a column outside aggregate calls must be a GROUP BY column."""
    for column in node.find_all(exp.Column):
        if column.name not in scope.placeholders and not scope.has(column):
            _check_calls_around(column, scope)
            raise SqlError(
                f"Expression '{column.name}' is not being grouped; add it to GROUP BY or aggregate "
                f"it, e.g. MAX({column.name})", *position(column))  # fmt: skip


def _check_calls_around(column: exp.Column, scope: Scope) -> None:
    """An ungrouped column inside a call of an unknown function (``SUMM(amount)``): the
    unknown name is the mistake to report, not the column."""
    call = column.find_ancestor(exp.Anonymous)
    while call is not None:
        name = str(call.this).upper()
        known = name in NAMED_AGGREGATES or name in scope.functions or name in _SPECIAL_CALLS
        if not known and name not in function_names():
            meta = call.meta or {}
            line, col = position(call)
            col -= int(meta.get("end", 0)) - int(meta.get("start", 0))  # the name's first letter
            pool = [*AGGREGATES.values(), *NAMED_AGGREGATES, *function_names()]
            raise SqlError(
                f"unknown function {name}: no match found for function signature {name}; it "
                "is neither a function Flink has that deltaflow supports nor one registered "
                f"with CREATE FUNCTION{closest(name, pool)}",
                line, col, name,
            )  # fmt: skip
        call = call.find_ancestor(exp.Anonymous)


def _aggregate_uses(items: list[exp.Expr], having: exp.Expr | None, nkeys: int) -> list[AggUse]:
    seen: dict[str, AggUse] = {}
    for index, item in enumerate([*items, *([having] if having is not None else [])]):
        for node in item.find_all(exp.AggFunc, exp.Anonymous):
            whole = node.parent if isinstance(node.parent, exp.Filter) else node
            if not _is_aggregate(node) or whole.sql() in seen:
                continue
            if any(_is_aggregate(a) for a in node.find_all(exp.AggFunc) if a is not node):
                raise SqlError(
                    "aggregate calls cannot be nested; aggregate in a subquery first",
                    *position(node),
                )
            direct = index < len(items) and item.unalias() is whole
            name = (
                item.alias
                if direct and isinstance(item, exp.Alias)
                else f"EXPR${index}"
                if direct
                else ""
            )
            seen[whole.sql()] = AggUse(node, name or f"$f{nkeys + len(seen)}", whole)
    return list(seen.values())


def _is_aggregate(node: exp.Expr) -> bool:
    if isinstance(node, exp.Anonymous):
        return str(node.this).upper() in NAMED_AGGREGATES
    return isinstance(node, exp.AggFunc) and node.find_ancestor(exp.Window) is None


def _agg_function(call: exp.Expr) -> str:
    for cls, name in AGGREGATES.items():
        if isinstance(call, cls):
            return name
    if isinstance(call, exp.Anonymous):
        return str(call.this).upper()
    raise SqlError(
        f"deltaflow does not support the aggregate {call.sql()!r}; use COUNT, SUM, AVG, MIN, MAX, LISTAGG, FIRST_VALUE, LAST_VALUE, STDDEV_POP, STDDEV_SAMP, VAR_POP or VAR_SAMP",
        *position(call),
    )


def _is_distinct(call: exp.Expr) -> bool:
    if isinstance(call, exp.Anonymous):
        return bool(call.expressions) and isinstance(call.expressions[0], exp.Distinct)
    return isinstance(call.this, exp.Distinct)


def _agg_args(call: exp.Expr) -> list[exp.Expr]:
    if isinstance(call, exp.Anonymous):  # LISTAGG([DISTINCT] value[, separator]) passes both
        first = call.expressions[:1]
        if first and isinstance(first[0], exp.Distinct):
            return [*first[0].expressions, *call.expressions[1:2]]
        return list(call.expressions[:2])
    arg = call.this
    if isinstance(arg, exp.Distinct):
        return list(arg.expressions)
    if arg is None or isinstance(arg, exp.Star):
        return []
    return [arg]


def _agg_type(call: exp.Expr, pre: list[Expr], args: list[int]) -> DataType:
    """Flink's result types: COUNT BIGINT NOT NULL, SUM/AVG of DECIMAL widened to 38 digits."""
    name = _agg_function(call)
    if name == "COUNT":
        return DataType(BIGINT, False)
    if name == "LISTAGG":
        return string()
    if name == M2:
        return DataType("DOUBLE", True)
    t = pre[args[0]].type.with_nullable(True)
    if name in ("SUM", "SUM0") and t.root == "DECIMAL":
        return decimal(38, t.scale or 0)
    if name == "AVG" and t.root == "DECIMAL":
        return decimal(38, max(t.scale or 0, 6))
    return t
