"""Flink 2.3 on the same TPC-H events: an independent check of the change stream. Each of
the 22 queries as written, run by Flink (filesystem debezium-json sources holding the
events of the Kafka topics, a print sink; tpch_flink), must give DuckDB's final answer,
and Flink's plan of a query whose WHERE holds an equality between two tables must have
no keyless join except those of deltaflow's plan (FROM's order: Q2/Q8/Q9's part and
supplier; the one-row scalar aggregates of Q11/Q22 joined ON TRUE).

Collected only with DELTAFLOW_FLINK_PYTHON (``make tpch-flink``); one JVM for all
queries, about two to four minutes.
"""

from __future__ import annotations

import os

import pytest
import tpch_data
import tpch_flink
import tpch_queries
import tpch_run

SF = float(os.environ.get("DELTAFLOW_TPCH_SF", "0.01"))
QUERIES = sorted(tpch_queries.QUERIES)
pytestmark = pytest.mark.timeout(1800)  # one Flink JVM answers all 22 in the first test
KEYLESS = {2: 1, 8: 1, 9: 1, 11: 1, 22: 1}  # query -> keyless joins in both engines' plans


@pytest.fixture(scope="module")
def flink(tmp_path_factory):
    data = tpch_data.generate(SF)
    topics = {t: t for t in tpch_data.PRIMARY_KEYS}
    sources = tpch_run.source_ddl(data, "localhost:9092", topics)  # for the column types
    work = tmp_path_factory.mktemp("tpch-flink")
    python = os.environ["DELTAFLOW_FLINK_PYTHON"]
    return data, tpch_flink.answers(python, work, data, sources, QUERIES)


@pytest.mark.parametrize("q", QUERIES, ids=[f"q{q}" for q in QUERIES])
def test_flink_gives_duckdbs_final_answer_on_the_same_events(q, flink):
    data, answers = flink
    got = answers[str(q)]
    assert got["error"] is None, got["error"]
    expected = tpch_run.continuous_answer(tpch_run.duckdb_answer(data, q), q)
    assert tpch_run.differences(tpch_flink.fold_lines(got["lines"]), expected) == []
    keyless = tpch_flink.keyless_joins(got["plan"])
    assert keyless == KEYLESS.get(q, 0), got["plan"]
