"""Chains of INNER joins written in an order that crosses two inputs with no equality between
them are joined in a connected order (rules/reorder_joins.py): every join has keys, the
columns keep the written order, and the rows are those of the written query."""

from __future__ import annotations

import re
import warnings

import pytest

from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.planner.rules.warn_keyless_joins import KeylessJoinWarning
from deltaflow.processor.runtime.graph import Graph
from deltaflow.state.backend import StateBackend

APPEND = "".join(
    f"CREATE TABLE {t} ({t}_id BIGINT, {t}_x BIGINT, {t}_y BIGINT) WITH ('connector' = 'datagen');\n"
    for t in ("a", "b", "c")
)
CDC = "".join(
    f"CREATE TABLE {t} ({t}_id BIGINT, {t}_x BIGINT, {t}_y BIGINT, PRIMARY KEY ({t}_id) NOT ENFORCED)"
    f" WITH ('connector' = 'kafka', 'topic' = '{t}', 'properties.bootstrap.servers' = 'b:1',"
    " 'format' = 'debezium-json');\n"
    for t in ("a", "b", "c")
)
SINK = (
    "CREATE TABLE r (a_id BIGINT, a_x BIGINT, a_y BIGINT, b_id BIGINT, b_x BIGINT, b_y BIGINT,"
    " c_id BIGINT, c_x BIGINT, c_y BIGINT) WITH ('connector' = 'print');\n"
)
# a and b have no equality: written order crosses them; a-c and b-c connect all three
CROSS_ORDER = "INSERT INTO r SELECT * FROM a, b, c WHERE a_x = c_x AND b_y = c_y AND c_id > 0;"
JOIN = re.compile(r"Join\(joinType=\[InnerJoin\], where=\[(.*?)\], ")


def _joins(sql: str) -> tuple[list[str], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        explain = plan_job(sql).explain()
    return JOIN.findall(explain), [
        str(w.message) for w in caught if issubclass(w.category, KeylessJoinWarning)
    ]


def test_a_comma_join_in_a_cross_product_order_is_joined_in_a_connected_order() -> None:
    conds, warned = _joins(CDC + SINK + CROSS_ORDER)
    assert conds == ["=(c_y, b_y)", "=(a_x, c_x)"]  # top first: (a JOIN c) JOIN b
    assert warned == []


def test_join_on_and_cross_join_chains_are_reordered_the_same_way() -> None:
    on = "INSERT INTO r SELECT * FROM a CROSS JOIN b JOIN c ON a_x = c_x AND b_y = c_y;"
    conds, warned = _joins(CDC + SINK + on)
    assert conds == ["=(c_y, b_y)", "=(a_x, c_x)"] and warned == []


def test_a_chain_with_no_equality_to_join_on_keeps_its_order_and_its_warning() -> None:
    sql = CDC + SINK + "INSERT INTO r SELECT * FROM a, b, c WHERE a_x < b_x AND b_y = c_y;"
    conds, warned = _joins(sql)
    assert conds == ["=(b_y, c_y)", "<(a_x, b_x)"]
    assert len(warned) == 1 and "[a] with [b]" in warned[0]


def test_a_connected_written_order_is_kept() -> None:
    sql = CDC + SINK + "INSERT INTO r SELECT * FROM a, b, c WHERE a_x = b_x AND a_y = c_y;"
    assert _joins(sql) == (["=(a_y, c_y)", "=(a_x, b_x)"], [])


def test_nothing_moves_across_an_outer_join() -> None:
    sql = (
        CDC
        + SINK
        + (
            "INSERT INTO r SELECT * FROM a LEFT JOIN b ON a_id = b_id, c WHERE b_y = c_y AND a_x = c_x;"
        )
    )
    explain = plan_job(sql).explain()
    assert explain.index("LeftOuterJoin") > explain.index("InnerJoin")  # c joins the LEFT join


def scans(node: P.Node, out: dict[str, P.TableSourceScan]) -> dict[str, P.TableSourceScan]:
    if isinstance(node, P.TableSourceScan):
        out[node.table.rsplit(".", 1)[-1]] = node
    for child in node.inputs:
        scans(child, out)
    return out


@pytest.fixture
def backend(tmp_path):
    b = StateBackend(tmp_path / "state")
    yield b
    b.close()


ROWS = {
    "a": [(1, 10, 0), (2, 20, 0), (3, 30, 0)],
    "b": [(4, 0, 7), (5, 0, 8)],
    "c": [(6, 10, 7), (7, 20, 8), (8, 30, 9), (-1, 10, 8)],
}


def _run(sql: str, backend: StateBackend) -> list[tuple]:
    plan = plan_job(sql).plan
    graph = Graph(plan, backend)
    (sink,) = plan.sinks
    found = scans(sink, {})
    out: list[tuple] = []
    results = []
    for table, rows in ROWS.items():
        batch = Batch()
        for row in rows:
            batch.append(RowKind.INSERT, row)
        results.append(graph.push(found[table].node_id, batch))
    results.append(graph.finish())
    for result in results:
        got = result.get(sink.node_id)
        if got is not None:
            assert set(got.kinds) == {RowKind.INSERT}
            out += got.rows
    return sorted(out)


def test_the_reordered_plan_gives_the_written_querys_rows_in_its_column_order(backend) -> None:
    # c rows matching an a row on x and a b row on y, with c_id > 0: (a1, b4, c6), (a2, b5, c7)
    assert _run(APPEND + SINK + CROSS_ORDER, backend) == [
        (1, 10, 0, 4, 0, 7, 6, 10, 7),
        (2, 20, 0, 5, 0, 8, 7, 20, 8),
    ]


def test_a_chain_under_an_in_subquery_is_reordered_by_the_outer_where() -> None:
    sql = CDC + SINK + (
        "INSERT INTO r SELECT * FROM a, b, c WHERE a_x = c_x AND b_y = c_y"
        " AND a_id IN (SELECT c_id FROM c);"
    )
    conds, warned = _joins(sql)
    assert conds == ["=(c_y, b_y)", "=(a_x, c_x)"] and warned == []
