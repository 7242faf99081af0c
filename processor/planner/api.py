"""``plan_job``: a Flink SQL job file to one JobPlan, its settings and EXPLAIN outputs.

Stages: statements (``deltaflow.processor.sql``) -> catalog -> bound logical tree per
INSERT -> TREE_RULES -> traits (bottom-up derive, top-down refine) -> SINK_RULES ->
physical plan (``deltaflow.processor.plan``) -> PHYSICAL_RULES over the whole job
(``physical_rules``) -> its EXPLAIN text -> sub-plan reuse (``reuse``) -> its fingerprint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import count

from deltaflow.formats.errors import DeltaflowError, SqlError
from deltaflow.processor.plan import JobPlan, Sink
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.catalog import Catalog
from deltaflow.processor.planner.explain import explain_lines, finish_lines
from deltaflow.processor.planner.fingerprint import plan_fingerprint
from deltaflow.processor.planner.physical import to_physical
from deltaflow.processor.planner.physical_rules import apply_physical_rules, index
from deltaflow.processor.planner.query import QueryBinder
from deltaflow.processor.planner.reuse import reuse_enabled, share_identical
from deltaflow.processor.planner.rules.check_collection_keys import check_collection_keys
from deltaflow.processor.planner.rules.check_non_deterministic_updates import (
    check_non_deterministic_updates,
)
from deltaflow.processor.planner.rules.check_sink_compatibility import check_sink_compatibility
from deltaflow.processor.planner.rules.insert_changelog_normalize import insert_changelog_normalize
from deltaflow.processor.planner.rules.insert_drop_update_before import insert_drop_update_before
from deltaflow.processor.planner.rules.insert_upsert_materializer import insert_upsert_materializer
from deltaflow.processor.planner.rules.merge_calcs import merge_calcs
from deltaflow.processor.planner.rules.plan_interval_joins import plan_interval_joins
from deltaflow.processor.planner.rules.push_filters import push_filters
from deltaflow.processor.planner.rules.reorder_joins import reorder_joins
from deltaflow.processor.planner.rules.rewrite_delta_agg import rewrite_delta_agg
from deltaflow.processor.planner.rules.rewrite_delta_join import rewrite_delta_join
from deltaflow.processor.planner.rules.rewrite_delta_semi_join import rewrite_delta_semi_join
from deltaflow.processor.planner.rules.warn_keyless_joins import warn_keyless_joins
from deltaflow.processor.planner.sink import bind_insert
from deltaflow.processor.planner.traits import derive, refine
from deltaflow.processor.settings import check_setting, parse_duration_ms
from deltaflow.processor.sql import statements as S
from deltaflow.processor.sql.ddl import CreateTable
from deltaflow.processor.sql.script import parse_script

# Rules over the query tree, before trait inference, in order.
TREE_RULES = (
    reorder_joins,
    push_filters,
    merge_calcs,
    plan_interval_joins,
    insert_changelog_normalize,
    rewrite_delta_join,
    rewrite_delta_semi_join,
    rewrite_delta_agg,
)
# Rules over each sink after trait inference: result-preserving first, then the checks.
SINK_RULES = (
    insert_upsert_materializer,
    insert_drop_update_before,
    check_sink_compatibility,
    check_non_deterministic_updates,
    warn_keyless_joins,
    check_collection_keys,
)


@dataclass
class PlannedJob:
    plan: JobPlan
    settings: dict[str, str] = field(default_factory=dict)
    explains: list[str] = field(default_factory=list)
    sink_texts: list[str] = field(default_factory=list)
    source: str = "<job>"  # the job file's name, for messages
    declared: int = 0  # how many statements the file holds

    def explain(self) -> str:
        """The optimized physical plan of every sink, in Flink's text shape."""
        return "\n\n".join(self.sink_texts)


