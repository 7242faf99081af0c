"""Planning of delta joins and delta aggregates: the strategies' rewrite decisions, EXPLAIN
lines, the reasons given when a join is not rewritten, and the W3 benchmark query."""

from __future__ import annotations

import pytest
from dl_helpers import FORCE_AGG, FORCE_JOIN, TABLES, find, scan_ids

from deltaflow.formats.errors import PlanError
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job

W3 = """CREATE TABLE orders (order_id BIGINT, merchant_id INT, item_id INT, amount DECIMAL(10, 2),
  status STRING, PRIMARY KEY (order_id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'o', 'format' = 'debezium-json'{orders_opts});
CREATE TABLE items (merchant_id INT, item_id INT, item_name STRING, price DECIMAL(10, 2),
  PRIMARY KEY (merchant_id, item_id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'i', 'format' = 'debezium-json'{items_opts});
CREATE TABLE out_table (order_id BIGINT, merchant_id INT, item_id INT, amount DECIMAL(10, 2),
  item_name STRING, price DECIMAL(10, 2), PRIMARY KEY (order_id) NOT ENFORCED)
  WITH ('connector' = 'upsert-kafka', 'topic' = 'out', 'key.format' = 'json', 'value.format' = 'json');
INSERT INTO out_table SELECT o.order_id, o.merchant_id, o.item_id, o.amount, i.item_name, i.price
FROM orders AS o JOIN items AS i ON o.merchant_id = i.merchant_id AND o.item_id = i.item_id;
"""
SELECT = "order_id, merchant_id, item_id, amount, status, merchant_id0, item_id0, item_name, price"


def w3(settings: str = "", orders_opts: str = "", items_opts: str = "") -> str:
    return settings + W3.format(orders_opts=orders_opts, items_opts=items_opts)


def explain(sql: str) -> str:
    return plan_job(sql).explain()


def test_default_auto_rewrites_w3_as_force_does_and_none_keeps_the_regular_join():
    text = explain(w3())
    assert text == explain(w3(FORCE_JOIN))
    assert "DeltaJoin(joinType=[InnerJoin]" in text
    regular = explain(w3("SET 'table.optimizer.delta-join.strategy' = 'NONE';\n"))
    assert "DeltaJoin" not in regular and "deltaJoin" not in regular
    assert "+- Join(joinType=[InnerJoin]" in regular


def test_force_rewrites_w3_with_the_orders_index_derived_and_items_by_primary_key():
    text = explain(w3(FORCE_JOIN))
    assert (
        "+- DeltaJoin(joinType=[InnerJoin], where=[AND(=(merchant_id, merchant_id0), "
        "=(item_id, item_id0))], leftIndex=[merchant_id, item_id], rightIndex=[merchant_id, "
        f"item_id], select=[{SELECT}], fusedCalc=[output], changelogMode=[I,UB,UA,D])"
    ) in text
    node = find(w3(FORCE_JOIN), P.DeltaJoin)
    assert node.left.index == (1, 2) and node.left.primary_key == (0,)
    assert node.right.index == (0, 1) == node.right.primary_key  # a primary-key prefix


def test_auto_says_on_the_join_line_why_a_join_is_not_rewritten():
    sql = TABLES + NO_PK + SINK + "INSERT INTO out_t SELECT c.id, b.w FROM c JOIN b ON c.k = b.k;"
    (line,) = [ln for ln in explain(sql).splitlines() if "Join(" in ln]
    assert line.lstrip().startswith("+- Join(joinType=[InnerJoin]")
    assert "deltaJoin=[not rewritten: table c has no PRIMARY KEY to mirror its rows by]" in line


def test_auto_looks_up_by_a_declared_bucket_key_within_the_join_key():
    opts = ", 'bucket.key' = 'item_id'"
    auto = "SET 'table.optimizer.delta-join.strategy' = 'AUTO';\n"  # find() defaults to NONE
    node = find(w3(auto, orders_opts=opts, items_opts=opts), P.DeltaJoin)
    assert node.left.index == (2,)  # orders by its bucket key, not a derived (merchant, item)
    assert node.right.index == (0, 1)  # items by its primary key, a prefix of the join key


def test_bucket_key_naming_an_unknown_column_is_an_error():
    with pytest.raises(PlanError, match="'bucket.key' of table orders names 'shop'"):
        plan_job(w3(FORCE_JOIN, orders_opts=", 'bucket.key' = 'shop'"))


def test_an_invalid_strategy_names_the_option_and_the_values():
    with pytest.raises(PlanError, match="delta-join.strategy' = 'ALWAYS'.*AUTO, FORCE, NONE"):
        plan_job(w3("SET 'table.optimizer.delta-join.strategy' = 'ALWAYS';\n"))


SINK = "CREATE TABLE out_t (x INT, y INT) WITH ('connector' = 'print');\n"
NO_PK = (
    "CREATE TABLE c (id INT, k INT) WITH ('connector' = 'kafka', 'topic' = 'c', "
    "'format' = 'debezium-json');\n"
)


