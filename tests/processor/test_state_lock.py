"""One job process per state directory: the lock `deltaflow run` holds for its life.

Without it a second process on the same directory restored the same checkpoint and
wrote the same changes again (at-least-once) or fenced the healthy job (exactly-once).
Each test runs real job processes on the real broker.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from deltaflow.connectors.broker import ensure_topics
from deltaflow.state.lock import LOCK_FILE, holder

JOB = """
SET 'execution.checkpointing.interval' = '200 ms';
CREATE TABLE orders (id INT, merchant INT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset',{bounded} 'format' = 'debezium-json');
CREATE TABLE totals (merchant INT, cnt BIGINT, PRIMARY KEY (merchant) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{dst}', 'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'json', 'value.format' = 'json');
INSERT INTO totals SELECT merchant, COUNT(*) FROM orders GROUP BY merchant;
"""
CMD = [sys.executable, "-m", "deltaflow.processor"]


@pytest.fixture
def job(broker, new_topic, tmp_path):
    """The job file of an unbounded job (it runs until stopped) over a topic of 3 orders."""
    src, dst = new_topic("orders"), new_topic("totals")
    ensure_topics(broker, [src, dst])
    producer = Producer({"bootstrap.servers": broker})
    for oid in (1, 2, 3):
        after = {"id": oid, "merchant": oid % 2}
        producer.produce(src, json.dumps({"before": None, "after": after, "op": "c"}).encode())
    producer.flush(10)
    path = tmp_path / "job.sql"
    path.write_text(JOB.format(src=src, dst=dst, bootstrap=broker, bounded=""))
    bounded = tmp_path / "bounded.sql"
    bounded.write_text(
        JOB.format(
            src=src, dst=dst, bootstrap=broker, bounded=" 'scan.bounded.mode' = 'latest-offset',"
        )
    )
    return path, bounded


def start(job: Path, state: Path, log: Path) -> subprocess.Popen:
    with open(log, "w") as err:  # a file: a pipe nobody reads could fill and block the job
        return subprocess.Popen(
            [*CMD, "run", str(job), "--state-dir", str(state), "--quiet"], stderr=err
        )


def held_by(state: Path, pid: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while holder(state) != pid:
        assert time.monotonic() < deadline, f"process {pid} never took the lock of {state}"
        time.sleep(0.1)


def inspect(state: Path) -> str:
    done = subprocess.run([*CMD, "state", "inspect", "--state-dir", str(state)],
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_second_process_on_the_directory_stops_at_once_naming_the_first(job, tmp_path):
    state = tmp_path / "state"
    first = start(job[0], state, tmp_path / "first.log")
    try:
        held_by(state, first.pid)
        began = time.monotonic()
        second = subprocess.run([*CMD, "run", str(job[0]), "--state-dir", str(state), "--quiet"],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        assert second.returncode == 2, second.stderr
        assert time.monotonic() - began < 15  # at once: no checkpoint restored, nothing read
        assert "Traceback" not in second.stderr
        assert f"state directory {state} is in use by process {first.pid}" in second.stderr
        assert first.poll() is None  # the healthy job runs on
        assert f"in use: yes, by the job running as process {first.pid}" in inspect(state)
        first.send_signal(signal.SIGTERM)
        assert first.wait(30) == 0
        assert "in use: no" in inspect(state)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(10)


def test_a_killed_job_leaves_no_lock_behind(job, tmp_path):
    state = tmp_path / "state"
    first = start(job[0], state, tmp_path / "first.log")
    held_by(state, first.pid)
    first.kill()
    first.wait(10)
    assert (state / LOCK_FILE).read_text().strip() == str(first.pid)  # the file stays...
    again = subprocess.run([*CMD, "run", str(job[1]), "--state-dir", str(state), "--quiet"],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert again.returncode == 0, again.stderr  # ...and holds nothing
    assert "in use: no" in inspect(state)


def test_a_lock_file_naming_a_dead_process_does_not_block(job, tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / LOCK_FILE).write_text("4194303\n")  # a PID above Linux's maximum: no such process
    done = subprocess.run([*CMD, "run", str(job[1]), "--state-dir", str(state), "--quiet"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
