"""INTERSECT / EXCEPT by counting each row's copies per side; the ALL forms are refused."""

from __future__ import annotations

import pytest

from deltaflow.formats.errors import SqlError
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job

DDL = (
    "CREATE TABLE t (k INT, x STRING) WITH ('connector' = 'kafka', 'topic' = 't', "
    "'format' = 'debezium-json');\n"
    "CREATE TABLE u (k BIGINT, x STRING) WITH ('connector' = 'datagen');\n"
    "CREATE TABLE out_t (k BIGINT, x STRING) WITH ('connector' = 'print');\n"
)


def plan(query: str) -> P.Node:
    return plan_job(DDL + f"INSERT INTO out_t {query};").plan.sinks[0]


@pytest.mark.parametrize(("word", "test"), [("INTERSECT", ">"), ("EXCEPT", "=")])
def test_counts_per_side_then_filters(word, test):
    calc = plan(f"SELECT k, x FROM t {word} SELECT k, x FROM u").inputs[0]
    assert isinstance(calc, P.Calc) and calc.condition.operands[1].op == test
    agg = calc.inputs[0]
    assert isinstance(agg, P.GroupAggregate) and agg.group_keys == (0, 1)
    assert [a.function for a in agg.aggs] == ["SUM", "SUM"]
    assert isinstance(agg.inputs[0], P.Union)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("SELECT k, x FROM t INTERSECT ALL SELECT k, x FROM u", "INTERSECT ALL is not supported"),
        ("SELECT k, x FROM t EXCEPT ALL SELECT k, x FROM u", "EXCEPT ALL is not supported"),
        ("SELECT k, x FROM t EXCEPT SELECT k FROM u", "both sides of EXCEPT need the same"),
    ],
)
def test_refused_with_a_position(query, message):
    with pytest.raises(SqlError, match=message) as err:
        plan(query)
    assert str(err.value).startswith("SQL line 4, column ")
