"""The physical plan handed to the runtime: keys, shared scans, watermarks, materializer, UDFs."""

from __future__ import annotations

import sys
import textwrap

import pytest

from deltaflow.formats.errors import PlanError, SqlError
from deltaflow.processor import plan as P
from deltaflow.processor.exprs.nodes import Call, Literal, UdfCall
from deltaflow.processor.planner.api import plan_job

USERS = """CREATE TABLE users (id BIGINT, name STRING, region STRING, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'users', 'format' = 'debezium-json');
"""
ORDERS = """CREATE TABLE orders (order_id BIGINT, user_id BIGINT, amount INT, status STRING, PRIMARY KEY (order_id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'orders', 'format' = 'debezium-json');
"""


def nodes(node: P.Node) -> list[P.Node]:
    out = [node]
    for child in node.inputs:
        out += nodes(child)
    return out


# Regular joins: AUTO (the default) plans joins of CDC sources with primary keys as delta joins.
REGULAR = "SET 'table.optimizer.delta-join.strategy' = 'NONE';\n"


def only(node: P.Node, kind: type) -> P.Node:
    (found,) = [n for n in nodes(node) if type(n) is kind]
    return found


def test_primary_key_columns_become_not_null_and_scan_keeps_the_key() -> None:
    sink = plan_job(USERS + "CREATE TABLE o (id BIGINT, name STRING) WITH ('connector' = 'print');\n"
                    "INSERT INTO o SELECT id, name FROM users;").plan.sinks[0]  # fmt: skip
    scan = only(sink, P.TableSourceScan)
    assert not scan.fields[0].type.nullable and scan.fields[1].type.nullable
    assert scan.upsert_keys == ((0,),)
    assert scan.changelog_mode == frozenset({0, 1, 2, 3})


def test_calc_keeps_a_key_only_when_it_projects_the_key_columns_unchanged() -> None:
    keep = plan_job(USERS + "CREATE TABLE o (n STRING, id BIGINT) WITH ('connector' = 'print');\n"
                    "INSERT INTO o SELECT name, id FROM users;").plan.sinks[0]  # fmt: skip
    assert only(keep, P.Calc).upsert_keys == ((1,),)
    lose = plan_job(USERS + "CREATE TABLE o (n STRING, id BIGINT) WITH ('connector' = 'print');\n"
                    "INSERT INTO o SELECT name, id + 1 FROM users;").plan.sinks[0]  # fmt: skip
    assert only(lose, P.Calc).upsert_keys == ()


def test_join_on_both_primary_keys_keeps_the_keys_and_records_unique_keys() -> None:
    sql = (
        USERS
        + ORDERS
        + (
            "CREATE TABLE o (order_id BIGINT, name STRING) WITH ('connector' = 'print');\n"
            "INSERT INTO o SELECT o.order_id, u.name FROM orders AS o JOIN users AS u ON o.order_id = u.id;"
        )
    )
    join = only(plan_job(REGULAR + sql).plan.sinks[0], P.Join)
    assert (join.left_keys, join.right_keys) == ((0,), (0,))
    assert join.left_unique_keys == ((0,),) and join.right_unique_keys == ((0,),)
    assert set(join.upsert_keys) == {(0,), (4,)}


def test_group_aggregate_into_upsert_kafka_drops_update_before() -> None:
    sql = ORDERS + (
        "CREATE TABLE o (user_id BIGINT, total INT, PRIMARY KEY (user_id) NOT ENFORCED) WITH "
        "('connector' = 'upsert-kafka', 'topic' = 'o', 'key.format' = 'json', 'value.format' = 'json');\n"
        "INSERT INTO o SELECT user_id, SUM(amount) AS total FROM orders GROUP BY user_id;"
    )
    agg = only(plan_job(sql).plan.sinks[0], P.GroupAggregate)
    assert agg.changelog_mode == frozenset({0, 2, 3})
    assert agg.group_keys == (0,) and agg.upsert_keys == ((0,),)
    (call,) = agg.aggs
    assert (call.function, call.args, call.name) == ("SUM", (1,), "total")


