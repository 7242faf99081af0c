"""A cascade whose joins look sources up by their primary keys (a JOIN b ON a.k = b.rid JOIN
c ON b.w = c.cid): those lookups are remembered (``delta_join.Memo``); per batch the same
multiset of changes as the chain of regular joins (hypothesis, with the memo large and with
a memo of 2 keys), and the result is the join of the final tables by SQL's definition."""

from __future__ import annotations

import tempfile
from collections import Counter

import pytest
from dl_helpers import FORCE_JOIN, final
from hypothesis import given, settings
from hypothesis import strategies as st
from test_delta_cascade_runs import (
    ALL_COLS,
    SINK,
    TABLES,
    compare,
    eq,
    history,
    join,
    op_st,
    tables_at_end,
)

from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime import delta_join
from deltaflow.processor.runtime.delta_cascade import DeltaCascadeOperator
from deltaflow.processor.runtime.graph import Graph
from deltaflow.state.backend import StateBackend


def by_keys(j1: str, j2: str) -> str:
    query = f"SELECT * FROM a {j1} JOIN b ON a.k = b.rid {j2} JOIN c ON b.w = c.cid"
    return TABLES + SINK.format(cols=ALL_COLS) + f"INSERT INTO out_t {query};"


def expected(tables, j1: str, j2: str) -> Counter:
    ab = join(tables["a"], tables["b"], j1, lambda x, y: eq(x[1], y[0]), 3, 3)
    return Counter(join(ab, tables["c"], j2, lambda x, y: eq(x[5], y[0]), 6, 3))


def test_the_primary_key_lookups_are_remembered():
    plan = plan_job(FORCE_JOIN + by_keys("INNER", "LEFT")).plan
    with tempfile.TemporaryDirectory() as tmp, StateBackend(tmp) as backend:
        graph = Graph(plan, backend)
        (op,) = [o for o in graph.ops.values() if isinstance(o, DeltaCascadeOperator)]
        remembered = {port: bool(source.memos) for port, (source, _) in op.paths.items()}
    # a is looked up by its k only (not a key): b and c by their primary keys
    assert sorted(remembered.values()) == [False, True, True]


@pytest.mark.parametrize(
    "j1,j2", [("INNER", "INNER"), ("INNER", "LEFT"), ("LEFT", "FULL"), ("RIGHT", "INNER")]
)
@pytest.mark.parametrize("memo_keys", [200_000, 2])
@settings(max_examples=20, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=40), size=st.integers(1, 5))
def test_cascade_with_memo_equals_regular_joins(j1, j2, memo_keys, ops, size):
    steps = history(ops, size, 3)
    saved = delta_join.MEMO_KEYS
    delta_join.MEMO_KEYS = memo_keys
    try:
        delta = compare(by_keys(j1, j2), steps)
    finally:
        delta_join.MEMO_KEYS = saved
    assert final(delta) == expected(tables_at_end(steps), j1, j2)
