"""Sub-plan reuse (``planner/reuse.py``): identical subtrees of a job run once, as Flink's
``table.optimizer.reuse-sub-plan-enabled`` does, without changing EXPLAIN or any output.
Expected rows follow the query's semantics (the bids per window counted by hand)."""

from __future__ import annotations

import datetime as dt

from test_planned_runs import backend, run  # noqa: F401  (the LMDB fixture)

from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import topological

BIDS = """CREATE TABLE bid (auction BIGINT, price BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen');
CREATE TABLE out (auction BIGINT, num BIGINT) WITH ('connector' = 'blackhole');
"""
COUNTS = """SELECT auction, count(*) AS num, window_start AS s, window_end AS e
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  {where} GROUP BY auction, window_start, window_end"""
# Nexmark q5's shape: the auctions with the most bids per window, the count planned twice
HOTTEST = f"""INSERT INTO out SELECT a.auction, a.num FROM ({COUNTS.format(where="")}) AS a
JOIN (SELECT max(num) AS maxn, s, e FROM ({{inner}}) AS c GROUP BY s, e) AS m
  ON a.s = m.s AND a.e = m.e AND a.num >= m.maxn;"""
ROWS = [(1, 5, 0), (1, 7, 3), (2, 1, 4), (2, 2, 11), (3, 9, 12), (4, 1, 25)]


def rows() -> list[tuple]:
    start = dt.datetime(2024, 1, 1)
    return [(a, p, start + dt.timedelta(seconds=s)) for a, p, s in ROWS]


def job(inner: str = COUNTS.format(where=""), reuse: str | None = None) -> str:
    setting = (
        "" if reuse is None else f"SET 'table.optimizer.reuse-sub-plan-enabled' = '{reuse}';\n"
    )
    return setting + BIDS + HOTTEST.format(inner=inner)


def window_aggs(sql: str) -> list[P.WindowAggregate]:
    plan = plan_job(sql).plan
    return [n for n in topological(plan.sinks) if isinstance(n, P.WindowAggregate)]


def test_the_two_identical_counts_are_one_node_fanning_out_to_both_branches():
    aggs = window_aggs(job())
    assert len(aggs) == 2  # the shared count per auction and the MAX over it
    plan = plan_job(job()).plan
    consumers = [n for n in topological(plan.sinks) if aggs[0] in n.inputs]
    assert len(consumers) == 2


def test_the_setting_false_plans_every_copy_and_explain_is_the_same_either_way():
    assert len(window_aggs(job(reuse="false"))) == 3
    shared, unshared = plan_job(job()), plan_job(job(reuse="false"))
    assert shared.explain() == unshared.explain()
    assert shared.plan.fingerprint != unshared.plan.fingerprint  # their state differs


def test_different_branches_stay_apart():
    other = COUNTS.format(where="WHERE price > 1")
    assert len(window_aggs(job(inner=other))) == 3


def test_a_non_deterministic_function_keeps_both_copies():
    noisy = COUNTS.format(where="WHERE RAND() < 2")  # each copy draws its own numbers
    sql = BIDS + HOTTEST.replace(COUNTS.format(where=""), noisy).format(inner=noisy)
    assert len(window_aggs(sql)) == 3


def test_shared_and_unshared_jobs_give_the_hottest_auctions_per_window(backend):  # noqa: F811
    # [0s, 10s): auction 1 has 2 bids, auction 2 one; [10s, 20s): auctions 2 and 3 one each
    # (a tie: both); [20s, 30s): auction 4 alone
    want = ["+I[1, 2]", "+I[2, 1]", "+I[3, 1]", "+I[4, 1]"]
    assert sorted(run(job(), backend, "bid", rows())) == want


def test_unshared_job_gives_the_same_rows(tmp_path):
    from deltaflow.state.backend import StateBackend

    other = StateBackend(tmp_path / "other")
    try:
        got = run(job(reuse="false"), other, "bid", rows())
    finally:
        other.close()
    assert sorted(got) == ["+I[1, 2]", "+I[2, 1]", "+I[3, 1]", "+I[4, 1]"]