def test_statement_set_shares_the_source_scan() -> None:
    sql = USERS + (
        "CREATE TABLE a (id BIGINT) WITH ('connector' = 'print');\n"
        "CREATE TABLE b (name STRING) WITH ('connector' = 'print');\n"
        "EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT id FROM users; "
        "INSERT INTO b SELECT name FROM users; END;"
    )
    a, b = plan_job(sql).plan.sinks
    assert only(a, P.TableSourceScan) is only(b, P.TableSourceScan)
    ids = [n.node_id for n in nodes(a) + nodes(b)]
    assert len(set(ids)) == len(ids) - 1  # the shared scan appears twice


def test_watermark_expression_is_bound_over_the_scan_row() -> None:
    sql = (
        "CREATE TABLE logs (msg STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) "
        "WITH ('connector' = 'datagen');\n"
        "CREATE TABLE o (msg STRING) WITH ('connector' = 'print');\nINSERT INTO o SELECT msg FROM logs;"
    )
    scan = only(plan_job(sql).plan.sinks[0], P.TableSourceScan)
    assert scan.watermark is not None and scan.watermark.rowtime == 1
    expr = scan.watermark.expr
    assert isinstance(expr, Call) and expr.op == "-"
    assert isinstance(expr.operands[1], Literal) and expr.operands[1].value == 5000


def test_materializer_node_sits_under_the_sink_when_the_key_is_not_covered() -> None:
    sql = USERS + (
        "CREATE TABLE o (region STRING, name STRING, PRIMARY KEY (region) NOT ENFORCED) WITH ('connector' = 'print');\n"
        "INSERT INTO o SELECT region, name FROM users;"
    )
    sink = plan_job(sql).plan.sinks[0]
    assert sink.upsert_materialize
    mat = sink.inputs[0]
    assert isinstance(mat, P.SinkUpsertMaterializer) and mat.key == (0,)
    strict = "SET 'table.exec.sink.require-on-conflict' = 'true';\n" + sql
    with pytest.raises(PlanError, match=r"Primary key: \[region\], upsert key: \."):
        plan_job(strict)


