"""Deletes and updates of primary keys never seen ('deltaflow.unknown-key-delete'), counted
on the metrics endpoint per table with what was done with them.

The topic holds +I order 1 (merchant 7), a delete of order 2 that was never inserted,
and +I order 3: one record retracts an unknown key. Flink passes it on ('count'); with
'policy' and the format's ignore-parse-errors it is skipped. Either way it is counted.
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from confluent_kafka import Producer

from deltaflow.connectors.broker import ensure_topics, free_port
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.metrics import serve_metrics
from deltaflow.processor.planner.api import plan_job

JOB = """
SET 'deltaflow.unknown-key-delete' = '{mode}';
CREATE TABLE orders (id INT, merchant INT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{bs}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json', 'debezium-json.ignore-parse-errors' = 'true'{extra});
CREATE TABLE totals (merchant INT, cnt BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO totals SELECT merchant, COUNT(*) FROM orders GROUP BY merchant;
"""
EVENTS = [
    {"before": None, "after": {"id": 1, "merchant": 7}, "op": "c"},
    {"before": {"id": 2, "merchant": 7}, "after": None, "op": "d"},
    {"before": None, "after": {"id": 3, "merchant": 7}, "op": "c"},
]
TABLE = "orders"


MESSAGE = ", 'debezium-json.before-image' = 'message'"


def scrape_after_run(broker: str, src: str, mode: str, state, extra: str = MESSAGE) -> set[str]:
    job = Job(
        plan_job(JOB.format(src=src, bs=broker, mode=mode, extra=extra)).plan,
        JobOptions(state_dir=state, bootstrap=broker),
    )
    port = free_port()
    server = serve_metrics(job, port)
    try:
        job.run()
        url = f"http://127.0.0.1:{port}/metrics"
        return set(urllib.request.urlopen(url, timeout=5).read().decode().splitlines())
    finally:
        server.shutdown()


@pytest.fixture
def orders(broker, new_topic) -> str:
    src = new_topic("unknown-keys")
    ensure_topics(broker, [src])
    producer = Producer({"bootstrap.servers": broker})
    for event in EVENTS:
        key = b"%d" % (event["after"] or event["before"])["id"]
        producer.produce(src, json.dumps(event).encode(), key)
    assert producer.flush(10) == 0
    return src


@pytest.mark.parametrize(("mode", "policy"), [("count", "pass"), ("policy", "skip")])
def test_unknown_key_deletes_are_counted_per_table_on_the_metrics_port(
    broker, orders, tmp_path, mode, policy
):
    lines = scrape_after_run(broker, orders, mode, tmp_path / "state")
    assert "# TYPE deltaflow_unknown_key_deletes_total counter" in lines
    expected = f'deltaflow_unknown_key_deletes_total{{table="{TABLE}",policy="{policy}"}} 1'
    assert expected in lines, sorted(lines)


def test_before_images_from_state_count_per_table_too(broker, orders, tmp_path):
    lines = scrape_after_run(broker, orders, "count", tmp_path / "state", extra="")
    expected = f'deltaflow_unknown_key_deletes_total{{table="{TABLE}",policy="normalized"}} 1'
    assert expected in lines, sorted(lines)


def test_without_the_check_no_table_is_counted(broker, orders, tmp_path):
    lines = scrape_after_run(broker, orders, "ignore", tmp_path / "state")
    assert not [x for x in lines if x.startswith("deltaflow_unknown_key_deletes_total{")]
