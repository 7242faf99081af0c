"""GROUPING SETS / ROLLUP / CUBE as a UNION ALL of one GROUP BY per set."""

from __future__ import annotations

import pytest

from deltaflow.formats.errors import SqlError
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job

DDL = (
    "CREATE TABLE t (k INT, x STRING, v INT) WITH ('connector' = 'kafka', 'topic' = 't', "
    "'format' = 'debezium-json');\n"
    "CREATE TABLE out_t (x STRING, v INT, n BIGINT) WITH ('connector' = 'print');\n"
)


def group_keys(group_by: str) -> list[int]:
    node = plan_job(DDL + f"INSERT INTO out_t SELECT x, v, COUNT(*) FROM t GROUP BY {group_by};")
    out, todo = [], [node.plan.sinks[0]]
    while todo:
        n = todo.pop()
        out += [len(n.group_keys)] if isinstance(n, P.GroupAggregate) else []
        todo += n.inputs
    return sorted(out)


@pytest.mark.parametrize(
    ("group_by", "sizes"),
    [
        ("ROLLUP (x, v)", [1, 1, 2]),  # (x, v), (x), () grouped by a constant
        ("CUBE (x, v)", [1, 1, 1, 2]),
        ("GROUPING SETS ((x), (v))", [1, 1]),
        ("v, ROLLUP (x)", [1, 2]),
    ],
)
def test_one_group_by_per_grouping_set(group_by, sizes):
    assert group_keys(group_by) == sizes


def test_grouping_takes_columns():
    with pytest.raises(SqlError, match="GROUPING SETS, ROLLUP and CUBE take columns"):
        group_keys("ROLLUP (v + 1)")
