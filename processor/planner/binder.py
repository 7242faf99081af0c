"""FROM clauses to logical nodes: tables (with hints and computed columns), views,
subqueries, joins, lookup joins and window table functions."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.processor.exprs.functions import infer_call
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, Literal
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import Scope, ScopeColumn, bind
from deltaflow.processor.planner.catalog import Catalog, Table
from deltaflow.processor.planner.changelog_ptf import changelog_relation
from deltaflow.processor.planner.correlate import bind_lateral
from deltaflow.processor.planner.relation import (
    Rel,
    and_all,
    conjuncts_of,
    fields_of,
    unique_fields,
)
from deltaflow.processor.planner.scan import ScanCache, bind_scan
from deltaflow.processor.planner.semi_join import SemiJoin, without_impossible_nulls
from deltaflow.processor.planner.unnest import bind_unnest
from deltaflow.processor.planner.window_join import window_join
from deltaflow.processor.planner.windows import window_relation
from deltaflow.processor.sql.dialect import CHANGELOG_PTFS
from deltaflow.processor.sql.errors import position


class FromBinder:
    def __init__(self, catalog: Catalog, query_binder) -> None:  # noqa: ANN001 - QueryBinder
        self.catalog = catalog
        self.queries = query_binder
        self.functions = query_binder.functions
        self.scans: ScanCache = {}  # one scan per table in a job, shared by its INSERTs

    def from_clause(self, select: exp.Select) -> Rel:
        from_ = select.args.get("from_") or select.args.get("from")
        if from_ is None:
            return Rel(L.Calc([], [], projection=[]), [])
        rel = self.relation(from_.this)
        for join in select.args.get("joins") or []:
            rel = self.join(rel, join)
        return rel

    def relation(self, node: exp.Expr) -> Rel:
        rel = self._relation(node)
        alias: Any = node.args.get("alias")  # a TableAlias when it names columns
        names = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
        if names:
            if len(names) != len(rel.columns):
                raise SqlError(
                    f"{alias.name} names {len(names)} columns but the relation has {len(rel.columns)}",
                    *position(node))  # fmt: skip
            rel.columns = [replace(c, name=n) for c, n in zip(rel.columns, names, strict=True)]
        return rel

    def _relation(self, node: exp.Expr) -> Rel:
        alias = node.alias or None
        if isinstance(node, exp.Subquery):
            return self.queries.query(node.this).requalified(alias)
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous):
            if str(node.this.this).upper() in CHANGELOG_PTFS:
                return changelog_relation(self, node.this, node).requalified(alias)
            return self.window_tvf(node.this, node).requalified(alias)
        if isinstance(node, exp.Table) and node.name in self.queries.ctes and not node.db:
            return self.queries.query(self.queries.ctes[node.name]).requalified(alias or node.name)
        if isinstance(node, exp.Table):
            name = ".".join(p.name for p in node.parts)
            if name in self.catalog.views:
                query, columns = self.catalog.views[name]
                rel = self.queries.query(query)
                if columns:
                    rel.columns = [
                        replace(c, qualifier=None, name=n)
                        for n, c in zip(columns, rel.columns, strict=False)
                    ]
                return rel.requalified(alias or name)
            return self.scan(self.catalog.table(name, position(node)), node).requalified(
                alias or name
            )
        raise SqlError(f"deltaflow does not support {node.sql()!r} in FROM", *position(node))

    def scan(self, table: Table, node: exp.Table) -> Rel:
        scan, cols = bind_scan(table, node, self.functions, self.scans)
        return Rel(scan, list(cols))

    def window_tvf(self, call: exp.Anonymous, node: exp.Expr) -> Rel:
        return window_relation(self, call, node)

    def join(self, left: Rel, join: exp.Join) -> Rel:
        if isinstance(join.this, exp.Lateral):
            return bind_lateral(self, left, join)
        if isinstance(join.this, exp.Unnest):
            return bind_unnest(self, left, join)
        table = join.this
        version = table.args.get("version") if isinstance(table, exp.Table) else None
        right = self.relation(table)
        if left.window is not None or right.window is not None:
            from deltaflow.processor.planner.window_tvf import materialize_window  # uses Rel

            left, right = materialize_window(left), materialize_window(right)
        scope = Scope(left.columns + right.columns, self.functions)
        join_type = {"LEFT": "LEFT", "RIGHT": "RIGHT", "FULL": "FULL"}.get(
            (join.side or "").upper(), "INNER"
        )
        kind = (join.args.get("kind") or "").upper()
        if kind in ("SEMI", "ANTI"):  # a decorrelated IN / EXISTS (subqueries.py)
            return semi_join(left, right, bind(join.args["on"], scope), kind == "ANTI")
        if join.args.get("method"):
            raise SqlError(
                f"{join.args['method']} JOIN is not supported; join with ON or USING",
                *position(join),
            )
        on = join.args.get("on")
        cond = bind(on, scope) if on is not None else _using(join, left, right, scope)
        lk, rk, rest = _equi_keys(cond, len(left.columns))
        out = [_nullable(c, join_type in ("RIGHT", "FULL")) for c in left.columns]
        out += [_nullable(c, join_type in ("LEFT", "FULL")) for c in right.columns]
        if version is not None:
            return self._lookup_join(left, right, version, join_type, (lk, rk, rest), out)
        spec = {"join_type": join_type, "left_keys": lk, "right_keys": rk, "condition": rest,
                "fields": unique_fields(out)}  # fmt: skip
        windowed = window_join([left.node, right.node], (left.columns, right.columns), spec)
        if windowed is not None:  # both window bounds equal: Flink's WindowJoin
            return Rel(windowed, out)
        node = L.Join(
            [left.node, right.node],
            unique_fields(out),
            join_type=join_type,
            left_keys=lk,
            right_keys=rk,
            condition=rest,
            rowtimes=_rowtimes(left.columns + right.columns),
        )
        return Rel(node, out)

    def _lookup_join(
        self, left: Rel, right: Rel, version: exp.Expr, join_type: str, keys, out
    ) -> Rel:  # noqa: ANN001
        """``JOIN t FOR SYSTEM_TIME AS OF left.proctime``: probe table ``t`` by the equi-join keys."""
        time = version.args.get("expression")
        ref = bind(time, Scope(left.columns, self.functions)) if time is not None else None
        attr = left.columns[ref.index].time_attr if isinstance(ref, InputRef) else None
        if attr == "ROWTIME":  # event time: a temporal join against a versioned table
            from deltaflow.processor.planner.temporal_join import bind_temporal_join

            return bind_temporal_join(left, right, join_type, keys, out, ref.index, version)  # type: ignore[union-attr]
        if attr != "PROCTIME":
            raise SqlError(
                "FOR SYSTEM_TIME AS OF takes the left table's processing-time attribute (a PROCTIME() "
                "column); event-time temporal joins are not supported yet", *position(version))  # fmt: skip
        if not isinstance(right.node, L.Scan) or join_type not in ("INNER", "LEFT"):
            raise SqlError(
                "a lookup join (FOR SYSTEM_TIME AS OF) needs a plain table without computed columns, "
                "joined with JOIN or LEFT JOIN", *position(version))  # fmt: skip
        from deltaflow.processor.planner.lookup_keys import lookup_join_node  # imports binder

        node = lookup_join_node(left.node, right.node.table, join_type, keys, out)
        if not (node.inputs[0] if isinstance(node, L.Calc) else node).probe_keys:  # type: ignore[attr-defined]
            raise SqlError(
                "a lookup join needs equality conditions on the looked-up table's columns",
                *position(version),
            )
        return Rel(node, out)


def semi_join(left: Rel, right: Rel, cond: Expr, anti: bool) -> Rel:
    """A semi (anti) join of ``left`` with ``right`` on ``cond``: the left columns."""
    # NOT IN over NOT NULL sides is a plain equality: a key (TPC-H Q16)
    lk, rk, rest = _equi_keys(without_impossible_nulls(cond), len(left.columns))
    if isinstance(rest, Literal) and rest.value is True:
        rest = None
    names = [f.name for f in unique_fields(left.columns + right.columns)]
    spec = {"join_type": "ANTI" if anti else "SEMI", "left_keys": lk, "right_keys": rk,
            "condition": rest, "fields": fields_of(left.columns), "names": names}  # fmt: skip
    windowed = window_join([left.node, right.node], (left.columns, right.columns), spec)
    if windowed is not None:  # both sides' window bounds equal: Flink's window semi join
        return Rel(windowed, left.columns)
    node = SemiJoin(
        [left.node, right.node], fields_of(left.columns), anti=anti, left_keys=lk, right_keys=rk,
        condition=rest, names=names,
    )  # fmt: skip
    return Rel(node, left.columns)


def _using(join: exp.Join, left: Rel, right: Rel, scope: Scope) -> Expr | None:
    """``USING (a, b)``: equality of the same-named columns of both sides."""
    conds: list[Expr] = []
    for ident in join.args.get("using") or []:
        sides: list[Expr] = []
        for rel, offset in ((left, 0), (right, len(left.columns))):
            hits = [i for i, c in enumerate(rel.columns) if c.name == ident.name]
            if len(hits) != 1:
                raise SqlError(
                    f"USING column '{ident.name}' must appear once on each side of the join",
                    *position(join),
                )
            sides.append(InputRef(rel.columns[hits[0]].type, hits[0] + offset))
        conds.append(infer_call("=", sides))
    return and_all(conds)


def _rowtimes(columns: list[ScopeColumn]) -> tuple[int, ...]:
    """The event-time attributes among a join's input columns (interval join bounds use them)."""
    return tuple(i for i, c in enumerate(columns) if c.time_attr == "ROWTIME")


def _nullable(c: ScopeColumn, make: bool) -> ScopeColumn:
    return ScopeColumn(
        c.qualifier,
        c.name,
        c.type.with_nullable(True) if make else c.type,
        c.time_attr if not make else None,
    )


def _equi_keys(
    cond: Expr | None, width: int
) -> tuple[tuple[int, ...], tuple[int, ...], Expr | None]:
    conjuncts = conjuncts_of(cond)
    lk: list[int] = []
    rk: list[int] = []
    rest: list[Expr] = []
    for c in conjuncts:
        if isinstance(c, Call) and c.op == "=" and all(isinstance(o, InputRef) for o in c.operands):
            a, b = (o.index for o in c.operands)  # type: ignore[attr-defined]
            if a < width <= b:
                lk.append(a)
                rk.append(b - width)
                continue
            if b < width <= a:
                lk.append(b)
                rk.append(a - width)
                continue
        rest.append(c)
    return tuple(lk), tuple(rk), and_all(rest)