@pytest.mark.parametrize(
    "query,reason",
    [
        (
            "SELECT s.k, b.w FROM (SELECT k, SUM(v) AS s FROM a GROUP BY k) AS s JOIN b ON s.k = b.k",
            r"the left input is not a source table read through projections and filters "
            r"\(found Aggregate\)",
        ),
        (
            "SELECT a.id, b.w FROM (SELECT id, k + 1 AS k FROM a) AS a JOIN b ON a.k = b.k",
            "the left input key column k is computed, not a column of a",
        ),
        ("SELECT c.id, b.w FROM c JOIN b ON c.k = b.k", "table c has no PRIMARY KEY"),
        (
            "SELECT a.id, b.w FROM (SELECT * FROM a WHERE v > RAND_INTEGER(5)) AS a "
            "JOIN b ON a.k = b.k",
            "non-deterministic function RAND_INTEGER",
        ),
        ("SELECT a.id, b.w FROM a JOIN b ON a.k > b.k", "no equality between the two sides"),
    ],
)
def test_force_on_an_ineligible_join_fails_naming_the_join_rule_and_reason(query, reason):
    sql = FORCE_JOIN + TABLES + NO_PK + SINK + f"INSERT INTO out_t {query};"
    with pytest.raises(PlanError, match=reason) as err:
        plan_job(sql)
    assert "rewrite_delta_join" in str(err.value) and "Join(joinType=[InnerJoin]" in str(err.value)


EVENTUAL = "SET 'table.optimizer.delta-join.strategy' = 'EVENTUAL';\n"


def test_eventual_is_inner_only_and_emits_inserts_and_update_afters():
    inner = (
        EVENTUAL + TABLES + SINK + "INSERT INTO out_t SELECT a.id, b.w FROM a JOIN b ON a.k = b.k;"
    )
    assert "eventual=[true], fusedCalc=[output], changelogMode=[I,UA])" in explain(inner)
    with pytest.raises(PlanError, match="EVENTUAL delta joins are INNER joins, this one is LEFT"):
        plan_job(inner.replace(" JOIN b", " LEFT JOIN b"))


def test_eventual_refuses_a_filter_outside_the_primary_key_unless_told_to_ignore_it():
    sql = (
        TABLES + SINK + "INSERT INTO out_t SELECT a.id, b.w FROM (SELECT * FROM a WHERE v > 2) "
        "AS a JOIN b ON a.k = b.k;"
    )
    with pytest.raises(PlanError, match="filter on table a reads v, outside its primary key"):
        plan_job(EVENTUAL + sql)
    ignore = "SET 'table.optimizer.delta-join.ignore-non-unique-key-filter' = 'true';\n"
    assert find(EVENTUAL + ignore + sql, P.DeltaJoin).eventual


AGG_SINK = "CREATE TABLE out_t (k INT, n BIGINT, s INT) WITH ('connector' = 'print');\n"


def test_delta_aggregate_explain_and_default():
    sql = TABLES + AGG_SINK + "INSERT INTO out_t SELECT k, COUNT(*), SUM(v) FROM a GROUP BY k;"
    assert "DeltaAggregate" not in explain(sql)
    assert (
        "+- DeltaAggregate(groupBy=[k], index=[k], select=[k, COUNT_RETRACT(*) AS EXPR$1, "
        "SUM_RETRACT(v) AS EXPR$2], changelogMode=[I,UB,UA,D])"
    ) in explain(FORCE_AGG + sql)


def test_force_delta_aggregate_refuses_a_listagg_separator_column():
    """LISTAGG/FIRST_VALUE/LAST_VALUE are delta aggregates (test_delta_agg_ordered.py), but
    LISTAGG(x, column) joins with the last separator that arrived, which it does not track."""
    sink = "CREATE TABLE out_t (k INT, s STRING) WITH ('connector' = 'print');\n"
    sql = sink + (
        "INSERT INTO out_t SELECT k, LISTAGG(CAST(v AS STRING), CAST(id AS STRING)) FROM a GROUP BY k;"
    )
    with pytest.raises(PlanError, match=r"rewrite_delta_agg.*LISTAGG with a separator column"):
        plan_job(FORCE_AGG + TABLES + sql)


def test_statements_reading_one_table_share_its_mirror():
    sql = (
        FORCE_JOIN
        + FORCE_AGG
        + TABLES
        + SINK
        + AGG_SINK.replace("out_t", "agg_t")
        + "EXECUTE STATEMENT SET BEGIN\n"
        "INSERT INTO out_t SELECT a.id, b.w FROM a JOIN b ON a.k = b.k;\n"
        "INSERT INTO agg_t SELECT k, COUNT(*), SUM(v) FROM a GROUP BY k;\nEND;"
    )
    join_sink, agg_sink = plan_job(sql).plan.sinks
    join = find_in(join_sink, P.DeltaJoin)
    agg = find_in(agg_sink, P.DeltaAggregate)
    assert join.left.mirror == agg.source.mirror
    assert scan_ids(join_sink, {})["a"] == scan_ids(agg_sink, {})["a"]


def find_in(node: P.Node, cls: type) -> P.Node:
    todo = [node]
    while todo:
        node = todo.pop()
        if type(node) is cls:
            return node
        todo.extend(node.inputs)
    raise AssertionError(f"no {cls.__name__}")
