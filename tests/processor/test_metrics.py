"""Prometheus metrics of a running job, scraped over HTTP."""

from __future__ import annotations

import json

from confluent_kafka import Producer
from metrics_text import parse, sample, scrape

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
        families = parse(scrape(port))
    finally:
        server.shutdown()
    assert sample(families, "deltaflow_events_in_total", table="src") == 3
    assert sample(families, "deltaflow_events_out_total", table="out") == 2
    assert sample(families, "deltaflow_records_skipped_total", table="src") == 1
    assert sample(families, "deltaflow_checkpoints_total") >= 1
    assert sample(families, "deltaflow_checkpoint_duration_seconds_count") == sample(
        families, "deltaflow_checkpoints_total"
    )
    # the bounded read ended at the end offset: nothing left of its 4 records
    assert (
        sample(families, "deltaflow_source_lag_records", table="src", topic=src, partition=0) == 0
    )
    assert 0 <= sample(families, "deltaflow_last_checkpoint_age_seconds") < 60
    assert sample(families, "deltaflow_last_checkpoint_epoch") == sample(
        families, "deltaflow_checkpoints_total"
    )
