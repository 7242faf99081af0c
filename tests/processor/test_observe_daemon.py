"""A daemon an operator can watch: `deltaflow run` on an unbounded source, on the real broker.

- the metrics endpoint reports the lag of every source partition (the high watermark
  of the last fetch response minus the job's position): it rises while records arrive
  faster than the job handles them and falls to 0 once it has caught up; the state of
  the job's one aggregate is reported under its operator's name;
- with stderr redirected to a file, the job writes a progress line every
  'deltaflow.progress.interval' (events/s, lag, checkpoint age);
- during a broker outage librdkafka's log lines are rate-limited: one per state, then
  a count of the lines left out.

The job is slowed down by a Python function that sleeps 4 ms a row (at most 250 rows
a second), and records are produced at about 1,000 a second.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import Producer
from metrics_text import parse, sample, scrape

from deltaflow.connectors.broker import EmbeddedBroker, ensure_topics, free_port

JOB = """
SET 'execution.checkpointing.interval' = '200 ms';
SET 'deltaflow.progress.interval' = '1 s';
CREATE TEMPORARY FUNCTION slow AS 'observe_udfs.slow' LANGUAGE PYTHON;
CREATE TABLE src (id INT, v INT) WITH ('connector' = 'kafka', 'topic' = '{src}',
  'properties.bootstrap.servers' = '{bootstrap}', 'scan.startup.mode' = 'earliest-offset',
  'format' = 'json');
CREATE TABLE out (k INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT k, COUNT(*) FROM (SELECT MOD(slow(v), 7) AS k FROM src) GROUP BY k;
"""
UDFS = """
import time

def slow(v):
    time.sleep(0.004)
    return v

slow.result_type = "INT"
"""
RECORDS = 1000
PROGRESS = re.compile(
    r"^deltaflow: progress: ([\d,]+) events/s in, ([\d,]+) out; lag ([\d,]+) records "
    r"\(src [\d,]+\); last checkpoint [\d.]+ s ago \(epoch \d+, took \d+ ms\)$"
)


def start(tmp_path: Path, bootstrap: str, src: str, port: int, *extra: str):
    (tmp_path / "observe_udfs.py").write_text(UDFS)
    job = tmp_path / "job.sql"
    job.write_text(JOB.format(src=src, bootstrap=bootstrap))
    stderr = (tmp_path / "stderr.txt").open("w")
    cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job),
           "--state-dir", str(tmp_path / "state"), "--metrics-port", str(port), *extra]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    return subprocess.Popen(cmd, stderr=stderr, env=env), tmp_path / "stderr.txt"


def wait_checkpointed(proc: subprocess.Popen, port: int, log: Path) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            families = parse(scrape(port))
        except OSError:  # not listening yet
            families = {}
        if families and sample(families, "deltaflow_checkpoints_total") >= 1:
            return families
        time.sleep(0.1)
    raise AssertionError("the job never checkpointed: " + log.read_text())


def produce(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, json.dumps({"id": i, "v": i}).encode())
        if i % 50 == 49:
            producer.poll(0)
            time.sleep(0.05)
    assert producer.flush(10) == 0


def stop(proc: subprocess.Popen, log: Path) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0, log.read_text()


def test_lag_rises_and_falls_and_the_log_gets_a_progress_line(broker, new_topic, tmp_path):
    src = new_topic("observe")
    ensure_topics(broker, [src])
    port = free_port()
    proc, log = start(tmp_path, broker, src, port)
    try:
        families = wait_checkpointed(proc, port, log)
        lag = {"table": "src", "topic": src, "partition": 0}
        assert sample(families, "deltaflow_source_lag_records", **lag) == 0  # empty topic
        feeder = threading.Thread(target=produce, args=(broker, src))
        feeder.start()
        seen, deadline = [], time.monotonic() + 60
        while time.monotonic() < deadline:
            families = parse(scrape(port))
            seen.append(sample(families, "deltaflow_source_lag_records", **lag))
            done = sample(families, "deltaflow_events_in_total", table="src") == RECORDS
            if done and seen[-1] == 0:
                break
            time.sleep(0.1)
        feeder.join()
        time.sleep(2.5)  # a progress line of an idle second, after the job caught up
    finally:
        stop(proc, log)
    peak = max(seen)
    assert seen[-1] == 0, seen  # caught up: every record read
    assert 100 <= peak <= RECORDS, seen  # records waited while the job was slower
    assert seen.index(peak) < len(seen) - 1, seen
    state = families["deltaflow_state_bytes"]["samples"]
    assert [labels["operator"] for _, labels, size in state if size > 0] == ["GroupAggregate"]
    lines = [x for x in log.read_text().splitlines() if x.startswith("deltaflow: progress:")]
    assert len(lines) >= 3, log.read_text()
    matches = [PROGRESS.match(x) for x in lines]
    assert all(matches), lines
    rates = [int(m.group(1).replace(",", "")) for m in matches]
    lags = [int(m.group(3).replace(",", "")) for m in matches]
    assert max(rates) > 50 and max(lags) > 0, lines  # a line while the job was busy
    assert lags[-1] == 0 and rates[-1] == 0, lines  # and one once it was idle again


def test_a_broker_outage_logs_one_line_per_state_then_a_count(new_topic, tmp_path):
    own = EmbeddedBroker(port=0).start()  # this test stops it
    try:
        src = new_topic("outage")
        ensure_topics(own.bootstrap, [src])
        port = free_port()
        proc, log = start(tmp_path, own.bootstrap, src, port, "--quiet")
        wait_checkpointed(proc, port, log)
        own.stop()
        time.sleep(5)  # librdkafka logs each failed reconnect: dozens of lines a second
        stop(proc, log)
    finally:
        own.stop()
    text = log.read_text()
    assert not [x for x in text.splitlines() if x.startswith("%")], text  # none unlimited
    lines = [x for x in text.splitlines() if x.startswith("deltaflow: librdkafka: ")]
    counts = [re.match(r"deltaflow: librdkafka: (\d+) more line\(s\) like ", x) for x in lines]
    left_out = sum(int(m.group(1)) for m in counts if m)
    printed = [x for x, m in zip(lines, counts, strict=True) if not m]
    assert 1 <= len(printed) <= 2, text  # one line per state
    # the repeats were counted, not printed (how many librdkafka reports in the 5 s varies:
    # it backs off its reconnects and suppresses identical errors itself)
    assert left_out >= 1, text
    assert "cannot reach the Kafka brokers at" in text  # the job's own line
