"""A delta aggregate and a delta join reading one table share its mirror: the mirror's row
codec is set by whichever operator opens it first, so both must open it with the scan's
column types. A DECIMAL column read back through a mirror opened without them would come
back as text, and SUM over it would no longer be a DECIMAL sum."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from dl_helpers import FORCE_AGG, FORCE_JOIN, scan_ids

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph
from deltaflow.state.backend import StateBackend

SQL = """CREATE TABLE o (id INT, m INT, amount DECIMAL(10, 2), PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'o', 'format' = 'debezium-json');
CREATE TABLE i (m INT, name STRING, PRIMARY KEY (m) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'i', 'format' = 'debezium-json');
CREATE TABLE sums (m INT, total DECIMAL(38, 2), PRIMARY KEY (m) NOT ENFORCED)
  WITH ('connector' = 'print');
CREATE TABLE joined (id INT, amount DECIMAL(10, 2), name STRING) WITH ('connector' = 'print');
EXECUTE STATEMENT SET BEGIN
INSERT INTO sums SELECT m, SUM(amount) FROM o GROUP BY m;
INSERT INTO joined SELECT o.id, o.amount, i.name FROM o JOIN i ON o.m = i.m;
END;"""

D = Decimal
STEPS = [
    ("o", Batch([INSERT, INSERT], [(1, 7, D("1.10")), (2, 7, D("2.25"))])),
    ("i", Batch([INSERT], [(7, "seven")])),
    ("o", Batch([UPDATE_BEFORE, UPDATE_AFTER], [(1, 7, D("1.10")), (1, 7, D("3.00"))])),
    ("o", Batch([DELETE], [(2, 7, D("2.25"))])),
    ("o", Batch([INSERT], [(3, 7, D("0.05"))])),
]


def _final(sql: str, path) -> list[Counter]:
    """Each sink's changes folded to the rows it holds at the end (retractions subtract);
    the graph is reopened on its directory half way, so rows come back from LMDB."""
    plan = plan_job(sql).plan
    ids: dict[str, int] = {}
    for sink in plan.sinks:
        scan_ids(sink, ids)
    held = [Counter() for _ in plan.sinks]
    for part in (STEPS[:2], STEPS[2:]):
        with StateBackend(path) as backend:
            graph = Graph(plan, backend)
            for table, batch in part:
                got = graph.push(ids[table], Batch(list(batch.kinds), list(batch.rows)))
                for n, sink in enumerate(plan.sinks):
                    out = got.get(sink.node_id, Batch())
                    for kind, row in zip(out.kinds, out.rows, strict=True):
                        held[n][row] += 1 if kind in (INSERT, UPDATE_AFTER) else -1
            backend.commit()
    return [+c for c in held]


def _kinds(sql: str) -> set[type]:
    plan = plan_job(sql).plan
    seen: set[type] = set()
    todo = list(plan.sinks)
    while todo:
        node = todo.pop()
        seen.add(type(node))
        todo.extend(node.inputs)
    return seen


def test_a_delta_aggregate_and_a_delta_join_share_a_typed_mirror(tmp_path):
    delta = FORCE_AGG + FORCE_JOIN + SQL
    assert {P.DeltaAggregate, P.DeltaJoin} <= _kinds(delta)
    sums, joined = _final(delta, tmp_path / "delta")
    # from the steps: order 1 now 3.00, order 2 deleted, order 3 0.05; all merchant 7
    assert sums == Counter({(7, D("3.05")): 1})
    assert joined == Counter({(1, D("3.00"), "seven"): 1, (3, D("0.05"), "seven"): 1})
    for (_m, total), _ in sums.items():
        assert type(total) is Decimal and total.as_tuple().exponent == -2
    assert [sums, joined] == _final(SQL, tmp_path / "regular")


def test_a_delta_aggregate_opens_its_mirror_with_the_scan_types(tmp_path):
    """Alone in its job, the delta aggregate is its mirror's first opener: the mirror gets
    the scan's column types (compiled key encoders, typed rows) as a delta join's would."""
    sql = (
        FORCE_AGG
        + SQL.split("EXECUTE")[0]
        + "INSERT INTO sums SELECT m, SUM(amount) FROM o GROUP BY m;"
    )
    plan = plan_job(sql).plan
    (agg,) = [n for n in _walk(plan.sinks[0]) if type(n) is P.DeltaAggregate]
    with StateBackend(tmp_path) as backend:
        Graph(plan, backend)
        mirror = backend.indexed(agg.source.mirror, list(agg.source.primary_key), {})
        assert mirror._types == list(agg.inputs[0].types)


def _walk(node: P.Node) -> list[P.Node]:
    return [node, *(n for child in node.inputs for n in _walk(child))]
