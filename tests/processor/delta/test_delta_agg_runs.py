"""DeltaAggregate against GroupAggregate on the same valid CDC input (hypothesis): the same
changelog as GroupAggregate under mini-batch (one update per group per batch), the same
final table as GroupAggregate without it, and that table is the GROUP BY of the final input."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest
from dl_helpers import FORCE_AGG, TABLES, batches, final, find, history_st, run
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import ADDS, Batch
from deltaflow.processor import plan as P

MINI_BATCH = "SET 'table.exec.mini-batch.enabled' = 'true';\n"
QUERIES = {
    "plain": (
        "SELECT k, COUNT(*), SUM(v), MIN(v), MAX(v), AVG(v) FROM a GROUP BY k",
        "k INT, n BIGINT, s INT, lo INT, hi INT, av INT",
    ),
    "filtered": (
        "SELECT k, COUNT(DISTINCT v), SUM(v) FILTER (WHERE v > 2) FROM a WHERE v > 0 GROUP BY k",
        "k INT, n BIGINT, s INT",
    ),
    "two_keys": ("SELECT v, k, COUNT(id) FROM a GROUP BY v, k", "v INT, k INT, n BIGINT"),
}


def job(name: str, prefix: str = "") -> str:
    select, columns = QUERIES[name]
    sink = f"CREATE TABLE out_t ({columns}) WITH ('connector' = 'print');\n"
    return prefix + TABLES + sink + f"INSERT INTO out_t {select};"


def test_force_plans_a_delta_aggregate_reading_the_scan():
    node = find(job("filtered", FORCE_AGG), P.DeltaAggregate)
    assert node is not None and isinstance(node.inputs[0], P.TableSourceScan)
    assert node.source.condition is not None
    assert find(job("filtered"), P.DeltaAggregate) is None


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=30, deadline=None)
@given(ops=history_st, size=st.integers(1, 6))
def test_delta_aggregate_equals_group_aggregate(name, ops, size):
    steps = batches(ops, size, tables=("a",))
    mini = run(job(name, MINI_BATCH), steps)
    delta = run(job(name, FORCE_AGG), steps)
    assert delta == mini
    assert final(delta) == final(run(job(name), steps))


@settings(max_examples=30, deadline=None)
@given(ops=history_st, size=st.integers(1, 6))
def test_delta_aggregate_result_is_the_group_by_of_the_final_table(ops, size):
    steps = batches(ops, size, tables=("a",))
    rows = {}
    for _, batch in steps:
        for kind, row in zip(batch.kinds, batch.rows, strict=True):
            if ADDS[kind]:
                rows[row[0]] = row
            else:
                del rows[row[0]]
    groups: dict = {}
    for _, k, v in rows.values():
        groups.setdefault(k, []).append(v)
    expected = Counter(
        (k, len(vs), sum(vs), min(vs), max(vs), int(Decimal(sum(vs)) / len(vs)))
        for k, vs in groups.items()
    )
    assert final(run(job("plain", FORCE_AGG), steps)) == expected


def test_a_group_that_empties_is_deleted():
    steps = [
        ("a", Batch([0, 0], [(1, 7, 5), (2, 7, 3)])),
        ("a", Batch([1, 2], [(1, 7, 5), (1, 8, 5)])),
        ("a", Batch([3], [(2, 7, 3)])),
    ]
    out = run(job("two_keys", FORCE_AGG), steps)
    assert out == [
        [(0, (5, 7, 1)), (0, (3, 7, 1))],
        [(3, (5, 7, 1)), (0, (5, 8, 1))],
        [(3, (3, 7, 1))],
    ]
