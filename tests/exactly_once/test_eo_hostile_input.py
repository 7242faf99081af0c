"""`deltaflow run` meeting bad input, a foreign state directory and secrets in its options.

Decoding rules per format are tested in tests/formats and tests/connectors; here the
whole job is run as a user runs it, and what the user sees is checked: the exit
status, one clear line (topic, partition, offset) and never a traceback.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer

from deltaflow.connectors.broker import ensure_topics

JOB = """
CREATE TABLE orders (id INT, merchant INT, amount INT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json'{extra});
CREATE TABLE totals (merchant INT, cnt BIGINT, PRIMARY KEY (merchant) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{dst}', 'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'json', 'value.format' = 'json');
INSERT INTO totals SELECT merchant, {agg} FROM orders GROUP BY merchant;
"""
GOOD = [
    {"before": None, "after": {"id": 1, "merchant": 7, "amount": 10}, "op": "c"},
    {"before": None, "after": {"id": 2, "merchant": 7, "amount": 20}, "op": "c"},
]
POISON = b'{"before": null, "after": {"id": 3, "merchant": '  # cut-off JSON
LATE = {"before": None, "after": {"id": 4, "merchant": 8, "amount": 5}, "op": "c"}


def run(job: Path, state: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--state-dir", str(state)]
    return subprocess.run([*cmd, "--quiet"], capture_output=True, text=True, timeout=timeout)


def write(tmp_path: Path, name: str, agg: str = "COUNT(*)", extra: str = "", **names) -> Path:
    path = tmp_path / name
    path.write_text(JOB.format(agg=agg, extra=extra, **names))
    return path


@pytest.fixture
def poisoned(broker, new_topic):
    """A source topic: two good events, a cut-off JSON message at offset 2, one more good one."""
    src, dst, dlq = new_topic("orders"), new_topic("totals"), new_topic("dlq")
    ensure_topics(broker, [src, dst, dlq])
    producer = Producer({"bootstrap.servers": broker})
    for event in GOOD:
        producer.produce(src, json.dumps(event).encode())
    producer.produce(src, POISON, b"k3")
    producer.produce(src, json.dumps(LATE).encode())
    producer.flush(10)
    return {"src": src, "dst": dst, "dlq": dlq, "bootstrap": broker}


def test_a_poison_message_stops_the_job_with_one_line_naming_its_offset(poisoned, tmp_path):
    names = {k: poisoned[k] for k in ("src", "dst", "bootstrap")}
    done = run(write(tmp_path, "fail.sql", **names), tmp_path / "state")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("deltaflow: error")]
    assert len(lines) == 1
    assert f"topic '{poisoned['src']}' partition 0 offset 2" in lines[0]
    # the restart meets the same message again: the checkpoint never passed it
    again = run(write(tmp_path, "fail.sql", **names), tmp_path / "state")
    assert again.returncode == 2 and "offset 2" in again.stderr


def test_skip_counts_the_poison_message_and_continues(poisoned, tmp_path):
    from eo_harness import committed_records

    names = {k: poisoned[k] for k in ("src", "dst", "bootstrap")}
    extra = ",\n  'debezium-json.ignore-parse-errors' = 'true'"
    done = run(write(tmp_path, "skip.sql", extra=extra, **names), tmp_path / "state")
    assert done.returncode == 0, done.stderr
    assert "orders': 1 unreadable record(s) skipped" in done.stderr
    table = {}
    for _, key, value, _ in committed_records(poisoned["bootstrap"], poisoned["dst"]):
        table[json.loads(key)["merchant"]] = json.loads(value)["cnt"]
    assert table == {7: 2, 8: 1}


def test_dead_letter_topic_receives_the_raw_poison_message(poisoned, tmp_path):
    from eo_harness import committed_records

    names = {k: poisoned[k] for k in ("src", "dst", "bootstrap")}
    extra = f",\n  'deadletter.topic' = '{poisoned['dlq']}'"
    done = run(write(tmp_path, "dlq.sql", extra=extra, **names), tmp_path / "state")
    assert done.returncode == 0, done.stderr
    letters = committed_records(poisoned["bootstrap"], poisoned["dlq"])
    assert [(key, value) for _, key, value, _ in letters] == [(b"k3", POISON)]
    headers = dict(letters[0][3])
    assert headers["deltaflow.topic"] == poisoned["src"].encode()
    assert headers["deltaflow.offset"] == b"2"


def test_a_state_directory_of_a_changed_job_is_refused(poisoned, tmp_path):
    names = {k: poisoned[k] for k in ("src", "dst", "bootstrap")}
    extra = ",\n  'debezium-json.ignore-parse-errors' = 'true'"
    first = run(write(tmp_path, "job.sql", extra=extra, **names), tmp_path / "state")
    assert first.returncode == 0, first.stderr
    changed = write(tmp_path, "job.sql", agg="SUM(amount)", extra=extra, **names)
    second = run(changed, tmp_path / "state")
    assert second.returncode == 2
    assert "belongs to a different job or plan" in second.stderr
    assert "Traceback" not in second.stderr
    mode = stat.S_IMODE((tmp_path / "state").stat().st_mode)
    assert mode == 0o700  # the state directory is the owner's only


def test_a_sasl_password_never_appears_in_the_output(tmp_path, new_topic):
    secret = "hunter2-do-not-print"
    props = (
        ",\n  'properties.security.protocol' = 'SASL_PLAINTEXT',"
        "\n  'properties.sasl.mechanism' = 'PLAIN', 'properties.sasl.username' = 'alice',"
        f"\n  'properties.sasl.password' = '{secret}'"
    )
    names = {"src": new_topic("orders"), "dst": new_topic("totals"), "bootstrap": "127.0.0.1:1"}
    done = run(write(tmp_path, "sasl.sql", extra=props, **names), tmp_path / "state", timeout=90)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "127.0.0.1:1" in done.stderr or "brokers" in done.stderr
    assert secret not in done.stderr and secret not in done.stdout


def produce_raw(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value)
    producer.flush(10)


def test_an_unknown_op_code_stops_the_job_at_its_offset(broker, new_topic, tmp_path):
    names = {"src": new_topic("orders"), "dst": new_topic("totals"), "bootstrap": broker}
    ensure_topics(broker, [names["src"], names["dst"]])
    bad = {"before": None, "after": {"id": 5, "merchant": 1, "amount": 1}, "op": "x"}
    produce_raw(broker, names["src"], [json.dumps(GOOD[0]).encode(), json.dumps(bad).encode()])
    done = run(write(tmp_path, "op.sql", **names), tmp_path / "state")
    assert done.returncode == 2
    assert f"topic '{names['src']}' partition 0 offset 1" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_delete_of_a_row_never_seen_is_ignored_by_an_empty_group_as_in_flink(
    broker, new_topic, tmp_path
):
    """Flink's GroupAggregate drops a retraction for a group that has no state (it never
    creates an accumulator for one); deltaflow does the same (docs/GUARANTEES.md)."""
    from eo_harness import committed_records

    names = {"src": new_topic("orders"), "dst": new_topic("totals"), "bootstrap": broker}
    ensure_topics(broker, [names["src"], names["dst"]])
    ghost = {"before": {"id": 99, "merchant": 9, "amount": 5}, "after": None, "op": "d"}
    events = [ghost, *GOOD]
    produce_raw(broker, names["src"], [json.dumps(e).encode() for e in events])
    done = run(write(tmp_path, "ghost.sql", **names), tmp_path / "state")
    assert done.returncode == 0, done.stderr
    table = {}
    for _, key, value, _ in committed_records(broker, names["dst"]):
        table[json.loads(key)["merchant"]] = None if value is None else json.loads(value)["cnt"]
    assert table == {7: 2}


def test_a_full_disk_stops_the_job_and_the_last_checkpoint_resumes(poisoned, tmp_path):
    """The state directory may not grow past 64 KiB (RLIMIT_FSIZE, as a full disk): the
    job stops with the state layer's message; without the limit it resumes and ends right."""
    import resource
    import signal as sig

    from eo_harness import committed_records

    names = {k: poisoned[k] for k in ("src", "dst", "bootstrap")}
    many = [
        {"before": None, "after": {"id": 100 + i, "merchant": i, "amount": 1}, "op": "c"}
        for i in range(3000)
    ]
    produce_raw(poisoned["bootstrap"], poisoned["src"], [json.dumps(e).encode() for e in many])
    extra = ",\n  'debezium-json.ignore-parse-errors' = 'true'"
    job = write(tmp_path, "disk.sql", extra=extra, **names)

    def small_disk() -> None:
        sig.signal(sig.SIGXFSZ, sig.SIG_IGN)  # a short write, not a signal, as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--quiet"]
    full = subprocess.run(
        [*cmd, "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=120, preexec_fn=small_disk,
    )  # fmt: skip
    assert full.returncode == 2, full.stderr
    assert "disk is full or failing" in full.stderr and "Traceback" not in full.stderr
    resumed = run(job, tmp_path / "state")
    assert resumed.returncode == 0, resumed.stderr
    table = {}
    for _, key, value, _ in committed_records(poisoned["bootstrap"], poisoned["dst"]):
        table[json.loads(key)["merchant"]] = json.loads(value)["cnt"]
    expected = {i: 1 for i in range(3000)}
    expected[7] += 2
    expected[8] += 1
    assert table == expected
