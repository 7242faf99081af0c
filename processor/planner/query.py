"""SELECT to logical nodes: FROM, WHERE, GROUP BY/HAVING, DISTINCT, Top-N, UNION ALL, SELECT items."""

from __future__ import annotations

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.processor.exprs.coercion import common_type
from deltaflow.processor.exprs.nodes import input_refs
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.aggregate import bind_aggregate, has_aggregate
from deltaflow.processor.planner.bind_exprs import ScopeColumn, bind
from deltaflow.processor.planner.binder import FromBinder, Rel, fields_of
from deltaflow.processor.planner.catalog import Catalog
from deltaflow.processor.planner.group_windows import (
    bind_group_window,
    group_window_call,
    legacy_node,
)
from deltaflow.processor.planner.over_agg import bind_over, has_over
from deltaflow.processor.planner.relops import (
    Functions,
    cast_rel,
    expand_star,
    filter_rel,
    project_rel,
    require_no_window,
)
from deltaflow.processor.planner.top_n import bind_top_n, row_number_item
from deltaflow.processor.sql.errors import position


class QueryBinder:
    def __init__(self, catalog: Catalog, functions: Functions) -> None:
        self.catalog = catalog
        self.functions = functions
        self.froms = FromBinder(catalog, self)
        self.ctes: dict[str, exp.Expr] = {}  # WITH names in scope

    def query(self, node: exp.Expr) -> Rel:
        with_ = node.args.get("with_") or node.args.get("with")
        if with_ is not None:
            return self._with(node, with_)
        if isinstance(node, exp.Subquery):
            return self.query(node.this)
        if isinstance(node, exp.Union):
            return self._union(node)
        if isinstance(node, exp.Select):
            return self._select(node)
        raise SqlError(
            f"deltaflow does not support {node.key.upper()} queries; write a SELECT",
            *position(node),
        )

    def _with(self, node: exp.Expr, with_: exp.With) -> Rel:
        """``WITH name AS (query) ...``: each name is an inline view for the query's FROM."""
        outer = dict(self.ctes)
        try:
            for cte in with_.expressions:
                self.ctes[cte.alias] = cte.this
            body = node.copy()
            body.set("with_", None)
            body.set("with", None)
            return self.query(body)
        finally:
            self.ctes = outer

    def _union(self, node: exp.Union) -> Rel:
        if node.args.get("distinct"):
            raise SqlError("UNION (distinct) is not supported; write UNION ALL", *position(node))
        left, right = self.query(node.this), self.query(node.expression)
        if len(left.columns) != len(right.columns):
            raise SqlError(
                f"both sides of UNION ALL need the same number of columns ({len(left.columns)} and "
                f"{len(right.columns)})", *position(node))  # fmt: skip
        types = []
        for i, (a, b) in enumerate(zip(left.columns, right.columns, strict=True)):
            common = common_type([a.type, b.type])
            if common is None:
                raise SqlError(
                    f"UNION ALL column {i + 1} ({a.name}) has types {a.type.sql()} and {b.type.sql()}, "
                    "which have no common type; CAST one side", *position(node))  # fmt: skip
            types.append(common)
        cols = [ScopeColumn(None, a.name, t) for a, t in zip(left.columns, types, strict=True)]
        inputs = [cast_rel(side, types) for side in (left, right)]
        return Rel(L.Union(inputs, fields_of(cols)), cols)

    def _select(self, select: exp.Select) -> Rel:
        _check_supported(select)
        top_n = row_number_item(select)
        if top_n is not None:
            rel = bind_top_n(self, select, *top_n)
        else:
            rel = self.froms.from_clause(select)
            where = select.args.get("where")
            if where is not None:
                cond = bind(where.this, rel.scope(self.functions))
                if (
                    rel.window is not None
                    and max(input_refs(cond), default=-1) >= len(rel.columns) - 3
                ):
                    require_no_window(rel, "filtering on window columns", where)
                rel = filter_rel(rel, cond)
        legacy = group_window_call(select)
        if legacy is not None:  # GROUP BY TUMBLE(ts, ...): the window TVF form, printed as Flink's
            select, rel = bind_group_window(select, rel, legacy, self.functions)
        items = expand_star(select.expressions, rel)
        if has_over(items):
            rel, items = bind_over(select, rel, items, self.functions)
        if select.args.get("group") or select.args.get("having") or has_aggregate(items):
            agg = bind_aggregate(select, rel, items, self.functions)
            return Rel(legacy_node(agg.node), agg.columns) if legacy is not None else agg
        require_no_window(rel, "a query without GROUP BY", select)
        out = project_rel(rel, items, self.functions)
        if select.args.get("distinct"):
            keys = tuple(range(len(out.columns)))
            node = L.Aggregate([out.node], fields_of(out.columns), group_keys=keys, aggs=[])
            out = Rel(node, out.columns)
        return out


def _check_supported(select: exp.Select) -> None:
    """Clauses a continuous query cannot run (as in Flink) or deltaflow does not run yet."""
    if select.args.get("order") is not None:
        raise SqlError(
            "Sort on a non-time-attribute field is not supported. A continuous query has no final "
            "order; drop ORDER BY, or keep the top rows with ROW_NUMBER() OVER (ORDER BY ...)",
            *position(select.args["order"]))  # fmt: skip
    for clause in ("limit", "offset"):
        if select.args.get(clause) is not None:
            raise SqlError(
                f"{clause.upper()} is not supported in a deltaflow job; keep the top rows with "
                "ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) and a WHERE rn <= N filter",
                *position(select.args[clause]))  # fmt: skip
    for clause in ("where", "having"):
        found = select.args[clause].find(exp.Select) if select.args.get(clause) else None
        if found is not None:
            raise SqlError(
                "subqueries in WHERE or HAVING (IN / EXISTS / scalar) are not supported yet; write "
                "them as a JOIN", *position(found))  # fmt: skip
