"""Demanded columns of each source scan (projection pushdown into the decoders)."""

from __future__ import annotations

from deltaflow.processor.job_tables import scans_of
from deltaflow.processor.planner.api import plan_job

ORDERS = """
CREATE TABLE orders (
  order_id BIGINT, merchant_id BIGINT, item_id BIGINT, amount DECIMAL(10, 2),
  status STRING, updated_at TIMESTAMP(3){extra},
  PRIMARY KEY (order_id) NOT ENFORCED
) WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = 'b:1',
        'format' = 'debezium-json');
CREATE TABLE items (
  merchant_id BIGINT, item_id BIGINT, item_name STRING,
  PRIMARY KEY (merchant_id, item_id) NOT ENFORCED
) WITH ('connector' = 'kafka', 'topic' = 'items', 'properties.bootstrap.servers' = 'b:1',
        'format' = 'debezium-json');
CREATE TABLE out1 (k BIGINT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = 'o', 'properties.bootstrap.servers' = 'b:1',
      'key.format' = 'json', 'value.format' = 'json');
"""


def demanded(insert: str, extra: str = "") -> list:
    plan = plan_job(ORDERS.format(extra=extra) + insert).plan
    found = [None if s.project is None else frozenset(s.project) for s in scans_of(plan)]
    return sorted(found, key=lambda d: sorted(d or ()))


def test_filter_projection_demands_its_columns_and_the_key() -> None:
    got = demanded(
        "INSERT INTO out1 SELECT merchant_id, item_id FROM orders WHERE status = 'PAID';"
    )
    assert got == [frozenset({"merchant_id", "item_id", "status", "order_id"})]


def test_group_by_demands_grouped_and_aggregated_columns() -> None:
    got = demanded(
        "INSERT INTO out1 SELECT merchant_id, SUM(item_id) FROM orders GROUP BY merchant_id;"
    )
    assert got == [frozenset({"merchant_id", "item_id", "order_id"})]


def test_watermark_columns_are_demanded() -> None:
    extra = ", WATERMARK FOR updated_at AS updated_at - INTERVAL '1' SECOND"
    got = demanded("INSERT INTO out1 SELECT order_id, item_id FROM orders;", extra)
    assert got == [frozenset({"order_id", "item_id", "updated_at"})]


def test_every_column_demanded_means_none() -> None:
    got = demanded(
        "INSERT INTO out1 SELECT order_id, merchant_id + item_id + CAST(amount AS BIGINT) "
        "+ CHAR_LENGTH(status) + EXTRACT(SECOND FROM updated_at) FROM orders;"
    )
    assert got == [None]


def test_a_join_demands_its_keys_and_what_is_read_above_it() -> None:
    got = demanded(
        "INSERT INTO out1 SELECT o.order_id, i.item_id FROM orders o "
        "JOIN items i ON o.merchant_id = i.merchant_id AND o.item_id = i.item_id;"
    )
    assert got == [
        frozenset({"merchant_id", "item_id"}),  # items: the keys (also its primary key)
        frozenset({"order_id", "merchant_id", "item_id"}),
    ]


def test_a_join_condition_demands_its_columns() -> None:
    got = demanded(
        "INSERT INTO out1 SELECT o.order_id, o.item_id FROM orders o LEFT JOIN items i "
        "ON o.merchant_id = i.merchant_id AND o.item_id = i.item_id AND i.item_name <> o.status;"
    )
    assert got == [
        None,  # items: the keys and item_name are all its columns
        frozenset({"order_id", "merchant_id", "item_id", "status"}),
    ]


def test_an_aggregate_reads_whole_rows() -> None:
    got = demanded(
        "INSERT INTO out1 SELECT order_id, COUNT(*) FROM "
        "(SELECT DISTINCT * FROM orders) GROUP BY order_id;"
    )
    assert got == [None]


def test_a_delta_join_demands_what_its_sides_read_so_mirrors_hold_only_that() -> None:
    got = demanded(
        "SET 'table.optimizer.delta-join.strategy' = 'FORCE';\n"
        "INSERT INTO out1 SELECT o.order_id, i.item_id FROM orders o "
        "JOIN items i ON o.merchant_id = i.merchant_id AND o.item_id = i.item_id "
        "WHERE o.status <> 'X';"
    )
    assert got == [
        frozenset({"merchant_id", "item_id"}),  # items: the keys (also its primary key)
        frozenset({"order_id", "merchant_id", "item_id", "status"}),  # status: the filter
    ]


def _calcs_below_joins(insert: str) -> list:
    from deltaflow.processor import plan as P
    from deltaflow.processor.planner.physical_rules import index

    plan = plan_job(ORDERS.format(extra="") + insert).plan
    nodes = index(tuple(plan.sinks))[0].values()
    return [c for j in nodes if type(j) is P.Join for c in j.inputs if type(c) is P.Calc]


_COMPUTED_JOIN = (
    "SET 'table.optimizer.delta-join.strategy' = 'NONE';\n"
    "INSERT INTO out1 SELECT o.order_id, {read} FROM "
    "(SELECT order_id, merchant_id, item_id, UPPER(status) AS s, amount * 2 AS a FROM orders) o "
    "JOIN items i ON o.merchant_id = i.merchant_id AND o.item_id = i.item_id;"
)


def test_a_computed_column_no_consumer_reads_becomes_a_typed_null() -> None:
    from deltaflow.processor.exprs.nodes import Call, Literal

    insert = _COMPUTED_JOIN.format(read="CHAR_LENGTH(o.s)")
    (calc,) = _calcs_below_joins(insert)
    by_name = dict(zip([f.name for f in calc.fields], calc.projection, strict=True))
    assert isinstance(by_name["s"], Call)  # read above the join: still computed
    assert isinstance(by_name["a"], Literal) and by_name["a"].value is None
    assert by_name["a"].type.root == "DECIMAL"  # the column keeps its type
    assert demanded(insert)[1] == frozenset({"order_id", "merchant_id", "item_id", "status"})


def test_the_columns_only_an_unread_expression_reads_are_not_decoded() -> None:
    insert = _COMPUTED_JOIN.format(read="o.item_id")
    (calc,) = _calcs_below_joins(insert)
    names = [f.name for f in calc.fields]
    assert [calc.projection[names.index(c)].value for c in ("s", "a")] == [None, None]
    assert demanded(insert)[1] == frozenset({"order_id", "merchant_id", "item_id"})
