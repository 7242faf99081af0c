"""Conjuncts of WHERE and ON pushed to the lowest join or input holding their columns, join
keys at every level of a join tree however it is written, outer joins kept exact, and the
plan-time warning for a join without keys between two updating inputs."""

from __future__ import annotations

import warnings

import pytest

from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.planner.rules.warn_keyless_joins import KeylessJoinWarning

TABLE = (
    "CREATE TABLE {0} ({1}, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'kafka', "
    "'topic' = '{0}', 'format' = 'debezium-json');\n"
)
# Regular joins: where the conjuncts go is what is asserted (AUTO would plan delta joins,
# which test_delta_* cover).
TABLES = (
    "SET 'table.optimizer.delta-join.strategy' = 'NONE';\n"
    + TABLE.format("a", "id INT, x INT, v STRING")
    + TABLE.format("b", "id INT, x INT, y INT")
    + TABLE.format("c", "id INT, y INT, w STRING")
    + "CREATE TABLE gen (id INT, x INT) WITH ('connector' = 'datagen');\n"
    + "CREATE TABLE gen2 (id INT, y INT) WITH ('connector' = 'datagen');\n"
    + "CREATE TABLE out_t (v STRING, w STRING) WITH ('connector' = 'print');\n"
)


def joins(sql: str) -> list[P.Join]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", KeylessJoinWarning)
        sink = plan_job(TABLES + f"INSERT INTO out_t {sql};").plan.sinks[0]
    out, todo = [], [sink]
    while todo:
        node = todo.pop()
        out += [node] if isinstance(node, P.Join) else []
        todo += node.inputs
    return out


@pytest.mark.parametrize(
    "query",
    [
        "SELECT a.v, c.w FROM a, b, c WHERE a.x = b.x AND b.y = c.y",
        "SELECT a.v, c.w FROM a CROSS JOIN b CROSS JOIN c WHERE b.y = c.y AND a.x = b.x",
        "SELECT a.v, c.w FROM a JOIN b ON a.x = b.x, c WHERE c.y = b.y",
        "SELECT a.v, c.w FROM a, b JOIN c ON b.y = c.y WHERE a.x = b.x",
        "SELECT v, w FROM (SELECT a.v, b.y, b.x AS bx, a.x AS ax FROM a, b) ab, c "
        "WHERE ab.ax = ab.bx AND ab.y = c.y",
    ],
)
def test_every_join_of_a_tree_written_any_way_gets_its_keys(query):
    found = joins(query)
    assert len(found) == 2
    assert all(j.left_keys and j.condition is None for j in found)


def test_one_sided_conjuncts_filter_the_inputs_and_two_sided_ones_join_them():
    (top, low) = joins(
        "SELECT a.v, c.w FROM a, b, c WHERE a.x = b.x AND b.y = c.y AND a.id > 3 AND a.id < b.id "
        "AND c.w <> 'z'"
    )
    assert low.condition is not None and top.condition is None
    assert isinstance(low.inputs[0], P.Calc) and low.inputs[0].condition is not None
    assert isinstance(top.inputs[1], P.Calc) and top.inputs[1].condition is not None


def test_an_equality_in_every_branch_of_an_or_is_a_join_key():
    (join,) = joins(
        "SELECT a.v, c.w FROM a, c WHERE (a.x = c.y AND a.v = 'p') OR (c.y = a.x AND c.w = 'q')"
    )
    assert (join.left_keys, join.right_keys) == ((1,), (1,))
    assert join.condition is not None  # the rest of the OR


def test_where_on_the_null_padded_side_stays_above_unless_it_rejects_nulls():
    (kept,) = joins("SELECT a.v, c.w FROM a LEFT JOIN c ON a.x = c.y WHERE c.w IS NULL")
    assert kept.join_type == "LEFT"
    (inner,) = joins("SELECT a.v, c.w FROM a LEFT JOIN c ON a.x = c.y WHERE c.w = 'q'")
    assert inner.join_type == "INNER"
    (left,) = joins("SELECT a.v, c.w FROM a FULL JOIN c ON a.x = c.y WHERE a.v > 'k'")
    assert left.join_type == "LEFT"


def test_on_conjuncts_of_an_outer_join_filter_only_its_null_padded_side():
    (join,) = joins("SELECT a.v, c.w FROM a LEFT JOIN c ON a.x = c.y AND a.id > 1 AND c.id > 5")
    assert join.join_type == "LEFT" and join.condition is not None  # a.id > 1 stays in ON
    assert not isinstance(join.inputs[0], P.Calc)
    assert isinstance(join.inputs[1], P.Calc) and join.inputs[1].condition is not None
    (full,) = joins("SELECT a.v, c.w FROM a FULL JOIN c ON a.x = c.y AND a.id > 1 AND c.id > 5")
    assert not any(isinstance(i, P.Calc) for i in full.inputs)


def test_a_keyless_join_of_two_updating_inputs_warns_naming_the_tables():
    sql = TABLES + "INSERT INTO out_t SELECT a.v, c.w FROM a, c WHERE a.id < c.id;"
    with pytest.warns(KeylessJoinWarning, match=r"join of \[a\] with \[c\] has no equality"):
        plan_job(sql)
    with warnings.catch_warnings():
        warnings.simplefilter("error", KeylessJoinWarning)
        plan_job(TABLES + "INSERT INTO out_t SELECT 'g', 'h' FROM gen, gen2 WHERE gen.x < gen2.y;")


def test_the_cli_prints_the_warning_as_one_line(tmp_path, capsys):
    import warnings as w

    from deltaflow.processor.cli import main

    job = tmp_path / "job.sql"
    job.write_text(TABLES + "INSERT INTO out_t SELECT a.v, c.w FROM a, c WHERE a.id < c.id;\n")
    before = w.showwarning
    try:
        with w.catch_warnings():
            w.simplefilter("always", KeylessJoinWarning)
            assert main(["explain", str(job)]) == 0
    finally:
        w.showwarning = before
    err = capsys.readouterr().err
    assert (
        err.startswith("deltaflow: warning: the INNER join of [a] with [c]")
        and err.count("\n") == 1
    )
