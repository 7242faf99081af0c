"""SELECT to logical nodes: FROM, WHERE, GROUP BY/HAVING, DISTINCT, Top-N, ORDER BY ... LIMIT,
UNION ALL, SELECT items."""

from __future__ import annotations

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.processor.exprs.nodes import input_refs
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.aggregate import bind_aggregate, has_aggregate
from deltaflow.processor.planner.bind_exprs import bind
from deltaflow.processor.planner.binder import FromBinder
from deltaflow.processor.planner.catalog import Catalog
from deltaflow.processor.planner.group_windows import (
    bind_group_window,
    group_window_call,
    legacy_node,
)
from deltaflow.processor.planner.grouping_sets import expand_grouping_sets
from deltaflow.processor.planner.over_agg import bind_over, has_over
from deltaflow.processor.planner.relation import Rel, fields_of
from deltaflow.processor.planner.relops import (
    Functions,
    expand_star,
    filter_rel,
    project_rel,
)
from deltaflow.processor.planner.set_ops import bind_set_operation
from deltaflow.processor.planner.sort_limit import sort_limit, split_sort_limit
from deltaflow.processor.planner.subqueries import decorrelate, lift_having
from deltaflow.processor.planner.top_n import bind_top_n, row_number_item
from deltaflow.processor.planner.window_tvf import materialize_window, session_rows_filtered
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
        if isinstance(node, exp.Union | exp.Intersect | exp.Except):
            return bind_set_operation(self, node)
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

    def _select(self, select: exp.Select) -> Rel:
        body, order, offset, limit = split_sort_limit(select)
        rel = self._select_body(body)
        if order is None or limit is None:
            return rel
        return sort_limit(rel, body.expressions, order, offset, limit)

    def _select_body(self, select: exp.Select) -> Rel:
        expanded = expand_grouping_sets(self, select)
        if expanded is not None:
            return self.query(expanded)
        having = select.args.get("having")
        if having is not None and having.find(exp.Select) is not None:
            return self._select_body(lift_having(select))
        _check_supported(select)
        top_n = row_number_item(select)
        if top_n is not None:
            rel = bind_top_n(self, select, *top_n)
        else:
            select = decorrelate(self, select)
            rel = self.froms.from_clause(select)
            where = select.args.get("where")
            if where is not None:
                cond = bind(where.this, rel.scope(self.functions))
                aggregating = bool(select.args.get("group")) or has_aggregate(select.expressions)
                if (
                    rel.window is not None
                    and max(input_refs(cond), default=-1) >= len(rel.columns) - 3
                ) or session_rows_filtered(select, rel, aggregating, self.functions):
                    rel = materialize_window(rel)  # the filter reads the window's rows
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
        out = project_rel(rel, items, self.functions)
        if rel.window is not None and out.window is None:  # not SELECT * over the TVF
            out = project_rel(materialize_window(rel), items, self.functions)  # its rows as rows
        if select.args.get("distinct"):
            keys = tuple(range(len(out.columns)))
            node = L.Aggregate([out.node], fields_of(out.columns), group_keys=keys, aggs=[])
            out = Rel(node, out.columns)
        return out


def _check_supported(select: exp.Select) -> None:
    """Clauses a continuous query cannot run (as in Flink) or deltaflow does not run yet."""
    for clause in ("having",):
        found = select.args[clause].find(exp.Select) if select.args.get(clause) else None
        if found is not None:
            raise SqlError(
                "subqueries in HAVING are not supported yet; compute the aggregate in a subquery "
                "of FROM and filter it with WHERE", *position(found))  # fmt: skip
