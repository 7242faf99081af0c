"""A delta join into a sink keyed by the orders' primary key needs no SinkUpsertMaterializer.

deltaflow keeps order_id as the join's upsert key (no shuffle reorders a row's
changes), so the plan has no materializer; the upsert table read back must still
equal the inner join of the final orders and items tables.
"""

from __future__ import annotations

import json
import random

from confluent_kafka import Producer
from dl_helpers import debezium_history
from tests_support import fold_upsert_topic

from deltaflow.connectors.broker import ensure_topics
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

JOB = """
SET 'table.optimizer.delta-join.strategy' = 'FORCE';
CREATE TABLE orders (order_id INT, merchant_id INT, item_id INT, qty INT,
  PRIMARY KEY (order_id) NOT ENFORCED)
WITH ('connector' = 'kafka', 'topic' = '{orders}', 'properties.bootstrap.servers' = '{bs}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json');
CREATE TABLE items (merchant_id INT, item_id INT, name STRING,
  PRIMARY KEY (merchant_id, item_id) NOT ENFORCED)
WITH ('connector' = 'kafka', 'topic' = '{items}', 'properties.bootstrap.servers' = '{bs}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json');
CREATE TABLE enriched (order_id INT, qty INT, name STRING, PRIMARY KEY (order_id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{out}', 'properties.bootstrap.servers' = '{bs}',
  'key.format' = 'json', 'value.format' = 'json');
INSERT INTO enriched
SELECT o.order_id, o.qty, i.name FROM orders AS o
JOIN items AS i ON o.merchant_id = i.merchant_id AND o.item_id = i.item_id;
"""


def history(rng: random.Random, keys, make, n: int) -> tuple[list[dict], dict]:
    return debezium_history(rng, keys, make, n, deletes=0.2)


def test_delta_join_into_order_keyed_sink(broker, new_topic, tmp_path):
    rng = random.Random(4)
    pairs = [(m, i) for m in range(3) for i in range(4)]
    items, live_items = history(rng, pairs, lambda k: {"merchant_id": k[0], "item_id": k[1],
                                "name": f"n{rng.randrange(100)}"}, 80)  # fmt: skip

    def order(oid):
        m, i = rng.choice(pairs)
        return {"order_id": oid, "merchant_id": m, "item_id": i, "qty": rng.randrange(9)}

    orders, live_orders = history(rng, list(range(40)), order, 300)
    names = {k: v["name"] for k, v in live_items.items()}
    expected = {
        json.dumps({"order_id": o["order_id"]}, separators=(",", ":")): {
            "order_id": o["order_id"], "qty": o["qty"], "name": names[(o["merchant_id"], o["item_id"])]
        }
        for o in live_orders.values()
        if (o["merchant_id"], o["item_id"]) in names
    }  # fmt: skip
    t_orders, t_items, t_out = new_topic("o"), new_topic("i"), new_topic("e")
    ensure_topics(broker, [t_orders, t_items, t_out])
    producer = Producer({"bootstrap.servers": broker})
    # interleave the two histories so changes on both sides meet live rows
    for n in range(max(len(orders), len(items))):
        for topic, events in ((t_orders, orders), (t_items, items)):
            if n < len(events):
                producer.produce(topic, json.dumps(events[n]).encode())
    producer.flush(10)
    planned = plan_job(JOB.format(orders=t_orders, items=t_items, out=t_out, bs=broker))
    text = planned.explain()
    assert "DeltaJoin" in text and "upsertMaterialize=[true]" not in text
    Job(planned.plan, JobOptions(state_dir=tmp_path / "s", bootstrap=broker)).run()
    assert fold_upsert_topic(broker, t_out) == expected
