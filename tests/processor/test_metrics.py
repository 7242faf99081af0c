"""Prometheus metrics of a running job, scraped over HTTP."""

from __future__ import annotations

import json
import urllib.request

from confluent_kafka import Producer

from deltaflow.connectors.broker import ensure_topics, free_port
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.metrics import serve_metrics
from deltaflow.processor.planner.api import plan_job

JOB = """
CREATE TABLE src (id INT, v INT) WITH ('connector' = 'kafka', 'topic' = '{src}',
  'properties.bootstrap.servers' = '{bs}', 'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset', 'format' = 'json', 'json.ignore-parse-errors' = 'true');
CREATE TABLE out (id INT, v INT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT id, v FROM src WHERE v > 1;
"""


def test_metrics_count_events_in_out_skipped_and_checkpoints(broker, new_topic, tmp_path):
    src = new_topic("metrics")
    ensure_topics(broker, [src])
    producer = Producer({"bootstrap.servers": broker})
    for value in [{"id": 1, "v": 1}, {"id": 2, "v": 2}, "not json", {"id": 3, "v": 3}]:
        producer.produce(
            src, value.encode() if isinstance(value, str) else json.dumps(value).encode()
        )
    producer.flush(10)
    job = Job(
        plan_job(JOB.format(src=src, bs=broker)).plan,
        JobOptions(state_dir=tmp_path / "s", bootstrap=broker),
    )
    port = free_port()
    server = serve_metrics(job, port)
    try:
        job.run()
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        server.shutdown()
    lines = set(text.splitlines())
    assert 'deltaflow_events_in_total{source="default_catalog.default_database.src"} 3' in lines
    assert 'deltaflow_events_out_total{sink="default_catalog.default_database.out"} 2' in lines
    assert (
        'deltaflow_records_skipped_total{source="default_catalog.default_database.src"} 1' in lines
    )
    checkpoints = [ln for ln in lines if ln.startswith("deltaflow_checkpoints_total ")]
    assert checkpoints and int(checkpoints[0].split()[1]) >= 1
