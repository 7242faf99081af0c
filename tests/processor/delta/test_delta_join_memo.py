"""DeltaJoin's memo of a side looked up by its primary key (W3D's items): per batch the same
multiset of changes as the regular join on valid CDC input (hypothesis), with the memo on,
and small enough to start over; the result is the join of the two final tables (SQL's
definition). The memo is used only where a looked-up row cannot change its key."""

from __future__ import annotations

import tempfile
from collections import Counter

import pytest
from dl_helpers import FORCE_JOIN, TABLES, batches, final, history_st, run
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import ADDS, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime import delta_join
from deltaflow.processor.runtime.delta_join import DeltaJoinOperator
from deltaflow.processor.runtime.graph import Graph
from deltaflow.state.backend import StateBackend

SINK = "CREATE TABLE out_t (id INT, ak INT, v INT, rid INT, w INT) WITH ('connector' = 'print');\n"
# a.k joins b's primary key (b is looked up by it); BY_A: b.k joins a's primary key
ON = {"BY_B": "a.k = b.rid", "BY_A": "b.k = a.id", "NEITHER": "a.k = b.k"}


def job(join: str, on: str, delta: str = "") -> str:
    query = f"SELECT a.id, a.k, a.v, b.rid, b.w FROM a {join} JOIN b ON {ON[on]}"
    return delta + TABLES + SINK + f"INSERT INTO out_t {query};"


def live_rows(steps, table: str) -> list[tuple]:
    rows: dict = {}
    for name, batch in steps:
        if name == table:
            for kind, row in zip(batch.kinds, batch.rows, strict=True):
                if ADDS[kind]:
                    rows[row[0]] = row
                else:
                    rows.pop(row[0], None)
    return list(rows.values())


def joined(a_rows, b_rows, join: str, on: str) -> Counter:
    """The join of two tables (a: id, k, v; b: rid, k, w) from SQL's definition."""

    def match(x, y):
        left, right = {"BY_B": (x[1], y[0]), "BY_A": (x[0], y[1]), "NEITHER": (x[1], y[1])}[on]
        return left is not None and left == right

    out: Counter = Counter()
    for x in a_rows:
        hits = [(x[0], x[1], x[2], y[0], y[2]) for y in b_rows if match(x, y)]
        out.update(hits)
        if not hits and join in ("LEFT", "FULL"):
            out[(x[0], x[1], x[2], None, None)] += 1
    if join in ("RIGHT", "FULL"):
        for y in b_rows:
            if not any(match(x, y) for x in a_rows):
                out[(None, None, None, y[0], y[2])] += 1
    return out


def memos(sql: str) -> tuple[bool, bool]:
    """Whether the job's DeltaJoin remembers its left and its right side's rows."""
    plan = plan_job(sql).plan
    with tempfile.TemporaryDirectory() as tmp, StateBackend(tmp) as backend:
        (op,) = [o for o in Graph(plan, backend).ops.values() if isinstance(o, DeltaJoinOperator)]
        return tuple(m is not None for m in op.memos)


def test_memo_only_for_a_side_looked_up_by_its_primary_key():
    assert memos(job("INNER", "BY_B", FORCE_JOIN)) == (False, True)
    assert memos(job("LEFT", "BY_A", FORCE_JOIN)) == (True, False)
    assert memos(job("INNER", "NEITHER", FORCE_JOIN)) == (False, False)
    filtered = job("INNER", "BY_B", FORCE_JOIN).replace(
        "JOIN b ON", "JOIN (SELECT * FROM b WHERE w > 1) AS b ON"
    )
    assert memos(filtered) == (False, False)  # a Calc on b: not remembered
    self_join = (
        FORCE_JOIN + TABLES + "CREATE TABLE p (x INT, y INT) WITH ('connector' = 'print');\n"
        "INSERT INTO p SELECT x.id, y.id FROM a AS x JOIN a AS y ON x.k = y.id;"
    )
    assert memos(self_join) == (False, False)


@pytest.mark.parametrize("join", ["INNER", "LEFT", "RIGHT", "FULL"])
@pytest.mark.parametrize("on", ["BY_B", "BY_A"])
@pytest.mark.parametrize("memo_keys", [200_000, 2])
@settings(max_examples=25, deadline=None)
@given(ops=history_st, size=st.integers(1, 6))
def test_delta_join_with_memo_equals_regular_join(join, on, memo_keys, ops, size):
    steps = batches(ops, size)
    regular = run(job(join, on), steps)
    saved = delta_join.MEMO_KEYS
    delta_join.MEMO_KEYS = memo_keys
    try:
        delta = run(job(join, on, FORCE_JOIN), steps)
    finally:
        delta_join.MEMO_KEYS = saved
    for got, want in zip(delta, regular, strict=True):
        assert Counter(got) == Counter(want)
    assert final(delta) == joined(live_rows(steps, "a"), live_rows(steps, "b"), join, on)


def test_an_update_of_a_remembered_row_is_seen_by_the_next_lookup():
    """b row 1 is remembered by a's first batch; b's update then changes what a joins."""
    steps = [
        ("b", Batch([INSERT], [(1, 0, 10)])),
        ("a", Batch([INSERT], [(7, 1, 5)])),
        ("b", Batch([UPDATE_BEFORE, UPDATE_AFTER], [(1, 0, 10), (1, 0, 20)])),
        ("a", Batch([INSERT], [(8, 1, 6)])),
    ]
    out = run(job("INNER", "BY_B", FORCE_JOIN), steps)
    assert out == [
        [],
        [(INSERT, (7, 1, 5, 1, 10))],
        [(UPDATE_BEFORE, (7, 1, 5, 1, 10)), (UPDATE_AFTER, (7, 1, 5, 1, 20))],
        [(INSERT, (8, 1, 6, 1, 20))],
    ]
