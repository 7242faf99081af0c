"""DeltaJoin against the regular join on the same valid CDC input (hypothesis): per batch the
same multiset of changes (only the order of the rows one change joins may differ: the delta
join meets them in primary-key order), so the same result; and that result is the join of
the two final tables. EVENTUAL emits exactly the regular join's additions."""

from __future__ import annotations

import tempfile
from collections import Counter

import pytest
from dl_helpers import FORCE_JOIN, TABLES, batches, final, find, history_st, run, scan_ids
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import ADDS, Batch
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph
from deltaflow.processor.runtime.mirror import side_index
from deltaflow.state.backend import StateBackend

SELECT = "SELECT a.id, a.k, a.v, b.rid, b.w FROM {left} {join} JOIN {right} ON a.k = b.k{extra}"
SINK = "CREATE TABLE out_t (id INT, ak INT, v INT, rid INT, w INT) WITH ('connector' = 'print');\n"
FILTERED = "(SELECT * FROM a WHERE v > 1) AS a"


def job(join: str, condition: bool = False, filtered: bool = False, delta: str = "") -> str:
    extra = " AND a.v <= b.w" if condition else ""
    left = FILTERED if filtered else "a"
    query = SELECT.format(left=left, join=join, right="b", extra=extra)
    return delta + TABLES + SINK + f"INSERT INTO out_t {query};"


def joined(a_rows, b_rows, join: str, condition: bool, filtered: bool) -> Counter:
    """The join of two tables, computed from SQL's definition."""
    a_rows = [r for r in a_rows if not filtered or r[2] > 1]
    out: Counter = Counter()

    def match(x, y):
        return x[1] is not None and x[1] == y[1] and (not condition or x[2] <= y[2])

    for x in a_rows:
        hits = [y for y in b_rows if match(x, y)]
        out.update(x + y for y in hits)
        if not hits and join in ("LEFT", "FULL"):
            out[x + (None, None, None)] += 1
    if join in ("RIGHT", "FULL"):
        for y in b_rows:
            if not any(match(x, y) for x in a_rows):
                out[(None, None, None) + y] += 1
    return Counter({(r[0], r[1], r[2], r[3], r[5]): n for r, n in out.items()})


def live_rows(steps, table):
    rows = {}
    for name, batch in steps:
        if name != table:
            continue
        for kind, row in zip(batch.kinds, batch.rows, strict=True):
            if ADDS[kind]:
                rows[row[0]] = row
            else:
                rows.pop(row[0], None)
    return list(rows.values())


def test_force_plans_a_delta_join_reading_the_scans():
    node = find(job("INNER", filtered=True, delta=FORCE_JOIN), P.DeltaJoin)
    assert node is not None and find(job("INNER", filtered=True), P.DeltaJoin) is None
    assert all(isinstance(i, P.TableSourceScan) for i in node.inputs)
    assert node.left.condition is not None and node.right.condition is None


@pytest.mark.parametrize("join", ["INNER", "LEFT", "RIGHT", "FULL"])
@pytest.mark.parametrize("condition,filtered", [(False, False), (True, False), (False, True)])
@settings(max_examples=25, deadline=None)
@given(ops=history_st, size=st.integers(1, 6))
def test_delta_join_equals_regular_join(join, condition, filtered, ops, size):
    steps = batches(ops, size)
    regular = run(job(join, condition, filtered), steps)
    delta = run(job(join, condition, filtered, FORCE_JOIN), steps)
    for got, want in zip(delta, regular, strict=True):
        assert Counter(got) == Counter(want)
    expected = joined(live_rows(steps, "a"), live_rows(steps, "b"), join, condition, filtered)
    assert final(delta) == expected


@pytest.mark.parametrize("join", ["INNER", "LEFT", "RIGHT", "FULL"])
@settings(max_examples=25, deadline=None)
@given(ops=history_st, size=st.integers(1, 6))
def test_a_side_filtered_to_a_constant_is_looked_up_with_it(join, ops, size):
    """a WHERE v = 1, looked up by (k, v) with v = 1: rows updated into and out of the
    filter enter and leave the join as in the regular join."""
    filtered = job(join).replace("FROM a ", "FROM (SELECT * FROM a WHERE v = 1) AS a ")
    node = find(FORCE_JOIN + filtered, P.DeltaJoin)
    assert node.left.index == (1, 2) and node.left.fixed == ((1, 1),)
    steps = batches(ops, size)
    regular = run(filtered, steps)
    delta = run(FORCE_JOIN + filtered, steps)
    for got, want in zip(delta, regular, strict=True):
        assert Counter(got) == Counter(want)
    a_rows = [r for r in live_rows(steps, "a") if r[2] == 1]
    assert final(delta) == joined(a_rows, live_rows(steps, "b"), join, False, False)


