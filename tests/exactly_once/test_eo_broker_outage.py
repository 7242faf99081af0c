"""Brokers that go away: the job waits them out without loss, or stops after its timeout.

A proxy in front of the broker is cut (every connection closed, nothing listening)
for ``DELTAFLOW_OUTAGE_S`` seconds (default 30) while a job runs, with an
at-least-once and with an exactly-once sink: the job waits the outage out and
continues without loss (exactly-once: no count committed twice). The exactly-once
variant passed 11 of 11 runs at load 10-12 (two busy loops beside the tests);
a stall once seen in CI was not reproduced (docs/GUARANTEES.md).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from committed_log import committed_records
from confluent_kafka import Producer
from job_process import stderr_of

OUTAGE_S = float(os.environ.get("DELTAFLOW_OUTAGE_S", "30"))
AT_LEAST_ONCE = "'sink.delivery-guarantee' = 'at-least-once'"
EXACTLY_ONCE = (
    "'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'outage'"
)
JOB = """
SET 'execution.checkpointing.interval' = '200 ms';
SET 'deltaflow.broker.timeout' = '{timeout}';
CREATE TABLE orders (id INT, merchant INT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'debezium-json');
CREATE TABLE totals (merchant INT, cnt BIGINT, PRIMARY KEY (merchant) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'json', 'value.format' = 'json',
  {guarantee});
INSERT INTO totals SELECT merchant, COUNT(*) FROM orders GROUP BY merchant;
"""


def produce(bootstrap: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for oid in range(first, first + count):
        event = {"before": None, "after": {"id": oid, "merchant": oid % 3}, "op": "c"}
        producer.produce("orders", json.dumps(event).encode())
    assert producer.flush(30) == 0


def totals(bootstrap: str) -> dict[int, int]:
    return {merchant: counts[-1] for merchant, counts in history(bootstrap).items()}


def history(bootstrap: str) -> dict[int, list[int]]:
    """Every committed count of each merchant, in order."""
    counts: dict[int, list[int]] = {}
    for _, key, value, _ in committed_records(bootstrap, "totals"):
        counts.setdefault(json.loads(key)["merchant"], []).append(json.loads(value)["cnt"])
    return counts


def wait_for(bootstrap: str, expected: dict, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (got := totals(bootstrap)) != expected:
        time.sleep(0.3)
    return got


def start(jobs, tmp_path, bootstrap: str, timeout: str, guarantee: str) -> subprocess.Popen:
    job = tmp_path / "outage.sql"
    job.write_text(JOB.format(bootstrap=bootstrap, timeout=timeout, guarantee=guarantee))
    return jobs.start(job, tmp_path / "state")


@pytest.mark.parametrize("guarantee", [AT_LEAST_ONCE, EXACTLY_ONCE], ids=["alo", "eo"])
def test_an_outage_is_reported_once_and_waited_out_without_loss(proxied, tmp_path, jobs, guarantee):
    bootstrap, proxy = proxied
    proc = start(jobs, tmp_path, bootstrap, "120 s", guarantee)
    produce(bootstrap, 0, 300)
    assert wait_for(bootstrap, {0: 100, 1: 100, 2: 100}) == {0: 100, 1: 100, 2: 100}
    produce(bootstrap, 300, 3000)  # the job is still busy with these when the cut comes
    time.sleep(0.1)
    proxy.cut()
    time.sleep(OUTAGE_S)
    assert proc.poll() is None  # still waiting
    proxy.restore()
    produce(bootstrap, 3300, 300)
    expected = {0: 1200, 1: 1200, 2: 1200}
    assert wait_for(bootstrap, expected) == expected, stderr_of(proc)[-4000:]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    ours = [line for line in stderr_of(proc).splitlines() if line.startswith("deltaflow:")]
    assert len([line for line in ours if "cannot reach the Kafka brokers" in line]) == 1, ours
    assert len([line for line in ours if "reachable again" in line]) == 1, ours
    if guarantee == EXACTLY_ONCE:  # no epoch committed twice: each count appears once
        for merchant, counts in history(bootstrap).items():
            assert counts == sorted(set(counts)), (merchant, counts)


@pytest.mark.parametrize("guarantee", [AT_LEAST_ONCE, EXACTLY_ONCE], ids=["alo", "eo"])
def test_brokers_that_never_return_stop_the_job_after_its_timeout(
    proxied, tmp_path, jobs, guarantee
):
    bootstrap, proxy = proxied
    proc = start(jobs, tmp_path, bootstrap, "4 s", guarantee)
    produce(bootstrap, 0, 30)
    assert wait_for(bootstrap, {0: 10, 1: 10, 2: 10}) == {0: 10, 1: 10, 2: 10}
    proxy.cut()
    began = time.monotonic()
    code = proc.wait(60)
    stderr = stderr_of(proc)
    assert code == 2, stderr
    assert time.monotonic() - began < 30
    # the broker watch says it ("unreachable for"), or with exactly-once the wait inside a
    # checkpoint may end first ("could not ... within")
    (line,) = [x for x in stderr.splitlines() if x.startswith("deltaflow: error")]
    assert "unreachable for" in line or "could not" in line, line
    assert "'deltaflow.broker.timeout' = 4 s" in line and "last checkpoint is intact" in line
    assert "Traceback" not in stderr
