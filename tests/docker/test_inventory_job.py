"""docker/jobs/inventory.sql against the stack it runs in.

The job must be valid Flink SQL over the topics the Debezium connector actually
writes, reach Kafka at an address Kafka advertises inside the compose network,
and declare only columns the Debezium inventory example's tables have.
"""

from __future__ import annotations

from sqlglot import exp

# The Postgres inventory example's tables (quay.io/debezium/example-postgres,
# inventory.sql): column names and primary keys.
INVENTORY = {
    "inventory.customers": ({"id", "first_name", "last_name", "email"}, ("id",)),
    "inventory.products": ({"id", "name", "description", "weight"}, ("id",)),
    "inventory.orders": ({"id", "order_date", "purchaser", "quantity", "product_id"}, ("id",)),
}


def inserts(job) -> list[tuple[int, exp.Insert]]:
    return [(i, s) for i, s in enumerate(job.statements) if isinstance(s, exp.Insert)]


def read_tables(insert: exp.Insert) -> set[str]:
    """Tables an INSERT reads: every table reference in its query (CTE names excluded)."""
    ctes = {cte.alias for cte in insert.expression.find_all(exp.CTE)}
    return {t.name for t in insert.expression.find_all(exp.Table)} - ctes


def sources(job):
    names = set().union(*(read_tables(insert) for _, insert in inserts(job)))
    return [job.tables[name] for name in sorted(names)]


def sink(job):
    ((_, insert),) = inserts(job)
    return job.tables[insert.this.name], insert


def test_job_is_create_tables_then_one_insert(job):
    kinds = [type(s).__name__ for s in job.statements]
    assert kinds == ["Create"] * 4 + ["Insert"]
    assert len(job.tables) == 4, "a table is created twice"


def test_tables_are_created_before_the_insert_uses_them(job):
    for position, insert in inserts(job):
        for name in read_tables(insert) | {insert.this.name}:
            assert name in job.tables, f"INSERT uses {name}, which the job never creates"
            assert job.tables[name].position < position, f"{name} is created after the INSERT"


def test_sources_read_debezium_json_from_the_earliest_offset(job):
    for table in sources(job):
        assert table.options["connector"] == "kafka"
        assert table.options["format"] == "debezium-json"
        assert table.options["scan.startup.mode"] == "earliest-offset"


def test_every_topic_the_job_reads_is_one_the_connector_produces(job, debezium_topics):
    read = {table.options["topic"] for table in sources(job)}
    assert read <= debezium_topics, f"no connector writes {read - debezium_topics}"
    assert len(read) == 3, "the job should read customers, products and orders"


def test_every_table_uses_the_kafka_listener_advertised_in_the_network(job, internal_bootstrap):
    for table in job.tables.values():
        servers = set(table.options["properties.bootstrap.servers"].split(","))
        assert servers <= internal_bootstrap, f"{table.name} bootstraps from {servers}"


def test_source_columns_and_keys_are_those_of_the_inventory_tables(job, connector):
    prefix = connector["config"]["topic.prefix"] + "."
    for table in sources(job):
        columns, key = INVENTORY[table.options["topic"].removeprefix(prefix)]
        assert set(table.columns) <= columns, (
            f"{table.name} declares {set(table.columns) - columns}"
        )
        assert table.primary_key == key


def test_sink_is_upsert_kafka_keyed_by_a_not_enforced_primary_key(job, debezium_topics):
    table, _ = sink(job)
    assert table.options["connector"] == "upsert-kafka"
    assert table.options["key.format"] and table.options["value.format"]
    assert "scan.startup.mode" not in table.options, "upsert-kafka has no scan.startup.mode option"
    assert table.primary_key and set(table.primary_key) <= set(table.columns)
    create = job.statements[table.position]
    assert create.find(exp.PrimaryKey).sql().endswith("NOT ENFORCED"), "Flink requires NOT ENFORCED"
    assert table.options["topic"] not in debezium_topics


def test_insert_gives_one_value_per_sink_column(job):
    table, insert = sink(job)
    assert insert.this.expressions == [] or len(insert.this.expressions) == len(table.columns)
    assert len(insert.expression.expressions) == len(table.columns)


def test_group_key_covers_the_sink_primary_key(job):
    """Each sink key gets one row only if the value feeding it is a grouping column."""
    table, insert = sink(job)
    select = insert.expression
    grouped = {column.sql() for column in select.args["group"].expressions}
    for key in table.primary_key:
        value = select.expressions[table.columns.index(key)]
        assert isinstance(value, exp.Column) and value.sql() in grouped, (
            f"{key} is fed by {value.sql()}"
        )


def test_insert_joins_orders_with_customers_and_products(job):
    _, insert = sink(job)
    assert read_tables(insert) == {"orders", "customers", "products"}
    assert len(list(insert.expression.find_all(exp.Join))) == 2
