"""A lookup join (FOR SYSTEM_TIME AS OF) run as a job on the real broker.

The looked-up table is read to its present end before the probe stream, so each
order sees the customers table as loaded: the update renamed customer 2, and
customer 3 was deleted, so the LEFT lookup join pads order 12 with NULL.
"""

from __future__ import annotations

import io
import json

from confluent_kafka import Producer

from deltaflow.connectors.broker import ensure_topics
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

JOB = """
CREATE TABLE orders (
  id INT, customer_id INT, amount DECIMAL(10, 2), proc AS PROCTIME()
) WITH ('connector' = 'kafka', 'topic' = '{orders}', 'properties.bootstrap.servers' = '{bs}',
        'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
        'format' = 'json');
CREATE TABLE customers (
  id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED
) WITH ('connector' = 'kafka', 'topic' = '{customers}', 'properties.bootstrap.servers' = '{bs}',
        'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
        'format' = 'debezium-json');
CREATE TABLE out (id INT, name STRING, amount DECIMAL(10, 2)) WITH ('connector' = 'print');
INSERT INTO out
SELECT o.id, c.name, o.amount
FROM orders AS o LEFT JOIN customers FOR SYSTEM_TIME AS OF o.proc AS c ON o.customer_id = c.id;
"""


def produce(bootstrap: str, topic: str, values: list[dict]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, json.dumps(value).encode())
    producer.flush(10)


def test_lookup_join_probes_the_loaded_dimension_table(broker, new_topic, tmp_path):
    orders, customers = new_topic("orders"), new_topic("customers")
    ensure_topics(broker, [orders, customers])
    produce(broker, customers, [
        {"op": "c", "before": None, "after": {"id": 1, "name": "Ann"}},
        {"op": "c", "before": None, "after": {"id": 2, "name": "Bob"}},
        {"op": "c", "before": None, "after": {"id": 3, "name": "Cid"}},
        {"op": "u", "before": {"id": 2, "name": "Bob"}, "after": {"id": 2, "name": "Bobby"}},
        {"op": "d", "before": {"id": 3, "name": "Cid"}, "after": None},
    ])  # fmt: skip
    produce(broker, orders, [
        {"id": 10, "customer_id": 1, "amount": 5.5},
        {"id": 11, "customer_id": 2, "amount": 7},
        {"id": 12, "customer_id": 3, "amount": 1.25},
    ])  # fmt: skip
    planned = plan_job(JOB.format(orders=orders, customers=customers, bs=broker))
    out = io.StringIO()
    Job(planned.plan, JobOptions(state_dir=tmp_path / "s", bootstrap=broker, out=out)).run()
    assert out.getvalue().splitlines() == [
        "+I[10, Ann, 5.50]",
        "+I[11, Bobby, 7.00]",
        "+I[12, null, 1.25]",
    ]
