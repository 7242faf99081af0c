"""GROUP BY / DISTINCT over ARRAY and MAP values: grouped by content (equal lists and equal
dicts, whatever their entry order, are one group), retracted, kept across a commit, and the
results carry lists and dicts again."""

from __future__ import annotations

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph

SOURCE = (
    "CREATE TABLE t (id INT, arr ARRAY<INT>, m MAP<STRING, INT>, PRIMARY KEY (id) NOT ENFORCED) "
    "WITH ('connector' = 'kafka', 'topic' = 't', 'format' = 'debezium-json');\n"
)


def graph(select: str, sink: str, backend):
    sql = SOURCE + f"CREATE TABLE o ({sink}) WITH ('connector' = 'print');\nINSERT INTO o {select};"
    plan = plan_job(sql).plan
    (sink_node,) = plan.sinks
    scan = sink_node
    while scan.inputs:
        scan = scan.inputs[0]
    return Graph(plan, backend), scan.node_id, sink_node.node_id


def push(g, scan, sink, changes):
    out = g.push(scan, Batch([k for k, _ in changes], [r for _, r in changes]))
    got = out.get(sink, Batch())
    return list(zip(got.kinds, got.rows, strict=True))


def test_arrays_group_by_content_with_retractions(backend):
    g, scan, sink = graph(
        "SELECT arr, COUNT(*) FROM t GROUP BY arr", "a ARRAY<INT>, n BIGINT", backend
    )
    out = push(g, scan, sink, [(INSERT, (1, [1, 2], None)), (INSERT, (2, [1, 2], None)),
                               (INSERT, (3, [2, 1], None)), (INSERT, (4, None, None))])  # fmt: skip
    assert out[-1] == (INSERT, (None, 1)) and (UPDATE_AFTER, ([1, 2], 2)) in out
    assert (INSERT, ([2, 1], 1)) in out  # order matters in an ARRAY
    backend.commit({})
    g, scan, sink = graph(
        "SELECT arr, COUNT(*) FROM t GROUP BY arr", "a ARRAY<INT>, n BIGINT", backend
    )
    out = push(
        g, scan, sink, [(UPDATE_BEFORE, (2, [1, 2], None)), (UPDATE_AFTER, (2, [2, 1], None))]
    )
    assert out == [
        (UPDATE_BEFORE, ([1, 2], 2)), (UPDATE_AFTER, ([1, 2], 1)),
        (UPDATE_BEFORE, ([2, 1], 1)), (UPDATE_AFTER, ([2, 1], 2)),
    ]  # fmt: skip


def test_maps_are_one_group_whatever_their_entry_order(backend):
    g, scan, sink = graph("SELECT DISTINCT m FROM t", "m MAP<STRING, INT>", backend)
    out = push(
        g,
        scan,
        sink,
        [(INSERT, (1, None, {"a": 1, "b": 2})), (INSERT, (2, None, {"b": 2, "a": 1}))],
    )
    assert out == [(INSERT, ({"a": 1, "b": 2},))]
    out = push(g, scan, sink, [(DELETE, (1, None, {"a": 1, "b": 2}))])
    assert out == []  # the other row keeps the group
    out = push(g, scan, sink, [(DELETE, (2, None, {"b": 2, "a": 1}))])
    assert out == [(DELETE, ({"a": 1, "b": 2},))]
