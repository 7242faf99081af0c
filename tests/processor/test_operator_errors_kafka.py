"""What `deltaflow run` tells an operator about the Kafka side, on the real broker.

Brokers that are not there and brokers that refuse the client's credentials are told
apart and named by address; dead letters are never written without a word; a
transactional producer fenced by another job with the same prefix says so, instead
of librdkafka's "Local: Fatal error" (or a traceback).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Producer
from tests_support import wait_ready

from deltaflow.connectors.broker import ensure_topics, free_port

CMD = [sys.executable, "-m", "deltaflow.processor", "run"]
JOB = """
SET 'execution.checkpointing.interval' = '200 ms';
CREATE TABLE orders (id INT, merchant INT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset',{bounded}
  'format' = 'debezium-json'{extra});
CREATE TABLE totals (merchant INT, cnt BIGINT, PRIMARY KEY (merchant) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{dst}', 'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'json', 'value.format' = 'json'{sink});
INSERT INTO totals SELECT merchant, COUNT(*) FROM orders GROUP BY merchant;
"""
BOUNDED = " 'scan.bounded.mode' = 'latest-offset',"
TABLE = "table 'default_catalog.default_database.orders'"


def job_file(tmp_path: Path, name: str, **fields) -> Path:
    values = {"bounded": BOUNDED, "extra": "", "sink": "", "src": "o", "dst": "t"}
    values.update(fields)
    path = tmp_path / name
    path.write_text(JOB.format(**values))
    return path


def run(job: Path, state: Path) -> subprocess.CompletedProcess:
    cmd = [*CMD, str(job), "--state-dir", str(state), "--quiet"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("deltaflow: error")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def produce(bootstrap: str, topic: str, ids, poison_at: int | None = None) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, oid in enumerate(ids):
        if i == poison_at:
            producer.produce(topic, b'{"before": null, "after": {"id": ')  # cut-off JSON
        after = {"id": oid, "merchant": oid % 2}
        producer.produce(topic, json.dumps({"before": None, "after": after, "op": "c"}).encode())
    producer.flush(10)


def test_brokers_that_are_not_there_are_named(tmp_path):
    servers = f"127.0.0.1:{free_port()}"  # nothing listens there
    line = error_line(run(job_file(tmp_path, "job.sql", bootstrap=servers), tmp_path / "s"))
    assert f"{TABLE}: cannot reach the Kafka brokers at {servers}" in line
    assert "check 'properties.bootstrap.servers'" in line


def test_brokers_refusing_the_authentication_are_told_apart(broker, new_topic, tmp_path):
    secret = "hunter2-do-not-print"
    sasl = (
        ",\n  'properties.security.protocol' = 'SASL_PLAINTEXT', 'properties.sasl.mechanism' = "
        f"'PLAIN', 'properties.sasl.username' = 'alice', 'properties.sasl.password' = '{secret}'"
    )  # the embedded broker speaks no SASL: its answer to the handshake refuses the client
    job = job_file(tmp_path, "job.sql", bootstrap=broker, src=new_topic("o"), extra=sasl)
    done = run(job, tmp_path / "s")
    line = error_line(done)
    assert f"{TABLE}: the Kafka brokers at {broker} refused the authentication (" in line
    assert "cannot reach" not in line
    assert "'properties.sasl.*'" in line
    assert secret not in done.stderr and secret not in done.stdout


def test_dead_letters_are_reported_with_their_count_and_topic(broker, new_topic, tmp_path):
    src, dst, dlq = new_topic("orders"), new_topic("totals"), new_topic("dlq")
    ensure_topics(broker, [src, dst, dlq])
    produce(broker, src, [1, 2, 3], poison_at=2)  # offsets 0, 1 good, 2 poison, 3 good
    extra = f",\n  'deadletter.topic' = '{dlq}'"
    job = job_file(tmp_path, "job.sql", bootstrap=broker, src=src, dst=dst, extra=extra)
    done = run(job, tmp_path / "s")
    assert done.returncode == 0, done.stderr
    reports = [line for line in done.stderr.splitlines() if "dead-letter topic" in line]
    assert len(reports) == 1, done.stderr
    assert reports[0].startswith(
        f"deltaflow: {TABLE}: 1 unreadable record(s) sent to dead-letter topic '{dlq}' "
        f"(1 so far); the first: topic '{src}' partition 0 offset 2: "
    )


def test_a_job_fenced_by_another_with_its_prefix_says_so(broker, new_topic, tmp_path):
    src, dst, prefix = new_topic("orders"), new_topic("totals"), new_topic("shared")
    ensure_topics(broker, [src, dst])
    produce(broker, src, [1, 2])
    sink = (
        ",\n  'sink.delivery-guarantee' = 'exactly-once', "
        f"'sink.transactional-id-prefix' = '{prefix}'"
    )
    job = job_file(tmp_path, "job.sql", bootstrap=broker, src=src, dst=dst, bounded="", sink=sink)
    procs = []
    try:
        for name in ("first", "second"):  # two jobs: each its own state directory, one prefix
            with open(tmp_path / f"{name}.log", "w") as log:
                proc = subprocess.Popen([*CMD, str(job), "--state-dir", str(tmp_path / name),
                                         "--quiet"], stderr=log)  # fmt: skip
            procs.append(proc)
            # ready: its init_transactions ran, so the second one has fenced the first
            wait_ready(proc, tmp_path / f"{name}.log")
        produce(broker, src, [3, 4])  # the first one's next transaction meets the fence
        first, second = procs
        assert first.wait(60) == 2
        text = (tmp_path / "first.log").read_text()
        assert "Traceback" not in text
        lines = [line for line in text.splitlines() if line.startswith("deltaflow: error")]
        assert len(lines) == 1, text
        assert f"another producer with the same transactional id '{prefix}-0' started" in lines[0]
        assert f"'sink.transactional-id-prefix' = '{prefix}': give each job a prefix" in lines[0]
        assert second.poll() is None  # the job that fenced it runs on
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def test_a_boolean_table_option_with_another_value_is_refused(broker, new_topic, tmp_path):
    extra = ",\n  'properties.group.id' = 'g', 'properties.commit.offsets.on.checkpoint' = 'ture'"
    job = job_file(tmp_path, "job.sql", bootstrap=broker, src=new_topic("o"), extra=extra)
    line = error_line(run(job, tmp_path / "s"))
    assert (
        f"{TABLE}: option 'properties.commit.offsets.on.checkpoint' = 'ture' must be 'true' or "
        "'false'" in line
    )
