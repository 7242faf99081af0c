"""DeltaAggregate's LISTAGG, FIRST_VALUE and LAST_VALUE: Flink's arrival order under retraction.

The expected rows were recorded with Apache Flink 2.3 (PyFlink, parallelism 1, the same
history from a debezium-json file, with and without a declared primary key; both gave the
same values): a retraction removes the earliest copy of the retracted value, so after rows
1=a, 2=w, 3=a and a delete of row 3 the list is ``w,a``, not the rows' ``a,w``.
"""

from __future__ import annotations

import pytest
from dl_helpers import FORCE_AGG, batches, final, find, history_st, run
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.formats.errors import PlanError
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job

ORDERS = """CREATE TABLE o (id INT, cust INT, product STRING, note STRING, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'o', 'format' = 'debezium-json');
CREATE TABLE out_t (cust INT, ps STRING, ns STRING, fp STRING, lp STRING, lnote STRING)
  WITH ('connector' = 'print');
INSERT INTO out_t SELECT cust, LISTAGG(product), LISTAGG(note, ';'), FIRST_VALUE(product),
  LAST_VALUE(product), LAST_VALUE(note) FROM o GROUP BY cust;
"""
r1, r2, r3 = (1, 1, "a", "x"), (2, 1, "w", "y"), (3, 1, "a", "x")
r2b, r4, r5, r6, r1b = (
    (2, 1, "v", "y"),
    (4, 1, None, "z"),
    (5, 2, "k", "q"),
    (6, 1, "a", "x"),
    (1, 2, "a", "x"),
)
HISTORY = [
    [(INSERT, r1)], [(INSERT, r2)], [(INSERT, r3)], [(DELETE, r3)],
    [(UPDATE_BEFORE, r2), (UPDATE_AFTER, r2b)], [(INSERT, r4)], [(INSERT, r5)], [(INSERT, r6)],
    [(UPDATE_BEFORE, r1), (UPDATE_AFTER, r1b)], [(DELETE, r6)],
]  # fmt: skip
# Flink's value of each changed group after each event (from its +I/+U lines).
FLINK_AFTER = [
    [(1, "a", "x", "a", "a", "x")],
    [(1, "a,w", "x;y", "a", "w", "y")],
    [(1, "a,w,a", "x;y;x", "a", "a", "x")],
    [(1, "w,a", "y;x", "w", "a", "x")],
    [(1, "a,v", "x;y", "a", "v", "y")],
    [(1, "a,v", "x;y;z", "a", "v", "z")],
    [(2, "k", "q", "k", "k", "q")],
    [(1, "a,v,a", "x;y;z;x", "a", "a", "x")],
    [(1, "v,a", "y;z;x", "v", "a", "x"), (2, "k,a", "q;x", "k", "a", "x")],
    [(1, "v", "y;z", "v", "v", "z")],
]  # fmt: skip


def _steps(events: list[list[tuple[int, tuple]]]) -> list[tuple[str, Batch]]:
    return [("o", Batch([k for k, _ in e], [r for _, r in e])) for e in events]


def _added(out: list[list[tuple[int, tuple]]]) -> list[list[tuple]]:
    return [[row for kind, row in step if kind in (INSERT, UPDATE_AFTER)] for step in out]


def test_ordered_functions_plan_a_delta_aggregate():
    node = find(FORCE_AGG + ORDERS, P.DeltaAggregate)
    assert node is not None
    assert [c.function for c in node.aggs] == [
        "LISTAGG", "LISTAGG", "FIRST_VALUE", "LAST_VALUE", "LAST_VALUE"
    ]  # fmt: skip


def test_one_event_per_batch_gives_flinks_values():
    assert _added(run(FORCE_AGG + ORDERS, _steps(HISTORY))) == FLINK_AFTER


def test_one_batch_gives_flinks_final_values():
    (step,) = run(FORCE_AGG + ORDERS, _steps([[c for e in HISTORY for c in e]]))
    assert sorted(row for kind, row in step if kind == INSERT) == [
        (1, "v", "y;z", "v", "v", "z"),
        (2, "k,a", "q;x", "k", "a", "x"),
    ]