def plan_job(sql: str, *, source_name: str = "<job>") -> PlannedJob:
    """Plan every INSERT of ``sql`` into one JobPlan; SqlError / PlanError for a user's mistake."""
    catalog = Catalog()
    settings: dict[str, str] = {}
    inserts: list[S.Insert] = []
    explains: list[str] = []
    statements = parse_script(sql)
    for stmt in statements:
        if isinstance(stmt, S.Explain):
            explains.append(_explain(catalog, settings, stmt))
        elif isinstance(stmt, S.Insert | S.StatementSet):
            inserts.extend(stmt.inserts if isinstance(stmt, S.StatementSet) else [stmt])
        elif isinstance(stmt, S.Query):
            raise SqlError(
                "a job runs INSERT INTO statements; write INSERT INTO <table> SELECT ... (a table "
                "with 'connector' = 'print' shows the rows)", *stmt.pos)  # fmt: skip
        else:
            _declare(catalog, settings, stmt)
    sinks, texts = plan_inserts(catalog, settings, inserts)
    if reuse_enabled(settings):  # identical subtrees run once; EXPLAIN shows them as planned
        sinks = list(share_identical(tuple(sinks)))
    plan = JobPlan(tuple(sinks), dict(settings), dict(catalog.functions))
    ttl = settings.get("table.exec.state.ttl", "").strip()
    # TTL state stores a write time with each value: state of the other kind is refused
    with_ttl = bool(ttl) and parse_duration_ms(ttl, "table.exec.state.ttl") > 0
    plan = replace(plan, fingerprint=plan_fingerprint(plan, with_ttl))
    return PlannedJob(plan, settings, explains, texts, source_name, len(statements))


def _declare(catalog: Catalog, settings: dict[str, str], stmt: object) -> None:
    if isinstance(stmt, S.SetStatement) and stmt.key is not None:
        try:
            check_setting(stmt.key, stmt.value or "")
        except DeltaflowError as err:
            raise SqlError(str(err), *stmt.pos) from None
        settings[stmt.key] = stmt.value or ""
    elif isinstance(stmt, S.ResetStatement):
        if stmt.key is None:
            settings.clear()
        else:
            settings.pop(stmt.key, None)
    elif isinstance(stmt, CreateTable):
        catalog.add_table(stmt)
    elif isinstance(stmt, S.CreateView):
        catalog.add_view(stmt.name, stmt.query, stmt.columns, stmt.pos)
    elif isinstance(stmt, S.CreateFunction):
        catalog.functions[stmt.name.upper()] = stmt.target


def plan_inserts(
    catalog: Catalog, settings: dict[str, str], inserts: list[S.Insert]
) -> tuple[list[Sink], list[str]]:
    """One physical Sink and one explain text per INSERT; scans of one table are shared."""
    binder = QueryBinder(catalog, dict(catalog.functions))
    trees = []
    for insert in inserts:
        sink = bind_insert(binder, insert)
        sink.inputs[0] = _tree_rules(sink.inputs[0], settings)
        trees.append(sink)
    for sink in trees:
        derive(sink)
    for sink in trees:
        refine(sink, True)
    ids = count(1)
    memo: dict = {}
    sinks, lines = [], []
    for sink in trees:
        for rule in SINK_RULES:
            sink = rule(sink, settings)
        lines.append(explain_lines(sink))
        sinks.append(to_physical(sink, ids, memo))
    roots = apply_physical_rules(tuple(sinks), settings)
    return list(roots), [finish_lines(text, _recorded(memo, roots)) for text in lines]


def _recorded(memo: dict, roots: tuple) -> Callable:
    """The physical node (after the physical rules) each converted logical node became."""
    final = index(roots)[0]

    def recorded(node: L.LNode) -> object:
        converted = memo.get(id(node))
        return None if converted is None else final.get(converted.node_id)

    return recorded


def _tree_rules(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    for rule in TREE_RULES:
        node = rule(node, settings)
    return node


def _explain(catalog: Catalog, settings: dict[str, str], stmt: S.Explain) -> str:
    body = stmt.body
    if isinstance(body, S.Insert | S.StatementSet):
        inserts = list(body.inserts) if isinstance(body, S.StatementSet) else [body]
        return "\n\n".join(plan_inserts(catalog, settings, inserts)[1])
    root = QueryBinder(catalog, dict(catalog.functions)).query(body).node
    root = _tree_rules(root, settings)
    derive(root)
    lines = explain_lines(refine(root, True))
    memo: dict = {}
    physical = to_physical(root, count(1), memo)  # type: ignore[arg-type]
    return finish_lines(lines, _recorded(memo, apply_physical_rules((physical,), settings)))
