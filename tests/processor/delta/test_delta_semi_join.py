"""DeltaSemiJoin against the regular semi / anti join on the same valid CDC input (hypothesis):
per batch the same multiset of changes, and a result that is SQL's IN / EXISTS / NOT EXISTS /
NOT IN over the two final tables; and the reasons EXPLAIN gives where it is not planned."""

from __future__ import annotations

from collections import Counter

import pytest
from dl_helpers import FORCE_JOIN, TABLES, batches, final, find, history_st, run
from hypothesis import given, settings
from hypothesis import strategies as st
from test_delta_join_runs import live_rows

from deltaflow.formats.errors import PlanError
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job

SINK = "CREATE TABLE out_t (id INT, k INT, v INT) WITH ('connector' = 'print');\n"
WHERE = {
    "in": "k IN (SELECT k FROM b WHERE w > 1)",
    "exists": "EXISTS (SELECT * FROM b WHERE b.k = a.k AND b.w >= a.v)",
    "not_exists": "NOT EXISTS (SELECT * FROM b WHERE b.k = a.k AND b.w >= a.v)",
    "not_in_correlated": "v NOT IN (SELECT w FROM b WHERE b.k = a.k)",
}


def job(where: str, delta: str = "") -> str:
    return delta + TABLES + SINK + f"INSERT INTO out_t SELECT id, k, v FROM a WHERE {where};"


def expected(name: str, a_rows, b_rows) -> Counter:
    """The query over the final tables, from SQL's definitions (three-valued NOT IN)."""
    out: Counter = Counter()
    for x in a_rows:
        same = [y for y in b_rows if x[1] is not None and y[1] == x[1]]
        if name == "in":
            keep = any(y[2] > 1 for y in same)
        elif name == "exists":
            keep = any(y[2] >= x[2] for y in same)
        elif name == "not_exists":
            keep = not any(y[2] >= x[2] for y in same)
        else:  # x.v NOT IN (w of b's rows with b.k = a.k): TRUE only if every w differs
            keep = all(x[2] is not None and y[2] is not None and y[2] != x[2] for y in same)
        if keep:
            out[x] += 1
    return out


@pytest.mark.parametrize("name", sorted(WHERE))
@settings(max_examples=25, deadline=None)
@given(ops=history_st, size=st.integers(1, 6))
def test_delta_semi_join_equals_the_regular_one(name, ops, size):
    node = find(job(WHERE[name], FORCE_JOIN), P.DeltaSemiJoin)
    assert node is not None and all(isinstance(i, P.TableSourceScan) for i in node.inputs)
    steps = batches(ops, size)
    regular = run(job(WHERE[name]), steps)
    delta = run(job(WHERE[name], FORCE_JOIN), steps)
    for got, want in zip(delta, regular, strict=True):
        assert Counter(got) == Counter(want)
    assert final(delta) == expected(name, live_rows(steps, "a"), live_rows(steps, "b"))


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("v NOT IN (SELECT w FROM b)", "it has no equality between the two sides"),
        ("k IN (SELECT k FROM b GROUP BY k)", "the right input is not a source table"),
    ],
)
def test_force_names_why_a_semi_join_is_not_a_delta_join(where, reason):
    with pytest.raises(PlanError, match=reason):
        plan_job(job(where, FORCE_JOIN))
    text = plan_job(job(where)).explain()  # AUTO: regular, with the reason on its line
    assert f"deltaJoin=[not rewritten: {reason}" in text


def test_intersect_keys_match_nulls_so_they_are_not_looked_up():
    sql = (
        TABLES
        + SINK.replace("id INT, k INT, v INT", "k INT, v INT")
        + ("INSERT INTO out_t SELECT k, v FROM a INTERSECT SELECT k, w FROM b;")
    )
    assert "not rewritten: its keys match NULL to NULL" in plan_job(sql).explain()
