"""ORDER BY ... LIMIT n [OFFSET m] as a Top-N without partition keys; the errors around it."""

from __future__ import annotations

import pytest

from deltaflow.formats.errors import SqlError
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job

DDL = (
    "CREATE TABLE t (id INT, k INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ("
    "'connector' = 'kafka', 'topic' = 't', 'format' = 'debezium-json');\n"
    "CREATE TABLE out_t (a INT, b BIGINT) WITH ('connector' = 'print');\n"
)


def rank_of(query: str) -> P.Rank:
    node = plan_job(DDL + f"INSERT INTO out_t {query};").plan.sinks[0]
    while not isinstance(node, P.Rank):
        (node,) = node.inputs
    return node


def test_order_by_limit_offset_keeps_ranks_offset_plus_one_to_offset_plus_limit():
    rank = rank_of("SELECT k, COUNT(*) AS n FROM t GROUP BY k ORDER BY n DESC, 1 LIMIT 3 OFFSET 2")
    assert rank.partition_keys == () and not rank.output_rank_number
    assert (rank.rank_start, rank.rank_end) == (3, 5)
    assert [(c, asc) for c, asc, _ in rank.order_keys] == [(1, False), (0, True)]


def test_order_by_an_expression_of_the_select_list():
    rank = rank_of("SELECT k, CAST(id AS BIGINT) FROM t ORDER BY CAST(id AS BIGINT) LIMIT 1")
    assert [c for c, _, _ in rank.order_keys] == [1]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("SELECT k, 1 FROM t ORDER BY k", "Sort on a non-time-attribute field is not supported"),
        ("SELECT k, 1 FROM t LIMIT 3", "LIMIT without ORDER BY is not supported yet"),
        ("SELECT k, 1 FROM t ORDER BY v LIMIT 3", "ORDER BY v: deltaflow sorts by columns of the"),
        ("SELECT k, 1 FROM t ORDER BY k LIMIT 0", "LIMIT 0 keeps no rows"),
    ],
)
def test_sorts_a_continuous_query_cannot_run_are_refused_with_a_position(query, message):
    with pytest.raises(SqlError, match=message) as err:
        plan_job(DDL + f"INSERT INTO out_t {query};")
    assert str(err.value).startswith("SQL line 3, column ")