@settings(max_examples=25, deadline=None)
@given(ops=history_st, size=st.integers(1, 6))
def test_eventual_emits_the_regular_joins_additions_only(ops, size):
    steps = batches(ops, size)
    eventual = "SET 'table.optimizer.delta-join.strategy' = 'EVENTUAL';\n"
    regular = run(job("INNER"), steps)
    delta = run(job("INNER", delta=eventual), steps)
    for got, want in zip(delta, regular, strict=True):
        assert all(ADDS[k] for k, _ in got)
        assert Counter(got) == Counter(c for c in want if ADDS[c[0]])


SELF = (
    TABLES
    + "CREATE TABLE pairs (id INT, id2 INT) WITH ('connector' = 'print');\n"
    + "INSERT INTO pairs SELECT x.id, y.id FROM a AS x {join} JOIN a AS y ON x.k = y.k;"
)


@pytest.mark.parametrize("join", ["INNER", "FULL"])
@settings(max_examples=25, deadline=None)
@given(ops=history_st, size=st.integers(1, 6))
def test_self_join_reads_one_mirror_as_the_regular_join_reads_its_two_states(join, ops, size):
    steps = batches(ops, size, tables=("a",))
    regular = run(SELF.format(join=join), steps)
    delta = run(FORCE_JOIN + SELF.format(join=join), steps)
    assert find(FORCE_JOIN + SELF.format(join=join), P.DeltaJoin) is not None
    for got, want in zip(delta, regular, strict=True):
        assert Counter(got) == Counter(want)


def test_left_join_changelog_follows_flinks_null_padding():
    """Flink's regular LEFT join: +I padded, -D padded when the first match arrives, then
    joined rows; the padded row comes back when the last match leaves."""
    steps = [
        ("a", Batch([0], [(1, 7, 5)])),
        ("b", Batch([0], [(10, 7, 9)])),
        ("b", Batch([3], [(10, 7, 9)])),
    ]
    out = run(job("LEFT", delta=FORCE_JOIN), steps)
    assert out == [
        [(0, (1, 7, 5, None, None))],
        [(3, (1, 7, 5, None, None)), (0, (1, 7, 5, 10, 9))],
        [(3, (1, 7, 5, 10, 9)), (0, (1, 7, 5, None, None))],
    ]


@settings(max_examples=15, deadline=None)
@given(ops=history_st, size=st.integers(1, 6), cut=st.integers(0, 40))
def test_mirrors_survive_a_restart_from_committed_state(tmp_path_factory, ops, size, cut):
    """Committed mirrors are the join's whole state: a new graph on the reopened directory
    continues exactly where the first one stopped."""
    steps = batches(ops, size)
    plan = plan_job(job("FULL", delta=FORCE_JOIN)).plan
    sink = plan.sinks[0]
    ids = scan_ids(sink, {})
    path = tmp_path_factory.mktemp("restart")
    out = []
    for part in (steps[:cut], steps[cut:]):
        with StateBackend(path) as backend:
            graph = Graph(plan, backend)
            for table, batch in part:
                got = graph.push(ids[table], batch).get(sink.node_id, Batch())
                out.append(Counter(zip(got.kinds, got.rows, strict=True)))
                backend.commit()
    assert out == [Counter(step) for step in run(job("FULL"), steps)]


@settings(max_examples=25, deadline=None)
@given(ops=history_st, size=st.integers(1, 6))
def test_a_filtered_side_is_indexed_by_its_passing_rows_only(ops, size):
    """a's side filters v > 1 and is looked up by k (not its primary key): its mirror's index
    is one of the rows passing the filter (``mirror.side_index``), named by the filter, and
    holds exactly those rows; b's (no filter) holds all of b's rows."""
    sql = job("INNER", filtered=True, delta=FORCE_JOIN)
    node = find(sql, P.DeltaJoin)
    name = side_index(node.left)
    assert name.startswith("by:1|if:") and side_index(node.right) == "by:1"
    steps = batches(ops, size)
    plan = plan_job(sql).plan
    ids = scan_ids(plan.sinks[0], {})
    with tempfile.TemporaryDirectory() as tmp, StateBackend(tmp) as backend:
        graph = Graph(plan, backend)
        for table, batch in steps:
            graph.push(ids[table], batch)
            backend.commit()
        a_index = backend.packed_index(f"{node.left.mirror}#{name}")
        b_index = backend.packed_index(f"{node.right.mirror}#by:1")
        assert len(a_index) == sum(1 for r in live_rows(steps, "a") if r[2] > 1)
        assert len(b_index) == len(live_rows(steps, "b"))