def test_batches_of_three_end_in_flinks_table():
    events = [c for e in HISTORY for c in e]
    steps = [
        ("o", Batch([k for k, _ in events[i : i + 3]], [r for _, r in events[i : i + 3]]))
        for i in (0, 3, 6, 9)
    ]  # fmt: skip  (the update pairs at 4-5 and 9-10 stay whole)
    assert sorted(final(run(FORCE_AGG + ORDERS, steps)).elements()) == [
        (1, "v", "y;z", "v", "v", "z"),
        (2, "k,a", "q;x", "k", "a", "x"),
    ]


def test_force_refuses_a_separator_column():
    sql = ORDERS.replace("LISTAGG(product),", "LISTAGG(product, note),")
    with pytest.raises(PlanError, match="separator column"):
        plan_job(FORCE_AGG + sql)
    assert find(sql, P.GroupAggregate) is not None  # AUTO keeps GroupAggregate


# -- against GroupAggregate (whose LISTAGG/FIRST_VALUE/LAST_VALUE follow Flink) -----------

TABLES = """CREATE TABLE a (id INT, k INT, v INT, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'a', 'format' = 'debezium-json');
CREATE TABLE out_t (k INT, l STRING, f INT, la INT, lf STRING, n BIGINT, ld STRING,
  fd INT) WITH ('connector' = 'print');
INSERT INTO out_t SELECT k, LISTAGG(CAST(v AS STRING), '|'), FIRST_VALUE(v), LAST_VALUE(v),
  LISTAGG(CAST(id AS STRING)) FILTER (WHERE v > 2), COUNT(*), LISTAGG(DISTINCT CAST(v AS STRING)),
  FIRST_VALUE(DISTINCT v) FILTER (WHERE id > 1) FROM a GROUP BY k;
"""
MINI_BATCH = "SET 'table.exec.mini-batch.enabled' = 'true';\n"


@settings(max_examples=60, deadline=None)
@given(ops=history_st, size=st.integers(1, 6))
def test_ordered_functions_equal_group_aggregate(ops, size):
    """Few values (0..6) in few groups: retractions of values other rows hold too are common."""
    steps = batches(ops, size, tables=("a",))
    assert run(FORCE_AGG + TABLES, steps) == run(MINI_BATCH + TABLES, steps)


def test_arrival_order_survives_a_restart(tmp_path):
    """The arrival numbers are state: a job reopened on its LMDB directory after event 4
    (Flink's list then is w,a) goes on with Flink's values."""
    from dl_helpers import scan_ids

    from deltaflow.processor.runtime.graph import Graph
    from deltaflow.state.backend import StateBackend

    plan = plan_job(FORCE_AGG + ORDERS).plan
    (sink,) = plan.sinks
    scan = scan_ids(sink, {})["o"]
    got = []
    for part in (_steps(HISTORY[:4]), _steps(HISTORY[4:])):
        with StateBackend(tmp_path) as backend:
            graph = Graph(plan, backend)
            for _, batch in part:
                out = graph.push(scan, batch).get(sink.node_id, Batch())
                got.append(
                    [r for k, r in zip(out.kinds, out.rows, strict=True) if k != UPDATE_BEFORE]
                )
                backend.commit()
    assert got == FLINK_AFTER


def test_a_retraction_for_an_empty_group_is_dropped():
    """A -U of a row never seen (a compacted topic can start so), then its +U: the -U finds
    no group and is dropped, as Flink's GroupAggFunction drops a retraction with no
    accumulator (Flink 2.3 printed one +I for such a lone update: the conformance reproducer
    regressions/long_agg_pk-agg-delta-s1.json, which found this)."""
    sql = """CREATE TABLE o (id INT, cust INT, product STRING, amt DECIMAL(10, 2),
      PRIMARY KEY (id) NOT ENFORCED)
      WITH ('connector' = 'kafka', 'topic' = 'o', 'format' = 'debezium-json');
    CREATE TABLE out_t (cust INT, n BIGINT, s DECIMAL(38, 2), m DECIMAL(10, 2), lp STRING)
      WITH ('connector' = 'print');
    INSERT INTO out_t SELECT cust, COUNT(*), SUM(amt), MAX(amt), LISTAGG(product)
      FROM o GROUP BY cust;"""
    from decimal import Decimal

    old, new = (7, 4, "fig", Decimal("1.00")), (7, 4, "kiwi", Decimal("30.94"))
    steps = [("o", Batch([UPDATE_BEFORE, UPDATE_AFTER], [old, new]))]
    assert run(FORCE_AGG + sql, steps) == [
        [(INSERT, (4, 1, Decimal("30.94"), Decimal("30.94"), "kiwi"))]
    ]
