"""IN / EXISTS / NOT IN / NOT EXISTS subqueries between window TVFs correlated on both window
bounds: planned as Flink 2.3 plans them, a ``WindowJoin`` with ``joinType=[LeftSemiJoin]`` or
``[LeftAntiJoin]`` (insert-only), and run on real LMDB state. Expected rows follow SQL's
semantics of IN and NOT IN (a NULL operand or a NULL in the subquery's column is unknown,
which keeps no row, unless the subquery is empty)."""

from __future__ import annotations

import datetime as dt

import pytest

from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph
from deltaflow.state.backend import StateBackend

DDL = """CREATE TABLE clicks (user_id BIGINT, url STRING, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE pageviews (user_id BIGINT, page STRING, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE out_t (url STRING) WITH ('connector' = 'print');
"""
L_ = "TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) L"
R_ = "TABLE(TUMBLE(TABLE pageviews, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) R"
BOUNDS = "L.window_start = R.window_start AND L.window_end = R.window_end"


def sql(where: str) -> str:
    return DDL + f"INSERT INTO out_t SELECT L.url FROM {L_} WHERE {where};"


def nodes(node: P.Node, kind: type) -> list:
    return ([node] if isinstance(node, kind) else []) + [
        n for child in node.inputs for n in nodes(child, kind)
    ]


def window_join(where: str) -> P.WindowJoin:
    (sink,) = plan_job(sql(where)).plan.sinks
    assert not nodes(sink, P.SemiJoin)
    (join,) = nodes(sink, P.WindowJoin)
    return join


def test_in_is_a_window_semi_join_keyed_by_the_value():
    join = window_join(f"L.user_id IN (SELECT R.user_id FROM {R_} WHERE {BOUNDS})")
    assert join.join_type == "SEMI" and join.condition is None
    assert (join.left_keys, join.right_keys) == ((0,), (0,))
    assert join.fields == join.inputs[0].fields  # the left columns only


def test_not_in_keeps_flinks_null_condition():
    text = plan_job(sql(f"L.user_id NOT IN (SELECT R.user_id FROM {R_} WHERE {BOUNDS})")).explain()
    assert (
        "joinType=[LeftAntiJoin], where=[OR(IS NULL(user_id), IS NULL(__c0), =(user_id, __c0))]"
        in text
    )
    assert "changelogMode=[I]" in text.splitlines()[1]


def test_exists_on_the_bounds_alone_joins_on_true():
    join = window_join(f"EXISTS (SELECT * FROM {R_} WHERE {BOUNDS})")
    assert join.join_type == "SEMI" and join.left_keys == () and join.condition is None
    assert "where=[true]" in plan_job(sql(f"EXISTS (SELECT * FROM {R_} WHERE {BOUNDS})")).explain()


def test_one_bound_or_other_windows_stay_regular_semi_joins():
    one = f"EXISTS (SELECT * FROM {R_} WHERE L.window_start = R.window_start)"
    hop = R_.replace("TUMBLE(TABLE pageviews, DESCRIPTOR(ts), INTERVAL '1' MINUTE)",
                     "TUMBLE(TABLE pageviews, DESCRIPTOR(ts), INTERVAL '2' MINUTE)")  # fmt: skip
    other = f"EXISTS (SELECT * FROM {hop} WHERE {BOUNDS})"
    for where in (one, other):
        (sink,) = plan_job(sql(where)).plan.sinks
        assert not nodes(sink, P.WindowJoin) and len(nodes(sink, P.SemiJoin)) == 1


@pytest.fixture
def backend(tmp_path):
    b = StateBackend(tmp_path / "state")
    yield b
    b.close()


def at(seconds: int) -> dt.datetime:
    return dt.datetime(2024, 1, 1) + dt.timedelta(seconds=seconds)


# window [0, 60): clicks by users 1, NULL, 2, views by 1, 3; window [60, 120): clicks by 1 and
# NULL, no views; window [120, 180): a click by 4, a view by NULL
CLICKS = [(1, "a", at(1)), (None, "b", at(2)), (2, "c", at(3)), (1, "d", at(61)),
          (None, "e", at(62)), (4, "f", at(121))]  # fmt: skip
VIEWS = [(1, "p", at(5)), (3, "q", at(10)), (None, "r", at(125))]


def run(where: str, backend: StateBackend) -> list[str]:
    plan = plan_job(sql(where)).plan
    graph = Graph(plan, backend)
    (sink,) = plan.sinks
    scans = {n.table.rsplit(".", 1)[-1]: n for n in nodes(sink, P.TableSourceScan)}
    out: list[str] = []
    results = []
    for table, rows in (("clicks", CLICKS), ("pageviews", VIEWS)):
        batch = Batch()
        for row in rows:
            batch.append(RowKind.INSERT, row)
        results.append(graph.push(scans[table].node_id, batch))
    results.append(graph.finish())
    for result in results:
        got = result.get(sink.node_id)
        if got is not None:
            assert set(got.kinds) <= {RowKind.INSERT}
            out += [r[0] for r in got.rows]
    return sorted(out)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (f"L.user_id IN (SELECT R.user_id FROM {R_} WHERE {BOUNDS})", ["a"]),
        # NULL NOT IN a non-empty window is unknown; anything NOT IN an empty one is true
        (f"L.user_id NOT IN (SELECT R.user_id FROM {R_} WHERE {BOUNDS})", ["c", "d", "e"]),
        (f"EXISTS (SELECT * FROM {R_} WHERE {BOUNDS} AND R.user_id = L.user_id)", ["a"]),
        (
            f"NOT EXISTS (SELECT * FROM {R_} WHERE {BOUNDS} AND R.user_id = L.user_id)",
            ["b", "c", "d", "e", "f"],
        ),
        (f"EXISTS (SELECT * FROM {R_} WHERE {BOUNDS})", ["a", "b", "c", "f"]),
        (f"NOT EXISTS (SELECT * FROM {R_} WHERE {BOUNDS} AND R.page <> 'p')", ["d", "e"]),
    ],
)
def test_window_semi_and_anti_joins_run(where, expected, backend):
    assert run(where, backend) == expected
