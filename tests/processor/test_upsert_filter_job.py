"""A filter on a non-key column into an upsert-kafka sink: a row that stops matching is deleted.

The Calc keeps -U (Flink plans it [I,UB,UA,D]); the update PAID -> SHIPPED leaves
only its -U after the filter, and the upsert sink must write it as a tombstone, as
Flink's upsert-kafka serialiser does, or order 1 would stay in the table forever.
"""

from __future__ import annotations

import json

from confluent_kafka import Producer
from tests_support import fold_upsert_topic

from deltaflow.connectors.broker import ensure_topics
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

JOB = """
CREATE TABLE orders (id INT, status STRING, PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{bs}',
      'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
      'format' = 'debezium-json');
CREATE TABLE paid (id INT, status STRING, PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{dst}', 'properties.bootstrap.servers' = '{bs}',
      'key.format' = 'json', 'value.format' = 'json');
INSERT INTO paid SELECT id, status FROM orders WHERE status = 'PAID';
"""


def test_an_order_leaving_the_filter_is_deleted_from_the_upsert_table(broker, new_topic, tmp_path):
    src, dst = new_topic("orders"), new_topic("paid")
    ensure_topics(broker, [src, dst])
    producer = Producer({"bootstrap.servers": broker})
    for event in [
        {"op": "c", "before": None, "after": {"id": 1, "status": "PAID"}},
        {"op": "c", "before": None, "after": {"id": 2, "status": "NEW"}},
        {"op": "u", "before": {"id": 1, "status": "PAID"}, "after": {"id": 1, "status": "SHIPPED"}},
        {"op": "u", "before": {"id": 2, "status": "NEW"}, "after": {"id": 2, "status": "PAID"}},
    ]:
        producer.produce(src, json.dumps(event).encode())
    producer.flush(10)
    planned = plan_job(JOB.format(src=src, dst=dst, bs=broker))
    Job(planned.plan, JobOptions(state_dir=tmp_path / "s", bootstrap=broker)).run()
    assert fold_upsert_topic(broker, dst) == {'{"id":2}': {"id": 2, "status": "PAID"}}
