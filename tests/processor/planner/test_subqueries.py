"""Subqueries in WHERE decorrelated into joins: the join keys they become, and the forms
refused with a position."""

from __future__ import annotations

import pytest

from deltaflow.formats.errors import SqlError
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job

DDL = (
    "CREATE TABLE a (id INT, x INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ("
    "'connector' = 'kafka', 'topic' = 'a', 'format' = 'debezium-json');\n"
    "CREATE TABLE b (id INT, x INT, w INT, PRIMARY KEY (id) NOT ENFORCED) WITH ("
    "'connector' = 'kafka', 'topic' = 'b', 'format' = 'debezium-json');\n"
    "CREATE TABLE out_t (id INT, v STRING) WITH ('connector' = 'print');\n"
)


def joins(where: str) -> list[P.Join]:
    node = plan_job(DDL + f"INSERT INTO out_t SELECT id, v FROM a WHERE {where};").plan.sinks[0]
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        out += [n] if isinstance(n, P.Join) else []
        todo += n.inputs
    return out


def test_exists_joins_the_distinct_correlation_keys():
    (join,) = joins("EXISTS (SELECT * FROM b WHERE b.x = a.x AND b.w > 1)")
    assert join.join_type == "INNER" and (join.left_keys, join.right_keys) == ((1,), (0,))
    distinct = join.inputs[1]
    while not isinstance(distinct, P.GroupAggregate):
        (distinct,) = distinct.inputs
    assert distinct.group_keys == (0,) and not distinct.aggs


def test_not_exists_is_a_left_join_keeping_the_unmatched_rows():
    (join,) = joins("NOT EXISTS (SELECT * FROM b WHERE b.x = a.x)")
    assert join.join_type == "LEFT" and join.left_keys == (1,)


def test_correlated_scalar_joins_the_aggregate_by_the_correlation_key():
    (join,) = joins("a.x < (SELECT MAX(b.w) FROM b WHERE b.x = a.x)")
    assert join.join_type == "INNER"  # the comparison rejects the NULL of a missing group
    assert join.left_keys == (1,) and join.condition is not None


def test_exists_with_an_unequal_correlation_joins_the_groups_min_and_max():
    (join,) = joins("EXISTS (SELECT * FROM b WHERE b.id = a.id AND b.x <> a.x)")
    assert join.join_type == "INNER" and join.left_keys == (0,)
    assert "MIN" in repr(join.inputs[1]) and "MAX" in repr(join.inputs[1])
    assert join.condition is not None  # MIN(b.x) <> a.x OR MAX(b.x) <> a.x


def test_a_having_subquery_filters_the_grouped_rows_joined_with_its_value():
    sql = DDL + (
        "INSERT INTO out_t SELECT x, CAST(COUNT(*) AS STRING) FROM a GROUP BY x "
        "HAVING COUNT(*) > (SELECT AVG(w) FROM b);"
    )
    node = plan_job(sql).plan.sinks[0]
    while not isinstance(node, P.Join):
        (node,) = node.inputs
    grouped = node.inputs[0]
    while isinstance(grouped, P.Calc):
        (grouped,) = grouped.inputs
    assert isinstance(grouped, P.GroupAggregate) and node.condition is not None


def test_not_in_keeps_sqls_null_rules_with_two_left_joins():
    found = joins("a.x NOT IN (SELECT w FROM b)")
    assert sorted(j.join_type for j in found) == ["LEFT", "LEFT"]


@pytest.mark.parametrize(
    ("where", "message"),
    [
        (
            "EXISTS (SELECT * FROM b WHERE b.id = a.id AND b.x < a.x)",
            "only in equalities of an inner and an outer",
        ),
        ("EXISTS (SELECT * FROM b WHERE b.x <> a.x)", "an uncorrelated EXISTS is not supported"),
        ("EXISTS (SELECT * FROM b)", "an uncorrelated EXISTS is not supported yet"),
        ("a.x > (SELECT COUNT(*) FROM b)", "a scalar subquery with COUNT is not supported yet"),
        ("a.x > (SELECT w FROM b)", "a scalar subquery selects one aggregate"),
        ("a.x > (SELECT MAX(w) FROM b GROUP BY x)", "without GROUP BY"),
        ("a.x NOT IN (SELECT w FROM b WHERE b.id = a.id)", "a correlated NOT IN subquery"),
        ("a.v = 'q' OR EXISTS (SELECT * FROM b WHERE b.x = a.x)", "conjuncts of WHERE only"),
    ],
)
def test_subqueries_not_planned_yet_are_refused_with_a_position(where, message):
    with pytest.raises(SqlError, match=message) as err:
        joins(where)
    assert str(err.value).startswith("SQL line 4, column ")
