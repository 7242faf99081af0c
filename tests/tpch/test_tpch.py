"""TPC-H as continuous queries: the tables as Debezium topics (a snapshot, RF1 inserts,
updates, RF2 deletes; tpch_data), each query as written (tpch_queries) run by deltaflow on
the session's embedded broker to the end of its topics, its final table judged by DuckDB's
answer on the final snapshot.

``make test`` runs the quick subset; ``make tpch`` (DELTAFLOW_TPCH=full) all 22 queries.
"""

from __future__ import annotations

import os
import uuid

import pytest
import tpch_data
import tpch_queries
import tpch_run

SF = float(os.environ.get("DELTAFLOW_TPCH_SF", "0.01"))
QUICK = (3, 4, 6, 16, 18, 19)
QUERIES = (
    tuple(sorted(tpch_queries.QUERIES)) if os.environ.get("DELTAFLOW_TPCH") == "full" else QUICK
)


@pytest.fixture(scope="module")
def tpch(broker):
    data = tpch_data.generate(SF)
    tag = uuid.uuid4().hex[:8]
    topics = {t: f"tpch-{t}-{tag}" for t in tpch_data.PRIMARY_KEYS}
    tpch_run.produce(data, broker, topics)
    return data, tpch_run.source_ddl(data, broker, topics), tag


def test_the_change_stream_inserts_updates_and_deletes_every_kind_of_table(tpch):
    data, _, _ = tpch
    ops = {t: {e["op"] for e in events} for t, events in data.events.items()}
    assert ops["lineitem"] == ops["orders"] == {"r", "c", "u", "d"}
    assert all("u" in ops[t] for t in ("customer", "part", "partsupp", "supplier"))
    (live,) = data.con.execute("SELECT COUNT(*) FROM orders WHERE o_orderkey % 97 = 2").fetchone()
    (added,) = data.con.execute("SELECT COUNT(*) FROM orders WHERE o_orderkey % 97 = 1").fetchone()
    assert live == 0 and added > 0  # DuckDB holds the final snapshot


@pytest.mark.parametrize("q", QUERIES, ids=[f"q{q}" for q in QUERIES])
def test_query_gives_duckdbs_final_answer(q, tpch, broker, tmp_path):
    data, sources, tag = tpch
    sink = f"tpch-q{q}-{tag}"
    ours, seconds, tables = tpch_run.run_query(
        tpch_run.job_sql(q, sources, broker, sink), broker, sink, tmp_path / "state"
    )
    expected = tpch_run.continuous_answer(tpch_run.duckdb_answer(data, q), q)
    assert tpch_run.differences(ours, expected) == []
    events = sum(len(data.events[t]) for t in tables)
    print(f"TPC-H q{q} sf={SF}: {events} events in {seconds:.1f} s = {events / seconds:.0f}/s")
