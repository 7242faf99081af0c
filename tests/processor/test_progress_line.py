"""The progress line on a terminal shows the deletes of unknown primary keys once there
are any ('deltaflow.unknown-key-delete' = 'count' or 'policy'), and nothing about them
otherwise: the line stays short.

The topic holds +I order 1, a delete of order 2 (never inserted) and +I order 3: one
record retracts a key the job never saw.
"""

from __future__ import annotations

import io
import json
import threading
import time

import pytest
from confluent_kafka import Producer

from deltaflow.connectors.broker import ensure_topics
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.progress import Display

JOB = """
SET 'deltaflow.unknown-key-delete' = '{mode}';
CREATE TABLE orders (id INT, merchant INT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{bs}',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'debezium-json', 'debezium-json.ignore-parse-errors' = 'true');
CREATE TABLE totals (merchant INT, cnt BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO totals SELECT merchant, COUNT(*) FROM orders GROUP BY merchant;
"""
TABLE = "default_catalog.default_database.orders"


@pytest.fixture
def orders(broker, new_topic) -> str:
    src = new_topic("progress")
    ensure_topics(broker, [src])
    producer = Producer({"bootstrap.servers": broker})
    for event in (
        {"before": None, "after": {"id": 1, "merchant": 7}, "op": "c"},
        {"before": {"id": 2, "merchant": 7}, "after": None, "op": "d"},
        {"before": None, "after": {"id": 3, "merchant": 7}, "op": "c"},
    ):
        producer.produce(src, json.dumps(event).encode())
    assert producer.flush(10) == 0
    return src


def line_after_run(broker: str, src: str, mode: str, state) -> str:
    """The progress line a terminal shows once the running job has read the topic's
    three records (the job runs on a thread and is stopped afterwards)."""
    stop = threading.Event()
    job = Job(
        plan_job(JOB.format(src=src, bs=broker, mode=mode)).plan,
        JobOptions(state_dir=state, bootstrap=broker),
        stop=stop,
    )
    runner = threading.Thread(target=job.run)
    runner.start()
    try:
        deadline = time.monotonic() + 20
        while read(job) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        checkpoints = job.stats.checkpoints  # one more: the batch is through the loop
        while job.stats.checkpoints == checkpoints and time.monotonic() < deadline:
            time.sleep(0.05)
        stream = io.StringIO()
        Display(job, enabled=True, stream=stream).tick()
        return stream.getvalue()
    finally:
        stop.set()
        runner.join(30)


def read(job: Job) -> int:
    """Records the job's sources have read (offsets past their start)."""
    return sum(source.progress()[0] for source in list(job.inputs.sources.values()))


@pytest.mark.parametrize("mode", ["count", "policy"])
def test_the_progress_line_counts_unknown_key_deletes(broker, orders, tmp_path, mode):
    line = line_after_run(broker, orders, mode, tmp_path / "state")
    assert line.startswith(f"\r{TABLE} 3 | ")
    assert line.endswith(" | unknown-key deletes 1\x1b[K")


def test_without_the_check_the_progress_line_says_nothing_of_unknown_keys(broker, orders, tmp_path):
    line = line_after_run(broker, orders, "ignore", tmp_path / "state")
    assert line.startswith(f"\r{TABLE} 3 | ")
    assert "unknown" not in line
    assert line.endswith("\x1b[K") and " | checkpoints " in line
