"""TPC-H's plans as deltaflow plans them (no broker needed): Q2, Q8 and Q9 write
``FROM part, supplier, partsupp|lineitem ...``, an order that crosses ``part`` with
``supplier`` (no equality between them); their chains of inner joins are joined in a
connected order instead (rules/reorder_joins.py), so no join of any query whose WHERE and
ON connect its tables is keyless. Q11 and Q22 keep their one keyless join (the
uncorrelated scalar subquery's one row, ON TRUE, no equality to join on)."""

from __future__ import annotations

import re
import warnings

import pytest
import tpch_data
import tpch_flink
import tpch_queries
import tpch_run

from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.planner.rules.warn_keyless_joins import KeylessJoinWarning

ONE_ROW_SIDE = {11: 1, 22: 1}  # joined ON TRUE with a global aggregate's one row


@pytest.fixture(scope="module")
def sources():
    data = tpch_data.generate(0.001)
    return tpch_run.source_ddl(data, "localhost:9092", {t: t for t in tpch_data.PRIMARY_KEYS})


@pytest.mark.parametrize("q", sorted(tpch_queries.QUERIES), ids=lambda q: f"q{q}")
def test_no_join_is_keyless_where_the_tables_are_connected(q, sources):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        explain = plan_job(tpch_run.job_sql(q, sources, "localhost:9092", "result")).explain()
    assert [w for w in caught if issubclass(w.category, KeylessJoinWarning)] == []
    assert tpch_flink.keyless_joins(explain) == ONE_ROW_SIDE.get(q, 0), explain


@pytest.mark.parametrize("q", [2, 8, 9], ids=lambda q: f"q{q}")
def test_part_joins_a_table_it_has_an_equality_with_first(q, sources):
    explain = plan_job(tpch_run.job_sql(q, sources, "localhost:9092", "result")).explain()
    joins = [kind for _, kind, _ in tpch_flink.joins(explain)]
    assert joins and set(joins) == {"InnerJoin"}
    # part (first in FROM) joins partsupp (Q2) or lineitem (Q8, Q9) on its key alone
    wheres = re.findall(r"Join\(joinType=\[InnerJoin\], where=\[(.*?)\], ", explain)
    assert {"=(p_partkey, ps_partkey)", "=(p_partkey, l_partkey)"} & set(wheres), wheres
