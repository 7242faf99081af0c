"""A table in FROM: its scan (physical then metadata columns, as the contract says), a Calc
for computed columns, ``/*+ OPTIONS(...) */`` hints, and the bound watermark expression."""

from __future__ import annotations

import re
from dataclasses import replace

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import TIMESTAMP, TIMESTAMP_LTZ
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef
from deltaflow.processor.plan import Field
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import Scope, ScopeColumn, bind
from deltaflow.processor.planner.catalog import Table
from deltaflow.processor.planner.rules.insert_changelog_normalize import before_image_from_state
from deltaflow.processor.planner.rules.merge_calcs import substitute

_HINT = re.compile(r"'([^']*)'\s*=\s*'([^']*)'")
ScanCache = dict[tuple[str, tuple[tuple[str, str], ...]], tuple[L.LNode, list[ScopeColumn]]]


def bind_scan(
    table: Table, node: exp.Table, functions: dict[str, str], cache: ScanCache
) -> tuple[L.LNode, list[ScopeColumn]]:
    """The table's node and columns; one scan per table and options in a job (shared by INSERTs)."""
    table = with_hints(table, node)
    key = (table.name, tuple(sorted(table.options.items())))
    if key not in cache:
        cache[key] = _build(table, functions)
    return cache[key]


def _build(table: Table, functions: dict[str, str]) -> tuple[L.LNode, list[ScopeColumn]]:
    stored = [*table.physical, *table.metadata]
    rowtime = table.watermark[0] if table.watermark else None
    pk = tuple(i for i, c in enumerate(stored) if c.name in table.primary_key)
    fields = [Field(c.name, c.type) for c in stored]  # type: ignore[arg-type]
    scan = L.Scan(
        [],
        fields,
        table=table,
        primary_key=pk if len(pk) == len(table.primary_key) else (),
        normalize=before_image_from_state(table),  # before-images from state
    )
    cols = [
        ScopeColumn(None, c.name, c.type, "ROWTIME" if c.name == rowtime else None)  # type: ignore[arg-type]
        for c in stored
    ]  # type: ignore[arg-type]
    node: L.LNode = scan
    if [c.name for c in table.columns] != [c.name for c in stored]:
        node, cols = _computed(table, scan, cols, functions)
    if table.watermark is not None:
        scan.watermark_expr = _watermark(table, node, cols, functions)
    return node, cols


def _computed(
    table: Table, scan: L.Scan, cols: list[ScopeColumn], functions: dict[str, str]
) -> tuple[L.LNode, list[ScopeColumn]]:
    scope = Scope(cols, functions)
    names = [c.name for c in cols]
    rowtime = table.watermark[0] if table.watermark else None
    projection: list[Expr] = []
    out: list[ScopeColumn] = []
    for column in table.columns:
        if column.expr is None:
            expr: Expr = InputRef(column.type, names.index(column.name))  # type: ignore[arg-type]
        else:
            expr = bind(column.expr, scope)
        attr = "ROWTIME" if column.name == rowtime else None
        if isinstance(expr, Call) and expr.op == "PROCTIME":
            attr = "PROCTIME"
        projection.append(expr)
        out.append(ScopeColumn(None, column.name, expr.type, attr))
    return L.Calc([scan], [Field(c.name, c.type) for c in out], projection=projection), out


def _watermark(
    table: Table, node: L.LNode, cols: list[ScopeColumn], functions: dict[str, str]
) -> Expr:
    """The watermark expression over the scan's output row (computed columns substituted)."""
    assert table.watermark is not None
    name, wm = table.watermark
    target = next((c for c in cols if c.name == name), None)
    column = next(c for c in table.columns if c.name == name) if target else None
    if target is None or column is None:
        raise SqlError(
            f"WATERMARK FOR {name}: {table.name} has no column {name!r}", *table.columns[0].pos
        )
    if target.type.root not in (TIMESTAMP, TIMESTAMP_LTZ):
        raise SqlError(
            f"WATERMARK FOR {name}: the rowtime column must be TIMESTAMP(3) or TIMESTAMP_LTZ(3), not {target.type.sql()}",
            *column.pos,
        )
    expr = bind(wm, Scope(cols, functions))
    if isinstance(node, L.Calc):
        expr = substitute(expr, node.projection)
    return expr


def with_hints(table: Table, node: exp.Table) -> Table:
    """``/*+ OPTIONS('k' = 'v') */`` after a table name overrides its WITH options."""
    extra: dict[str, str] = {}
    for comment in node.comments or []:
        if comment.strip().upper().startswith("OPTIONS"):
            extra.update(dict(_HINT.findall(comment)))
    return replace(table, options={**table.options, **extra}) if extra else table
