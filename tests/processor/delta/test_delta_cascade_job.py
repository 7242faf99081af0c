"""A three-way join over Debezium topics on the real broker, run as a cascade of delta joins
and as regular joins: the same upsert table, and the table computed here from the final
source tables. Updates move orders between customers and customers between regions (the
join keys), deletes remove rows on every side."""

from __future__ import annotations

import json
import random

from confluent_kafka import Producer
from dl_helpers import debezium_history
from tests_support import fold_upsert_topic

from deltaflow.connectors.broker import ensure_topics
from deltaflow.processor import plan as P
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

SOURCE = """CREATE TABLE {name} ({cols}, PRIMARY KEY ({pk}) NOT ENFORCED)
WITH ('connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bs}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json');
"""
TABLES = {
    "orders": ("order_id INT, customer_id INT, qty INT", "order_id"),
    "customers": ("customer_id INT, region_id INT, cname STRING", "customer_id"),
    "regions": ("region_id INT, rname STRING", "region_id"),
}
JOB = """CREATE TABLE enriched (order_id INT, qty INT, cname STRING, rname STRING,
  PRIMARY KEY (order_id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{out}', 'properties.bootstrap.servers' = '{bs}',
  'key.format' = 'json', 'value.format' = 'json');
INSERT INTO enriched
SELECT o.order_id, o.qty, c.cname, r.rname FROM orders AS o
JOIN customers AS c ON o.customer_id = c.customer_id
LEFT JOIN regions AS r ON c.region_id = r.region_id;
"""


def history(rng: random.Random, keys, make, n: int) -> tuple[list[dict], dict]:
    return debezium_history(rng, keys, make, n, deletes=0.25)


def expected_table(orders: dict, customers: dict, regions: dict) -> dict:
    """INNER join of orders and customers, LEFT join of regions, keyed by order_id."""
    out = {}
    for o in orders.values():
        c = customers.get(o["customer_id"])
        if c is None:
            continue
        r = regions.get(c["region_id"]) if c["region_id"] is not None else None
        key = json.dumps({"order_id": o["order_id"]}, separators=(",", ":"))
        out[key] = {
            "order_id": o["order_id"], "qty": o["qty"], "cname": c["cname"],
            "rname": r["rname"] if r is not None else None,
        }  # fmt: skip
    return out


def test_three_way_cascade_and_regular_joins_build_the_same_table(broker, new_topic, tmp_path):
    rng = random.Random(21)
    regions, live_r = history(rng, list(range(4)), lambda k: {"region_id": k,
                              "rname": f"r{rng.randrange(50)}"}, 30)  # fmt: skip
    customers, live_c = history(rng, list(range(12)), lambda k: {"customer_id": k,
                                "region_id": rng.choice([None, 0, 1, 2, 3]),
                                "cname": f"c{rng.randrange(50)}"}, 120)  # fmt: skip
    orders, live_o = history(rng, list(range(60)), lambda k: {"order_id": k,
                             "customer_id": rng.randrange(14), "qty": rng.randrange(9)}, 400)  # fmt: skip
    topics = {name: new_topic(name[0]) for name in TABLES}
    outs = {mode: new_topic("out") for mode in ("FORCE", "NONE")}
    ensure_topics(broker, [*topics.values(), *outs.values()])
    producer = Producer({"bootstrap.servers": broker})
    streams = ((topics["orders"], orders), (topics["customers"], customers),
               (topics["regions"], regions))  # fmt: skip
    for n in range(len(orders)):  # interleaved, so changes on each side meet live rows
        for topic, events in streams:
            if n < len(events):
                producer.produce(topic, json.dumps(events[n]).encode())
    producer.flush(10)
    tables = "".join(
        SOURCE.format(name=name, cols=cols, pk=pk, topic=topics[name], bs=broker)
        for name, (cols, pk) in TABLES.items()
    )
    results = {}
    for mode, out in outs.items():
        sql = f"SET 'table.optimizer.delta-join.strategy' = '{mode}';\n" + tables
        planned = plan_job(sql + JOB.format(out=out, bs=broker))
        cascades = [n for n in _nodes(planned.plan.sinks[0]) if type(n) is P.DeltaJoinCascade]
        assert len(cascades) == (1 if mode == "FORCE" else 0)
        Job(planned.plan, JobOptions(state_dir=tmp_path / mode, bootstrap=broker)).run()
        results[mode] = fold_upsert_topic(broker, out)
    expected = expected_table(live_o, live_c, live_r)
    assert len(expected) > 10
    assert results["FORCE"] == expected
    assert results["NONE"] == expected


def _nodes(node: P.Node) -> list[P.Node]:
    return [node, *(n for child in node.inputs for n in _nodes(child))]