def test_python_udf_type_and_determinism_come_from_the_function(tmp_path, monkeypatch) -> None:
    (tmp_path / "my_udfs.py").write_text(
        textwrap.dedent("""
        def shout(s):
            return s.upper()
        shout.result_type = 'VARCHAR(20)'

        def jitter(x):
            return x
        jitter.result_type = 'BIGINT'
        jitter.deterministic = False
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sql = USERS + (
        "CREATE FUNCTION shout AS 'my_udfs.shout' LANGUAGE PYTHON;\n"
        "CREATE FUNCTION jitter AS 'my_udfs.jitter' LANGUAGE PYTHON;\n"
        "CREATE TABLE o (n VARCHAR(20), j BIGINT) WITH ('connector' = 'print');\n"
        "INSERT INTO o SELECT shout(name), jitter(id) FROM users;"
    )
    job = plan_job(sql)
    calc = only(job.plan.sinks[0], P.Calc)
    shout, jitter = calc.projection
    assert isinstance(shout, UdfCall) and shout.type.length == 20 and shout.deterministic
    assert isinstance(jitter, UdfCall) and not jitter.deterministic
    assert job.plan.functions == {"SHOUT": "my_udfs.shout", "JITTER": "my_udfs.jitter"}
    sys.modules.pop("my_udfs", None)


def test_unloadable_udf_is_a_sql_error() -> None:
    sql = USERS + (
        "CREATE FUNCTION f AS 'no_such_module_xyz.f' LANGUAGE PYTHON;\n"
        "CREATE TABLE o (n STRING) WITH ('connector' = 'print');\nINSERT INTO o SELECT f(name) FROM users;"
    )
    with pytest.raises(SqlError, match="cannot load Python function F"):
        plan_job(sql)


def test_explain_statements_are_collected_in_order() -> None:
    sql = USERS + (
        "CREATE TABLE o (id BIGINT) WITH ('connector' = 'print');\n"
        "EXPLAIN CHANGELOG_MODE SELECT id FROM users WHERE id > 1;\n"
        "EXPLAIN CHANGELOG_MODE INSERT INTO o SELECT id FROM users;"
    )
    job = plan_job(sql)
    assert job.plan.sinks == ()
    first, second = job.explains
    assert first.startswith("Calc(select=[id], where=[>(id, 1)], changelogMode=[I,UB,UA,D])")
    assert second.startswith(
        "Sink(table=[default_catalog.default_database.o], fields=[id], changelogMode=[NONE])"
    )


def test_window_time_column_must_be_a_time_attribute() -> None:
    sql = (
        "CREATE TABLE logs (msg STRING, ts TIMESTAMP(3)) WITH ('connector' = 'datagen');\n"
        "CREATE TABLE o (n BIGINT) WITH ('connector' = 'print');\n"
        "INSERT INTO o SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE logs, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) "
        "GROUP BY window_start, window_end;"
    )
    with pytest.raises(SqlError, match="not a time attribute") as info:
        plan_job(sql)
    assert info.value.line == 3


LOOKUP = """CREATE TABLE orders (id BIGINT, cid BIGINT, ts TIMESTAMP(3), pt AS PROCTIME(),
  WATERMARK FOR ts AS ts) WITH ('connector' = 'kafka', 'topic' = 'o', 'format' = 'json');
CREATE TABLE customers (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'c', 'format' = 'debezium-json');
CREATE TABLE r (id BIGINT, name STRING) WITH ('connector' = 'print');
"""


def test_lookup_join_probes_the_table_by_the_equi_join_keys() -> None:
    sql = LOOKUP + (
        "INSERT INTO r SELECT o.id, c.name FROM orders AS o "
        "LEFT JOIN customers FOR SYSTEM_TIME AS OF o.pt AS c ON o.cid = c.id;"
    )
    job = plan_job(sql)
    lookup = only(job.plan.sinks[0], P.LookupJoin)
    assert (lookup.join_type, lookup.probe_keys, lookup.lookup_keys) == ("LEFT", (1,), (0,))
    assert lookup.table == "default_catalog.default_database.customers"
    assert [f.name for f in lookup.table_fields] == ["id", "name"]
    assert lookup.changelog_mode == frozenset({0})
    assert (
        "LookupJoin(table=[default_catalog.default_database.customers], joinType=[LeftOuterJoin], lookup=[id=cid]"
        in job.explain()
    )


def test_an_event_time_temporal_join_needs_a_versioned_table() -> None:
    """AS OF a rowtime is an event-time temporal join (Flink's message): customers has a
    primary key but no watermark."""
    sql = LOOKUP + (
        "INSERT INTO r SELECT o.id, c.name FROM orders AS o "
        "JOIN customers FOR SYSTEM_TIME AS OF o.ts AS c ON o.cid = c.id;"
    )
    with pytest.raises(SqlError, match="requires both primary key and row time attribute") as info:
        plan_job(sql)
    assert info.value.line == 6


WINDOWED = """CREATE TABLE logs (msg STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'datagen');
CREATE TABLE r (msg STRING) WITH ('connector' = 'print');
"""


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("SELECT msg FROM TABLE(TUMBLE(TABLE logs, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY msg", "window_start and window_end"),
        ("SELECT msg FROM (SELECT msg, ROW_NUMBER() OVER (PARTITION BY window_start ORDER BY ts) AS rn "
         "FROM TABLE(TUMBLE(TABLE logs, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) WHERE rn = 1", "ROW_NUMBER"),
    ],
)  # fmt: skip
def test_window_table_functions_refused_where_deltaflow_has_no_plan(
    query: str, message: str
) -> None:
    with pytest.raises(SqlError, match=message) as info:
        plan_job(WINDOWED + "INSERT INTO r " + query + ";")
    assert info.value.line == 4


def test_union_all_casts_each_side_to_the_common_type() -> None:
    sql = (
        "CREATE TABLE a (x INT, s CHAR(2)) WITH ('connector' = 'datagen');\n"
        "CREATE TABLE b (x BIGINT, s STRING) WITH ('connector' = 'datagen');\n"
        "CREATE TABLE r (x BIGINT, s STRING) WITH ('connector' = 'print');\n"
        "INSERT INTO r SELECT x, s FROM a UNION ALL SELECT x, s FROM b;"
    )
    union = only(plan_job(sql).plan.sinks[0], P.Union)
    left, right = union.inputs
    assert [t.sql() for t in union.types] == ["BIGINT", "STRING"]
    assert isinstance(left, P.Calc) and [t.sql() for t in left.types] == ["BIGINT", "STRING"]
    assert isinstance(right, P.TableSourceScan)
    with pytest.raises(SqlError, match="no common type"):
        plan_job(sql.replace("SELECT x, s FROM b", "SELECT s, x FROM b"))


UPSERT_SINK = (
    "CREATE TABLE o (user_id BIGINT, total INT, PRIMARY KEY (user_id) NOT ENFORCED) WITH "
    "('connector' = 'upsert-kafka', 'topic' = 'o', 'key.format' = 'json', 'value.format' = 'json');\n"
)


def modes(sink: P.Node) -> list[tuple[str, str]]:
    kinds = ("I", "UB", "UA", "D")
    return [
        (type(n).__name__, ",".join(kinds[k] for k in sorted(n.changelog_mode)))
        for n in nodes(sink)[1:]
    ]


def test_upsert_sink_keyed_like_its_cdc_source_gets_drop_update_before() -> None:
    # Flink 2.3 plans Calc [I,UA,D] <- DropUpdateBefore [I,UA,D] <- TableSourceScan [I,UB,UA,D]
    sql = ORDERS + UPSERT_SINK + "INSERT INTO o SELECT order_id, amount FROM orders;"
    assert modes(plan_job(sql).plan.sinks[0]) == [
        ("Calc", "I,UA,D"),
        ("DropUpdateBefore", "I,UA,D"),
        ("TableSourceScan", "I,UB,UA,D"),
    ]


def test_upsert_sink_keyed_wider_than_its_input_keeps_update_before() -> None:
    # Flink: a sink key other than exactly an upsert key of the input asks for -U rows
    sink = UPSERT_SINK.replace(
        "total INT, PRIMARY KEY (user_id)", "total INT, PRIMARY KEY (user_id, total)"
    )
    sql = ORDERS + sink + "INSERT INTO o SELECT order_id, amount FROM orders;"
    assert modes(plan_job(sql).plan.sinks[0]) == [
        ("Calc", "I,UB,UA,D"),
        ("TableSourceScan", "I,UB,UA,D"),
    ]


def test_a_filter_over_a_cdc_source_keeps_update_before_into_an_upsert_sink() -> None:
    sql = (
        ORDERS + UPSERT_SINK + "INSERT INTO o SELECT order_id, amount FROM orders WHERE amount > 1;"
    )
    assert modes(plan_job(sql).plan.sinks[0]) == [
        ("Calc", "I,UB,UA,D"),
        ("TableSourceScan", "I,UB,UA,D"),
    ]


def test_a_filter_keeps_update_before_so_the_aggregate_below_emits_them() -> None:
    having = (
        ORDERS
        + UPSERT_SINK
        + (
            "INSERT INTO o SELECT user_id, SUM(amount) AS total FROM orders GROUP BY user_id HAVING COUNT(*) > 1;"
        )
    )
    assert modes(plan_job(having).plan.sinks[0])[:2] == [
        ("Calc", "I,UB,UA,D"),
        ("GroupAggregate", "I,UB,UA,D"),
    ]
    projection = (
        ORDERS
        + UPSERT_SINK
        + (
            "INSERT INTO o SELECT user_id, total FROM (SELECT user_id, SUM(amount) + 1 AS total FROM orders GROUP BY user_id);"
        )
    )
    assert modes(plan_job(projection).plan.sinks[0])[:2] == [
        ("Calc", "I,UA,D"),
        ("GroupAggregate", "I,UA,D"),
    ]


def test_join_into_upsert_sink_drops_update_before_only_when_inputs_allow_it() -> None:
    clicks = "CREATE TABLE clicks (uid BIGINT, n INT) WITH ('connector' = 'kafka', 'topic' = 'k', 'format' = 'json');\n"
    keyed = (
        ORDERS
        + clicks
        + UPSERT_SINK
        + (
            "INSERT INTO o SELECT t.user_id, c.n FROM (SELECT user_id, SUM(amount) AS total FROM orders "
            "GROUP BY user_id) AS t JOIN clicks AS c ON t.user_id = c.uid ON CONFLICT DO DEDUPLICATE;"
        )
    )
    join = only(plan_job(keyed).plan.sinks[0], P.Join)
    # The sink is materialized (no upsert key of the join is its primary key), and the
    # materializer retracts by -U: Flink 2.3 plans this Join with changelogMode=[I,UB,UA,D].
    assert join.changelog_mode == frozenset({0, 1, 2, 3})
    assert 1 in join.inputs[0].changelog_mode  # deltaflow's join state retracts by -U
    cdc = (
        ORDERS
        + clicks
        + UPSERT_SINK
        + (
            "INSERT INTO o SELECT o.order_id, c.n FROM orders AS o JOIN clicks AS c ON o.order_id = c.uid "
            "ON CONFLICT DO DEDUPLICATE;"
        )
    )
    assert only(plan_job(cdc).plan.sinks[0], P.Join).changelog_mode == frozenset({0, 1, 2, 3})


def test_where_equality_of_a_comma_join_becomes_the_join_key() -> None:
    sql = (
        USERS
        + ORDERS
        + (
            "CREATE TABLE o (order_id BIGINT, name STRING) WITH ('connector' = 'print');\n"
            "INSERT INTO o SELECT o.order_id, u.name FROM orders AS o, users AS u "
            "WHERE o.user_id = u.id AND o.amount > 5 AND u.name <> o.status;"
        )
    )
    join = only(plan_job(REGULAR + sql).plan.sinks[0], P.Join)
    assert (join.left_keys, join.right_keys) == ((1,), (0,))
    assert join.condition is not None  # the two-sided inequality
    left = join.inputs[0]
    assert isinstance(left, P.Calc) and left.condition is not None  # amount > 5 below the join


def test_outer_join_keeps_filters_on_its_null_padded_side_above_the_join() -> None:
    sql = (
        USERS
        + ORDERS
        + (
            "CREATE TABLE o (order_id BIGINT, name STRING) WITH ('connector' = 'print');\n"
            "INSERT INTO o SELECT o.order_id, u.name FROM orders AS o LEFT JOIN users AS u "
            "ON o.user_id = u.id WHERE u.name IS NULL AND o.amount > 5 AND RAND() < 0.5;"
        )
    )
    sink = plan_job(REGULAR + sql).plan.sinks[0]
    top = sink.inputs[0]
    assert isinstance(top, P.Calc) and top.condition is not None
    assert "IS NULL" in repr(top.condition) and "RAND" in repr(top.condition)
    join = only(sink, P.Join)
    assert isinstance(join.inputs[0], P.Calc) and "'>'" in repr(join.inputs[0].condition)
    assert isinstance(join.inputs[1], P.TableSourceScan)


def test_the_reason_a_join_stays_regular_is_no_part_of_the_plan_fingerprint() -> None:
    # an append-only Kafka source has no mirror: AUTO keeps the Join and says why
    sql = ORDERS.replace("'debezium-json'", "'json'").replace(
        ", PRIMARY KEY (order_id) NOT ENFORCED", ""
    ) + (
        "CREATE TABLE u (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED)\n"
        "  WITH ('connector' = 'kafka', 'topic' = 'u', 'format' = 'debezium-json');\n"
        "CREATE TABLE o (order_id BIGINT, name STRING) WITH ('connector' = 'print');\n"
        "INSERT INTO o SELECT order_id, name FROM orders JOIN u ON orders.user_id = u.id;"
    )
    auto, regular = plan_job(sql), plan_job(REGULAR + sql)
    assert "deltaJoin=[not rewritten: table orders has no PRIMARY KEY" in auto.explain()
    assert "deltaJoin" not in regular.explain()
    assert auto.plan.fingerprint == regular.plan.fingerprint
