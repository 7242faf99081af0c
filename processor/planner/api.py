"""``plan_job``: a Flink SQL job file to one JobPlan, its settings and EXPLAIN outputs."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from itertools import count

from sqlglot import exp

from deltaflow.formats.errors import PlanError, SqlError
from deltaflow.formats.types import DataType
from deltaflow.processor.exprs.functions import make_cast
from deltaflow.processor.exprs.nodes import InputRef
from deltaflow.processor.plan import JobPlan
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.binder import fields_of
from deltaflow.processor.planner.catalog import Catalog
from deltaflow.processor.planner.explain import explain_tree
from deltaflow.processor.planner.physical import to_physical
from deltaflow.processor.planner.query import QueryBinder
from deltaflow.processor.planner.rules.check_non_deterministic_updates import (
    check_non_deterministic_updates,
)
from deltaflow.processor.planner.rules.check_sink_compatibility import check_sink_compatibility
from deltaflow.processor.planner.rules.insert_changelog_normalize import insert_changelog_normalize
from deltaflow.processor.planner.rules.insert_upsert_materializer import insert_upsert_materializer
from deltaflow.processor.planner.rules.merge_calcs import merge_calcs
from deltaflow.processor.planner.traits import derive, refine
from deltaflow.processor.sql import statements as S
from deltaflow.processor.sql.ddl import CreateTable
from deltaflow.processor.sql.errors import closest
from deltaflow.processor.sql.script import parse_script

# Rules before trait inference, in order.
TREE_RULES = (merge_calcs, insert_changelog_normalize)
# Rules after trait inference, in order: result-preserving, then the ones that may reject.
SINK_RULES = (insert_upsert_materializer, check_sink_compatibility, check_non_deterministic_updates)


@dataclass
class PlannedJob:
    plan: JobPlan
    settings: dict[str, str] = field(default_factory=dict)
    explains: list[str] = field(default_factory=list)
    sinks_text: list[str] = field(default_factory=list)

    def explain(self) -> str:
        """The optimized physical plan of every sink, in Flink's text shape."""
        return "\n\n".join(self.sinks_text)


def plan_job(sql: str, *, source_name: str = "<job>") -> PlannedJob:
    catalog = Catalog()
    settings: dict[str, str] = {}
    inserts: list[S.Insert] = []
    explains: list[str] = []
    for stmt in parse_script(sql):
        if isinstance(stmt, S.SetStatement) and stmt.key is not None:
            settings[stmt.key] = stmt.value or ""
        elif isinstance(stmt, S.ResetStatement):
            settings.pop(stmt.key, None) if stmt.key else settings.clear()
        elif isinstance(stmt, CreateTable):
            catalog.add_table(stmt)
        elif isinstance(stmt, S.CreateView):
            catalog.add_view(stmt.name, stmt.query, stmt.columns, stmt.pos)
        elif isinstance(stmt, S.CreateFunction):
            catalog.functions[stmt.name.upper()] = stmt.target
        elif isinstance(stmt, S.Insert):
            inserts.append(stmt)
        elif isinstance(stmt, S.StatementSet):
            inserts.extend(stmt.inserts)
        elif isinstance(stmt, S.Explain):
            body = stmt.body.inserts if isinstance(stmt.body, S.StatementSet) else (stmt.body,)
            if all(isinstance(b, S.Insert) for b in body):
                explains.append(
                    "\n\n".join(_plan_sinks(catalog, settings, list(body), count(1))[1])
                )  # type: ignore[arg-type]
    sinks, texts = _plan_sinks(catalog, settings, inserts, count(1))
    fingerprint = hashlib.sha256("\n\n".join(texts).encode()).hexdigest()[:16]
    plan = JobPlan(tuple(sinks), dict(settings), dict(catalog.functions), fingerprint)
    return PlannedJob(plan, settings, explains, texts)


def _plan_sinks(
    catalog: Catalog, settings: dict[str, str], inserts: list[S.Insert], ids: count
) -> tuple[list, list[str]]:
    functions = {name: (target, True) for name, target in catalog.functions.items()}
    sinks, texts = [], []
    for insert in inserts:
        sink = _bind_insert(catalog, functions, insert)
        for rule in TREE_RULES:
            sink.inputs[0] = rule(sink.inputs[0], settings)
        derive(sink)
        refine(sink, True)
        for rule in SINK_RULES:
            sink = rule(sink, settings)
        text = explain_tree(sink)
        sinks.append(to_physical(sink, ids))
        texts.append(text)
    return sinks, texts


def _bind_insert(
    catalog: Catalog, functions: dict[str, tuple[str, bool]], insert: S.Insert
) -> L.Sink:
    table = catalog.table(insert.table, insert.pos)
    rel = QueryBinder(catalog, functions).query(insert.query)
    targets = list(table.persisted)
    if insert.columns:
        names = [c.name for c in targets]
        for c in insert.columns:
            if c not in names:
                raise SqlError(
                    f"column {c!r} is not a column of {table.name}{closest(c, names)}", *insert.pos
                )
        targets = [targets[names.index(c)] for c in insert.columns]
    if len(rel.columns) != len(targets):
        raise SqlError(
            f"INSERT INTO {table.name} gives {len(rel.columns)} columns but the table has {len(targets)} "
            f"({', '.join(c.name for c in targets)}); select exactly those columns",
            *insert.pos,
        )
    node = _cast_to(rel, [c.type for c in targets])  # type: ignore[misc]
    pk = tuple(i for i, c in enumerate(targets) if c.name in table.primary_key)
    fields = [type(f)(c.name, f.type) for f, c in zip(node.fields, targets, strict=True)]
    return L.Sink([node], fields, table=table, primary_key=pk, on_conflict=insert.on_conflict)


def _cast_to(rel, types: list[DataType]) -> L.LNode:  # noqa: ANN001
    projection = []
    changed = False
    for i, (col, target) in enumerate(zip(rel.columns, types, strict=True)):
        ref = InputRef(col.type, i)
        if col.type.with_nullable(True) != target.with_nullable(True) and col.type.root != "NULL":
            projection.append(make_cast(ref, target.with_nullable(True)))
            changed = True
        else:
            projection.append(ref)
    if not changed:
        return rel.node
    cols = list(rel.columns)
    return L.Calc([rel.node], fields_of(cols), projection=projection)


__all__ = ["PlanError", "PlannedJob", "exp", "plan_job"]
