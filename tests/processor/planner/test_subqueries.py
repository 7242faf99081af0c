"""Subqueries in WHERE decorrelated into joins: IN / EXISTS as semi joins, NOT IN / NOT
EXISTS as anti joins, scalar subqueries as joins with an aggregate; the keys they become,
and the forms refused with a position."""

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


def semi_joins(where: str) -> list[P.SemiJoin]:
    """The regular semi / anti joins (delta joins off) of the query's plan."""
    sql = f"SET 'table.optimizer.delta-join.strategy' = 'NONE';\n{DDL}"
    node = plan_job(sql + f"INSERT INTO out_t SELECT id, v FROM a WHERE {where};").plan.sinks[0]
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        out += [n] if isinstance(n, P.SemiJoin) else []
        todo += n.inputs
    return out


def test_exists_is_a_semi_join_on_the_correlation_keys():
    (join,) = semi_joins("EXISTS (SELECT * FROM b WHERE b.x = a.x AND b.w > 1)")
    assert not join.anti and (join.left_keys, join.right_keys) == ((1,), (0,))
    assert join.condition is None and join.fields == join.inputs[0].fields
    right = join.inputs[1]
    assert isinstance(right, P.Calc) and right.condition is not None  # b.w > 1 stays inside


def test_not_exists_is_an_anti_join():
    (join,) = semi_joins("NOT EXISTS (SELECT * FROM b WHERE b.x = a.x)")
    assert join.anti and join.left_keys == (1,)


def test_an_unequal_correlation_stays_in_the_semi_joins_condition():
    (join,) = semi_joins("EXISTS (SELECT * FROM b WHERE b.id = a.id AND b.x < a.x)")
    assert join.left_keys == (0,) and join.condition is not None


def test_uncorrelated_exists_joins_one_row_of_an_aggregate():
    (join,) = semi_joins("EXISTS (SELECT * FROM b WHERE b.w > 2)")
    assert join.left_keys == () and join.condition is None
    assert "GroupAggregate" in repr(join.inputs[1])


def test_not_in_is_an_anti_join_matching_nulls_of_either_side():
    (join,) = semi_joins("a.x NOT IN (SELECT w FROM b)")
    assert join.anti and join.left_keys == () and "IS NULL" in repr(join.condition)


def test_correlated_not_in_keys_the_anti_join_on_the_correlation():
    (join,) = semi_joins("a.x NOT IN (SELECT w FROM b WHERE b.id = a.id)")
    assert join.anti and join.left_keys == (0,) and "IS NULL" in repr(join.condition)


def test_correlated_scalar_joins_the_aggregate_by_the_correlation_key():
    (join,) = joins("a.x < (SELECT MAX(b.w) FROM b WHERE b.x = a.x)")
    assert join.join_type == "INNER"  # the comparison rejects the NULL of a missing group
    assert join.left_keys == (1,) and join.condition is not None


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


@pytest.mark.parametrize(
    ("where", "message"),
    [
        (
            "a.x IN (SELECT MAX(w) FROM b WHERE b.id = a.id GROUP BY x)",
            "a correlated IN / EXISTS subquery with GROUP BY",
        ),
        ("a.x > (SELECT COUNT(*) FROM b)", "a scalar subquery with COUNT is not supported yet"),
        ("a.x > (SELECT w FROM b)", "a scalar subquery selects one aggregate"),
        ("a.x > (SELECT MAX(w) FROM b GROUP BY x)", "without GROUP BY"),
        ("a.v = 'q' OR EXISTS (SELECT * FROM b WHERE b.x = a.x)", "conjuncts of WHERE only"),
    ],
)
def test_subqueries_not_planned_yet_are_refused_with_a_position(where, message):
    with pytest.raises(SqlError, match=message) as err:
        joins(where)
    assert str(err.value).startswith("SQL line 4, column ")


def test_not_in_over_not_null_columns_is_a_keyed_anti_join():
    (join,) = semi_joins("a.id NOT IN (SELECT id FROM b)")  # primary keys: NOT NULL
    assert join.anti and (join.left_keys, join.right_keys) == ((0,), (0,))
    assert join.condition is None


def test_an_aggregate_of_a_derived_table_in_the_subquerys_from_may_be_correlated():
    (join,) = semi_joins(
        "EXISTS (SELECT * FROM (SELECT x, COUNT(*) AS n FROM b GROUP BY x) g WHERE g.x = a.x "
        "AND g.n > 1)"
    )
    assert not join.anti and (join.left_keys, join.right_keys) == ((1,), (0,))
