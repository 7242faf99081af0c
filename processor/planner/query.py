"""SELECT to logical nodes: WHERE, GROUP BY/HAVING (group and window aggregates), DISTINCT,
ROW_NUMBER() Top-N / deduplication, UNION ALL and projections."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import BIGINT, DataType, decimal, string
from deltaflow.processor.exprs.nodes import Expr, InputRef
from deltaflow.processor.plan import AggCall, Field
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import Scope, ScopeColumn, bind
from deltaflow.processor.planner.binder import FromBinder, Rel, and_all, conjuncts_of, fields_of
from deltaflow.processor.planner.catalog import Catalog
from deltaflow.processor.sql.errors import position

AGGREGATES = {exp.Count: "COUNT", exp.Sum: "SUM", exp.Avg: "AVG", exp.Min: "MIN", exp.Max: "MAX"}
_ANON_AGGS = {"LISTAGG", "FIRST_VALUE", "LAST_VALUE", "SUM0"}


class QueryBinder:
    def __init__(self, catalog: Catalog, functions: dict[str, tuple[str, bool]]) -> None:
        self.catalog = catalog
        self.functions = functions
        self.froms = FromBinder(catalog, self)

    def query(self, node: exp.Expr) -> Rel:
        if isinstance(node, exp.Subquery):
            return self.query(node.this)
        if isinstance(node, exp.Union):
            return self._union(node)
        if isinstance(node, exp.Select):
            return self._select(node)
        raise SqlError(f"deltaflow does not support {node.key.upper()} queries", *position(node))

    def _union(self, node: exp.Union) -> Rel:
        if node.args.get("distinct"):
            raise SqlError("UNION (distinct) is not supported; write UNION ALL", *position(node))
        left, right = self.query(node.this), self.query(node.expression)
        if len(left.columns) != len(right.columns):
            raise SqlError(
                "both sides of UNION ALL must have the same number of columns", *position(node)
            )
        cols = [
            ScopeColumn(None, a.name, a.type.with_nullable(a.type.nullable or b.type.nullable))
            for a, b in zip(left.columns, right.columns, strict=True)
        ]
        return Rel(L.Union([left.node, right.node], fields_of(cols)), cols)

    def _select(self, select: exp.Select) -> Rel:
        topn = self._top_n(select)
        rel = topn if topn is not None else self.froms.from_clause(select)
        where = select.args.get("where")
        if where is not None and topn is None:
            rel = _filter(rel, bind(where.this, rel.scope(self.functions)))
        items = _expand_star(select.expressions, rel)
        if select.args.get("group") or select.args.get("having") or _has_aggregate(items):
            return self._aggregate(select, rel, items)
        out = _project(rel, items, self.functions)
        if select.args.get("distinct"):
            keys = tuple(range(len(out.columns)))
            out = Rel(
                L.Aggregate([out.node], fields_of(out.columns), group_keys=keys, aggs=[]),
                out.columns,
            )
        return out

    # ---------------------------------------------------------------- aggregation

    def _aggregate(self, select: exp.Select, rel: Rel, items: list[exp.Expr]) -> Rel:
        scope = rel.scope(self.functions)
        group = select.args.get("group")
        group_nodes = list(group.expressions) if group else []
        window_cols = {len(rel.columns) - 3, len(rel.columns) - 2} if rel.window else set()
        keys: list[Expr] = []
        for g in group_nodes:
            ref = bind(g, scope)
            if not (isinstance(ref, InputRef) and ref.index in window_cols):
                keys.append(ref)
        having = select.args.get("having")
        calls = _aggregate_calls([*items, *([having.this] if having else [])])
        pre: list[Expr] = list(keys)
        aggs: list[AggCall] = []
        for i, (call, alias) in enumerate(calls):
            args: list[int] = []
            for a in _agg_args(call):
                pre.append(bind(a, scope))
                args.append(len(pre) - 1)
            name = alias or f"$f{len(keys) + i}"
            aggs.append(
                AggCall(
                    _agg_name(call),
                    tuple(args),
                    _agg_type(call, pre, args),
                    name,
                    distinct=isinstance(call.this, exp.Distinct),
                )
            )
        pre_cols = [ScopeColumn(None, _expr_name(e, rel), e.type) for e in pre]
        calc = L.Calc([rel.node], fields_of(pre_cols), projection=pre)
        key_idx = tuple(range(len(keys)))
        out_cols = [ScopeColumn(None, pre_cols[i].name, pre[i].type) for i in key_idx] + [
            ScopeColumn(None, a.name, a.type) for a in aggs
        ]
        if rel.window is not None:
            wcols = rel.columns[-3:]
            spec = rel.window
            pre.append(InputRef(rel.columns[spec.time_column].type, spec.time_column))
            calc = L.Calc(
                [rel.node], fields_of(pre_cols) + [Field("$time", pre[-1].type)], projection=pre
            )
            spec = type(spec)(
                spec.kind, len(pre) - 1, spec.size_ms, spec.slide_ms, spec.step_ms, spec.offset_ms
            )
            out_cols += list(wcols)
            node: L.LNode = L.WindowAggregate(
                [calc], fields_of(out_cols), window=spec, group_keys=key_idx, aggs=aggs
            )
        else:
            node = L.Aggregate([calc], fields_of(out_cols), group_keys=key_idx, aggs=aggs)
        return self._after_aggregate(
            select, Rel(node, out_cols), group_nodes, calls, len(keys), items, rel
        )

    def _after_aggregate(self, select, agg: Rel, group_nodes, calls, nkeys, items, rel) -> Rel:  # noqa: ANN001
        replaced: dict[str, int] = {}
        for i, g in enumerate(group_nodes):
            if not isinstance(g, exp.Column):
                replaced[g.sql()] = i
        for i, (call, _) in enumerate(calls):
            replaced[call.sql()] = nkeys + i
        placeholders = [ScopeColumn(None, f"__agg{i}", c.type) for i, c in enumerate(agg.columns)]
        scope = Scope(agg.columns + placeholders, self.functions)
        width = len(agg.columns)

        def swap(n: exp.Expr) -> exp.Expr:
            if n.sql() in replaced and not isinstance(n, exp.Column):
                return exp.column(f"__agg{replaced[n.sql()]}")
            return n

        having = select.args.get("having")
        cond = bind(having.this.copy().transform(swap), scope) if having else None
        projection = [bind(i.copy().transform(swap).unalias(), scope) for i in items]
        projection = [
            InputRef(p.type, p.index - width) if isinstance(p, InputRef) and p.index >= width else p
            for p in projection
        ]
        cond = _shift(cond, width)
        cols = [
            ScopeColumn(None, _item_name(it, p, agg.columns), p.type)
            for it, p in zip(items, projection, strict=True)
        ]
        identity = (
            cond is None
            and all(isinstance(p, InputRef) and p.index == i for i, p in enumerate(projection))
            and len(projection) == width
        )
        if identity:
            return Rel(agg.node, cols)
        return Rel(L.Calc([agg.node], fields_of(cols), projection=projection, condition=cond), cols)

    # ---------------------------------------------------------------- Top-N

    def _top_n(self, select: exp.Select) -> Rel | None:
        from_ = select.args.get("from_") or select.args.get("from")
        sub = from_.this if from_ is not None else None
        if (
            not isinstance(sub, exp.Subquery)
            or not isinstance(sub.this, exp.Select)
            or select.args.get("joins")
        ):
            return None
        inner = sub.this
        windows = [
            (i, e)
            for i, e in enumerate(inner.expressions)
            if isinstance(e.unalias(), exp.Window) and isinstance(e.unalias().this, exp.RowNumber)
        ]
        if not windows:
            return None
        return self._bind_top_n(select, sub, inner, *windows[0])

    def _bind_top_n(self, select, sub, inner, rn_at, rn_item) -> Rel:  # noqa: ANN001
        rel = self.froms.from_clause(inner)
        if inner.args.get("where") is not None:
            rel = _filter(rel, bind(inner.args["where"].this, rel.scope(self.functions)))
        scope = rel.scope(self.functions)
        window = rn_item.unalias()
        partition = tuple(bind(p, scope).index for p in window.args.get("partition_by") or [])
        order = []
        for o in window.args.get("order").expressions if window.args.get("order") else []:
            ref = bind(o.this, scope)
            asc = not o.args.get("desc")
            order.append((ref.index, asc, bool(o.args.get("nulls_first", asc))))
        rn_name = rn_item.alias or "rn"
        outer_where = select.args.get("where")
        rank_end, rest = _rank_bound(outer_where.this if outer_where is not None else None, rn_name)
        uses_rn = (
            any(c.name == rn_name for e in select.expressions for c in e.find_all(exp.Column))
            or any(c.name == rn_name for c in rest.find_all(exp.Column))
            if rest is not None
            else any(c.name == rn_name for e in select.expressions for c in e.find_all(exp.Column))
        )
        time_attr = rel.columns[order[0][0]].time_attr if order else None
        rank_cols = list(rel.columns) + (
            [ScopeColumn(None, rn_name, DataType(BIGINT, False))] if uses_rn else []
        )
        if rank_end == 1 and time_attr == "PROCTIME" and not uses_rn:
            node: L.LNode = L.Deduplicate(
                [rel.node], fields_of(rank_cols), keys_=partition, keep_last_row=not order[0][1]
            )
        else:
            node = L.Rank(
                [rel.node],
                fields_of(rank_cols),
                partition_keys=partition,
                order_keys=tuple(order),
                rank_start=1,
                rank_end=rank_end,
                output_rank_number=uses_rn,
                rowtime_order=time_attr == "ROWTIME",
            )
        ranked = Rel(node, rank_cols)
        items = [
            e
            for i, e in enumerate(_expand_star(inner.expressions, rel, keep_windows=True))
            if not (isinstance(e.unalias(), exp.Window))
        ]
        if uses_rn:
            items.append(exp.alias_(exp.column(rn_name), rn_name))
        out = _project(ranked, items, self.functions).requalified(sub.alias or None)
        if rest is not None:
            out = _filter(out, bind(rest, out.scope(self.functions)))
        return out


def _rank_bound(cond: exp.Expr | None, rn: str) -> tuple[int | None, exp.Expr | None]:
    if cond is None:
        return None, None
    parts = list(cond.flatten()) if isinstance(cond, exp.And) else [cond]
    end = None
    rest = []
    for p in parts:
        if (
            isinstance(p, exp.LTE | exp.LT | exp.EQ)
            and isinstance(p.this, exp.Column)
            and p.this.name == rn
            and isinstance(p.expression, exp.Literal)
        ):
            n = int(p.expression.this)
            end = n - 1 if isinstance(p, exp.LT) else n
        else:
            rest.append(p)
    if end is None:
        raise SqlError(
            f"ROW_NUMBER() needs a bound in the outer WHERE, such as {rn} <= 10 or {rn} = 1",
            *position(cond),
        )
    combined = None
    for r in rest:
        combined = r if combined is None else exp.And(this=combined, expression=r)
    return end, combined


def _filter(rel: Rel, cond: Expr) -> Rel:
    projection = [InputRef(c.type, i) for i, c in enumerate(rel.columns)]
    return Rel(
        L.Calc(
            [rel.node],
            fields_of(rel.columns),
            projection=projection,
            condition=and_all(conjuncts_of(cond)),
        ),
        rel.columns,
        rel.window,
    )


def _project(rel: Rel, items: list[exp.Expr], functions) -> Rel:  # noqa: ANN001
    scope = rel.scope(functions)
    projection = [bind(i.unalias() if isinstance(i, exp.Alias) else i, scope) for i in items]
    cols = []
    for it, p in zip(items, projection, strict=True):
        src = rel.columns[p.index] if isinstance(p, InputRef) else None
        cols.append(
            ScopeColumn(
                None, _item_name(it, p, rel.columns), p.type, src.time_attr if src else None
            )
        )
    identity = len(projection) == len(rel.columns) and all(
        isinstance(p, InputRef) and p.index == i for i, p in enumerate(projection)
    )
    names_same = identity and all(a.name == b.name for a, b in zip(cols, rel.columns, strict=True))
    if names_same:
        return Rel(rel.node, cols, rel.window)
    return Rel(L.Calc([rel.node], fields_of(cols), projection=projection), cols)


def _expand_star(items: list[exp.Expr], rel: Rel, keep_windows: bool = False) -> list[exp.Expr]:
    out: list[exp.Expr] = []
    for item in items:
        star = (
            item
            if isinstance(item, exp.Star)
            else item.this
            if isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
            else None
        )
        if star is None:
            out.append(item)
            continue
        qual = item.table if isinstance(item, exp.Column) else None
        out += [
            exp.column(c.name, table=c.qualifier) if c.qualifier else exp.column(c.name)
            for c in rel.columns
            if not qual or c.qualifier == qual
        ]
    return out


def _has_aggregate(items: list[exp.Expr]) -> bool:
    return bool(_aggregate_calls(items))


def _aggregate_calls(items: list[exp.Expr]) -> list[tuple[exp.Expr, str | None]]:
    seen: dict[str, tuple[exp.Expr, str | None]] = {}
    for item in items:
        alias = item.alias if isinstance(item, exp.Alias) else None
        for node in item.find_all(exp.AggFunc, exp.Anonymous):
            if isinstance(node, exp.Anonymous) and str(node.this).upper() not in _ANON_AGGS:
                continue
            if node.find_ancestor(exp.Window):
                continue
            direct = isinstance(item, exp.Alias) and item.this is node
            seen.setdefault(node.sql(), (node, alias if direct else None))
    return list(seen.values())


def _agg_name(call: exp.Expr) -> str:
    for cls, name in AGGREGATES.items():
        if isinstance(call, cls):
            return name
    return (
        str(getattr(call, "this", "")).upper()
        if isinstance(call, exp.Anonymous)
        else call.key.upper()
    )


def _agg_args(call: exp.Expr) -> list[exp.Expr]:
    if isinstance(call, exp.Anonymous):
        return list(call.expressions[:1])
    arg = call.this
    if isinstance(arg, exp.Distinct):
        return list(arg.expressions)
    if arg is None or isinstance(arg, exp.Star):
        return []
    return [arg]


def _agg_type(call: exp.Expr, pre: list[Expr], args: list[int]) -> DataType:
    name = _agg_name(call)
    if name == "COUNT":
        return DataType(BIGINT, False)
    if name == "LISTAGG":
        return string()
    t = pre[args[0]].type.with_nullable(True)
    if name in ("SUM", "SUM0") and t.root == "DECIMAL":
        return decimal(38, t.scale or 0)
    if name == "AVG" and t.root == "DECIMAL":
        return decimal(38, max(t.scale or 0, 6))
    return t


def _shift(cond: Expr | None, width: int) -> Expr | None:
    if cond is None:
        return None
    if isinstance(cond, InputRef):
        return InputRef(cond.type, cond.index - width) if cond.index >= width else cond
    operands = getattr(cond, "operands", None)
    if operands is None:
        return cond
    return replace(cond, operands=tuple(_shift(o, width) for o in operands))  # type: ignore[call-arg]


def _expr_name(expr: Expr, rel: Rel) -> str:
    return rel.columns[expr.index].name if isinstance(expr, InputRef) else "$expr"


def _item_name(item: exp.Expr, expr: Expr, columns: list[ScopeColumn]) -> str:
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Column):
        return item.name
    if isinstance(expr, InputRef):
        return columns[expr.index].name
    return "EXPR$0"
