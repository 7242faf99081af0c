"""A column-selecting Calc above a DeltaJoin (or a cascade's top join), its only consumer, is
folded into it: the join emits its rows with just the selected columns, the Calc passes
batches through, and the changelog is the one of Flink's regular join followed by the Calc."""

from __future__ import annotations

import tempfile

from dl_helpers import FORCE_JOIN, TABLES, run, scan_ids

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph
from deltaflow.processor.runtime.simple import PassThrough
from deltaflow.state.backend import StateBackend

INS, UB, UA, D = INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE
SINK = "CREATE TABLE out_t (w INT, id INT, rid INT) WITH ('connector' = 'print');\n"
C_TABLE = (
    "CREATE TABLE c (cid INT, w INT, z INT, PRIMARY KEY (cid) NOT ENFORCED)\n"
    "  WITH ('connector' = 'kafka', 'topic' = 'c', 'format' = 'debezium-json');\n"
)


def job(join: str, w: str = "b.w") -> str:
    """b's w, a's id, b's rid: columns of both sides, in another order."""
    query = f"SELECT {w}, a.id, b.rid FROM a {join} JOIN b ON a.k = b.k"
    return FORCE_JOIN + TABLES + SINK + f"INSERT INTO out_t {query};"


STEPS = [
    ("a", Batch([INS, INS], [(1, 7, 5), (2, 8, 6)])),
    ("b", Batch([INS], [(10, 7, 9)])),
    ("a", Batch([UB, UA], [(1, 7, 5), (1, 7, 4)])),
    ("b", Batch([UB, UA, D], [(10, 7, 9), (10, 7, 3), (10, 7, 3)])),
]


def ops_of(sql: str) -> tuple[dict, dict]:
    """The graph's operators by node type name (the last of each type)."""
    plan = plan_job(sql).plan
    with tempfile.TemporaryDirectory() as tmp, StateBackend(tmp) as backend:
        graph = Graph(plan, backend)
        nodes = {type(graph.nodes[i]).__name__: i for i in graph.order}
        return nodes, {name: graph.ops[i] for name, i in nodes.items()}


def test_inner_delta_join_emits_the_selected_columns():
    nodes, ops = ops_of(job("INNER"))
    assert isinstance(ops["Calc"], PassThrough)
    assert ops["DeltaJoin"].step.project is not None
    assert run(job("INNER"), STEPS) == [
        [],
        [(INS, (9, 1, 10))],
        [(UB, (9, 1, 10)), (UA, (9, 1, 10))],
        [(UB, (9, 1, 10)), (UA, (3, 1, 10)), (D, (3, 1, 10))],
    ]


def test_left_delta_join_pads_then_selects():
    """Flink's LEFT join: padded rows +I/-D around the first and last match, then the
    selection of (b.w, a.id, b.rid)."""
    assert isinstance(ops_of(job("LEFT"))[1]["Calc"], PassThrough)
    steps = [*STEPS[:3], ("b", Batch([D], [(10, 7, 9)]))]
    assert run(job("LEFT"), steps) == [
        [(INS, (None, 1, None)), (INS, (None, 2, None))],
        [(D, (None, 1, None)), (INS, (9, 1, 10))],
        [(D, (9, 1, 10)), (INS, (9, 1, 10))],
        [(D, (9, 1, 10)), (INS, (None, 1, None))],
    ]


def test_computing_calc_stays_unfolded():
    _, ops = ops_of(job("INNER", w="b.w + 1"))
    assert not isinstance(ops["Calc"], PassThrough)
    assert ops["DeltaJoin"].step.project is None
    assert run(job("INNER", w="b.w + 1"), STEPS)[3] == [
        (UB, (10, 1, 10)),
        (UA, (4, 1, 10)),
        (D, (4, 1, 10)),
    ]


def test_cascade_top_join_emits_the_selected_columns():
    sql = (
        FORCE_JOIN
        + TABLES
        + C_TABLE
        + "CREATE TABLE out_t (z INT, id INT) WITH ('connector' = 'print');\n"
        + "INSERT INTO out_t SELECT c.z, a.id FROM a JOIN b ON a.k = b.k JOIN c ON b.w = c.w;"
    )
    plan = plan_job(sql).plan
    (sink,) = plan.sinks
    ids = scan_ids(sink, {})
    with tempfile.TemporaryDirectory() as tmp, StateBackend(tmp) as backend:
        graph = Graph(plan, backend)
        (cascade,) = [i for i in graph.order if type(graph.nodes[i]) is P.DeltaJoinCascade]
        (above,) = graph.consumers[cascade]
        assert isinstance(graph.ops[above[0]], PassThrough)
        steps = [
            ("a", Batch([INS], [(1, 7, 5)])),
            ("c", Batch([INS], [(20, 9, 42)])),
            ("b", Batch([INS], [(10, 7, 9)])),
            ("c", Batch([UB, UA], [(20, 9, 42), (20, 9, 43)])),
        ]
        out = []
        for table, batch in steps:
            got = graph.push(ids[table], batch).get(sink.node_id, Batch())
            out.append(list(zip(got.kinds, got.rows, strict=True)))
    assert out == [[], [], [(INS, (42, 1))], [(UB, (42, 1)), (UA, (43, 1))]]
