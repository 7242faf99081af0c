"""The workloads' SQL: one text for deltaflow (Kafka in, upsert-kafka out) and one for
Flink (the same events from debezium-json files, a blackhole sink; see PERFORMANCE.md).
"""

from __future__ import annotations

ORDERS_COLUMNS = """order_id BIGINT, merchant_id INT, item_id INT, amount DECIMAL(10, 2),
  status STRING, updated_at TIMESTAMP(3), PRIMARY KEY (order_id) NOT ENFORCED"""
ITEMS_COLUMNS = """merchant_id INT, item_id INT, item_name STRING, price DECIMAL(10, 2),
  PRIMARY KEY (merchant_id, item_id) NOT ENFORCED"""

SINKS = {
    "W1": """order_id BIGINT, merchant_id INT, amount DECIMAL(10, 2),
  PRIMARY KEY (order_id) NOT ENFORCED""",
    "W2": """merchant_id INT, order_count BIGINT, total_amount DECIMAL(38, 2),
  PRIMARY KEY (merchant_id) NOT ENFORCED""",
    "W3": """order_id BIGINT, merchant_id INT, item_id INT, amount DECIMAL(10, 2),
  item_name STRING, price DECIMAL(10, 2), PRIMARY KEY (order_id) NOT ENFORCED""",
}
SINKS["W4"] = """order_id BIGINT, merchant_id INT, item_id INT, amount DECIMAL(10, 2),
  item_name STRING, price DECIMAL(10, 2), first_item STRING, PRIMARY KEY (order_id) NOT ENFORCED"""
SINKS["W3D"] = SINKS["W3"]
SINKS["W3R"] = SINKS["W3"]
SINKS["W4R"] = SINKS["W4"]
SINKS["W2M"] = SINKS["W2"]

QUERIES = {
    "W1": "SELECT order_id, merchant_id, amount FROM orders WHERE status = 'PAID'",
    "W2": "SELECT merchant_id, COUNT(*), SUM(amount) FROM orders GROUP BY merchant_id",
    "W3": """SELECT o.order_id, o.merchant_id, o.item_id, o.amount, i.item_name, i.price
FROM orders AS o JOIN items AS i ON o.merchant_id = i.merchant_id AND o.item_id = i.item_id""",
}
# A three-way join that reads items twice: each order with its item and its merchant's item 0.
QUERIES["W4"] = """SELECT o.order_id, o.merchant_id, o.item_id, o.amount, i.item_name, i.price,
  f.item_name FROM orders AS o
JOIN items AS i ON o.merchant_id = i.merchant_id AND o.item_id = i.item_id
JOIN items AS f ON o.merchant_id = f.merchant_id WHERE f.item_id = 0"""
QUERIES["W3D"] = QUERIES["W3"]
QUERIES["W3R"] = QUERIES["W3"]
QUERIES["W4R"] = QUERIES["W4"]
QUERIES["W2M"] = QUERIES["W2"]
# Variants: the same query with one planner/runtime setting (Flink's names).
# W3 at default settings plans a delta join (AUTO); W3R is W3 with the regular join.
SETTINGS = {
    "W3D": {"table.optimizer.delta-join.strategy": "FORCE"},
    "W3R": {"table.optimizer.delta-join.strategy": "NONE"},
    "W3SR": {"table.optimizer.delta-join.strategy": "NONE"},
    "W4R": {"table.optimizer.delta-join.strategy": "NONE"},
    "W2M": {"table.exec.mini-batch.enabled": "true", "table.exec.mini-batch.allow-latency": "1 s",
            "table.exec.mini-batch.size": "5000"},
}  # fmt: skip
# Variants reading the sources with other table options: W1msg / W2msg take before-images
# from the messages (Flink's way) instead of from state (the default with a primary key),
# to measure what the normalization costs.
SOURCE_OPTIONS = {
    "W1msg": {"debezium-json.before-image": "message"},
    "W2msg": {"debezium-json.before-image": "message"},
}
for _variant, _base in (("W1msg", "W1"), ("W2msg", "W2")):
    SINKS[_variant], QUERIES[_variant] = SINKS[_base], QUERIES[_base]
# W3S / W3SR: W3 (delta join, default) / W3R over the skewed orders (bench.data, ``skew``).
for _variant in ("W3S", "W3SR"):
    SINKS[_variant], QUERIES[_variant] = SINKS["W3"], QUERIES["W3"]
BASE = {
    "W3S": "W3",
    "W3SR": "W3",
    "W3D": "W3",
    "W3R": "W3",
    "W4R": "W4",
    "W2M": "W2",
    "W1msg": "W1",
    "W2msg": "W2",
}  # what a variant compares with


def skewed(workload: str) -> bool:
    """Whether ``workload`` reads the skewed orders (``bench.data``, ``Shape.skew``)."""
    return workload in ("W3S", "W3SR")


def base(workload: str) -> str:
    return BASE.get(workload, workload)


def uses_items(workload: str) -> bool:
    return workload.startswith(("W3", "W4"))


def kafka_job(workload: str, bootstrap: str, topics: dict[str, str], bounded: bool = True,
              source_options: dict[str, str] | None = None) -> str:  # fmt: skip
    """The deltaflow job: ``topics`` maps orders / items / out to topic names."""
    end = "\n  'scan.bounded.mode' = 'latest-offset'," if bounded else ""
    options = {**SOURCE_OPTIONS.get(workload, {}), **(source_options or {})}
    end += "".join(f"\n  '{k}' = '{v}'," for k, v in options.items())

    def source(name: str, columns: str) -> str:
        return f"""CREATE TABLE {name} (
  {columns}
) WITH (
  'connector' = 'kafka', 'topic' = '{topics[name]}',
  'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset',{end}
  'format' = 'debezium-json'
);
"""

    sets = "".join(f"SET '{k}' = '{v}';\n" for k, v in SETTINGS.get(workload, {}).items())
    parts = [sets, source("orders", ORDERS_COLUMNS)]
    if uses_items(workload):
        parts.append(source("items", ITEMS_COLUMNS))
    parts.append(f"""CREATE TABLE out_table (
  {SINKS[workload]}
) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{topics["out"]}',
  'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'json', 'value.format' = 'json'
);
INSERT INTO out_table {QUERIES[workload]};
""")
    return "".join(parts)


def flink_statements(workload: str, files: dict[str, str]) -> list[str]:
    """Flink SQL statements: filesystem debezium-json sources, a blackhole sink, the INSERT."""

    def source(name: str, columns: str) -> str:
        return f"""CREATE TABLE {name} (
  {columns}
) WITH ('connector' = 'filesystem', 'path' = '{files[name]}', 'format' = 'debezium-json')"""

    out = [source("orders", ORDERS_COLUMNS)]
    if uses_items(workload):
        out.append(source("items", ITEMS_COLUMNS))
    out.append(f"CREATE TABLE out_table (\n  {SINKS[workload]}\n) WITH ('connector' = 'blackhole')")
    out.append(f"INSERT INTO out_table {QUERIES[workload]}")
    return out
