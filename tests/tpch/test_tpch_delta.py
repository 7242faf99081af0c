"""TPC-H under ``'table.optimizer.delta-join.strategy' = 'FORCE'``: a query whose joins are
all delta-eligible plans every join as a DeltaJoin (no join state; each change looked up in
the other side's LMDB mirror) and must give DuckDB's final answer, as with the default
strategy; a query with a join that is not eligible is refused with the planner's reason,
the one AUTO's EXPLAIN prints on that join (``deltaJoin=[not rewritten: ...]``).

``ELIGIBLE`` lists the queries that must plan under FORCE (a regression if one is refused).
The others are run too when they plan (the subquery plans may become eligible), and
otherwise must be refused by the delta-join rule with a reason. ``make test`` runs
``QUICK``; ``make tpch`` (DELTAFLOW_TPCH=full) every query with a join.
"""

from __future__ import annotations

import os
import re
import uuid

import pytest
import tpch_data
import tpch_queries
import tpch_run

from deltaflow.formats.errors import PlanError
from deltaflow.processor.planner.api import plan_job

SF = float(os.environ.get("DELTAFLOW_TPCH_SF", "0.01"))
FORCE = "SET 'table.optimizer.delta-join.strategy' = 'FORCE';\n"
NO_JOIN = (1, 6)
ELIGIBLE = (3, 5, 7, 8, 9, 10, 12, 13, 14, 19)
QUICK = (3, 12, 19)
QUERIES = (
    tuple(q for q in sorted(tpch_queries.QUERIES) if q not in NO_JOIN)
    if os.environ.get("DELTAFLOW_TPCH") == "full"
    else QUICK
)


@pytest.fixture(scope="module")
def tpch(broker):
    data = tpch_data.generate(SF)
    tag = uuid.uuid4().hex[:8]
    topics = {t: f"tpch-{t}-{tag}" for t in tpch_data.PRIMARY_KEYS}
    tpch_run.produce(data, broker, topics)
    return data, tpch_run.source_ddl(data, broker, topics), tag


@pytest.mark.parametrize("q", QUERIES, ids=[f"q{q}" for q in QUERIES])
def test_force_plans_delta_joins_that_give_duckdbs_answer(q, tpch, broker, tmp_path):
    data, sources, tag = tpch
    sink = f"tpch-force-q{q}-{tag}"
    sql = FORCE + tpch_run.job_sql(q, sources, broker, sink)
    try:
        explain = plan_job(sql).explain()
    except PlanError as e:
        assert q not in ELIGIBLE, f"q{q} is delta-eligible but FORCE refused it: {e.message}"
        # refused by the inner-join rule or, for a semi / anti join, by the semi-join rule
        refused = re.search(
            r"cannot be a delta join \(rule rewrite_delta_(semi_)?join\): ", e.message
        )
        assert refused, e.message
        reason = e.message[refused.end() :].split("; SET it to", 1)[0]
        print(f"TPC-H q{q} FORCE: not eligible: {reason}")
        return
    deltas = len(re.findall(r"\bDeltaJoin\(", explain))
    assert deltas > 0 and not re.search(r"(?<!Delta)\bJoin\(", explain), explain
    ours, seconds, tables = tpch_run.run_query(sql, broker, sink, tmp_path / "state")
    expected = tpch_run.continuous_answer(tpch_run.duckdb_answer(data, q), q)
    assert tpch_run.differences(ours, expected) == []
    events = sum(len(data.events[t]) for t in tables)
    print(f"TPC-H q{q} FORCE ({deltas} delta joins): {events} events in {seconds:.1f} s")
