"""INTERSECT / EXCEPT as Flink plans them: a semi / anti join on every column (NULLs equal)
under a GroupAggregate; the ALL forms count each row's copies per side and replicate it."""

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


@pytest.mark.parametrize(("word", "anti"), [("INTERSECT", False), ("EXCEPT", True)])
def test_distinct_is_a_null_safe_semi_or_anti_join_under_a_group_aggregate(word, anti):
    agg = plan(f"SELECT k, x FROM t {word} SELECT k, x FROM u").inputs[0]
    assert isinstance(agg, P.GroupAggregate) and agg.group_keys == (0, 1) and not agg.aggs
    join = agg.inputs[0]
    assert isinstance(join, P.SemiJoin) and join.anti == anti
    assert join.left_keys == join.right_keys == (0, 1) and join.null_safe == (True, True)


@pytest.mark.parametrize(("word", "aggs"), [("INTERSECT", ["COUNT", "COUNT"]), ("EXCEPT", ["SUM"])])
def test_all_counts_copies_per_side_and_replicates_the_rows(word, aggs):
    calc = plan(f"SELECT k, x FROM t {word} ALL SELECT k, x FROM u").inputs[0]
    corr = calc.inputs[0]
    assert isinstance(corr, P.Correlate) and corr.function == "$REPLICATE_ROWS$1"
    counted = corr.inputs[0]
    assert isinstance(counted, P.Calc) and counted.condition is not None
    agg = counted.inputs[0]
    assert isinstance(agg, P.GroupAggregate) and [a.function for a in agg.aggs] == aggs
    assert isinstance(agg.inputs[0], P.Union)


def test_refused_with_a_position():
    with pytest.raises(SqlError, match="both sides of EXCEPT need the same") as err:
        plan("SELECT k, x FROM t EXCEPT SELECT k FROM u")
    assert str(err.value).startswith("SQL line 4, column ")
