"""Positions that are not what the checkpoint expects, on the real broker: a bounded job
run again, a topic deleted and recreated while the job was stopped or while it runs,
explicit start positions past the end or of no source, a topic of 20,000 single-record
batches. Each run is a `deltaflow run` process; its print sink's lines are the rows read.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from deltaflow.connectors.kafka_client import ensure_topics

JOB = """
CREATE TABLE src (v STRING) WITH (
  'connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'raw'{extra}
);
CREATE TABLE out (v STRING) WITH ('connector' = 'print');
INSERT INTO out SELECT v FROM src;
"""
BOUNDED = ",\n  'scan.bounded.mode' = 'latest-offset'"


def job_file(tmp_path: Path, broker: str, topic: str, extra: str = BOUNDED, name="job") -> Path:
    path = tmp_path / f"{name}.sql"
    path.write_text(JOB.format(topic=topic, bootstrap=broker, extra=extra))
    return path


def run(job: Path, state: Path, *extra: str, timeout: float = 120) -> tuple[int, list, str]:
    """A bounded run: (exit status, rows printed, stderr)."""
    cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--quiet"]
    done = subprocess.run([*cmd, "--state-dir", str(state), *extra], capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip
    rows = [line[3:-1] for line in done.stdout.splitlines() if line.startswith("+I[")]
    return done.returncode, rows, done.stderr


def produce(broker: str, topic: str, values: list[str], each: bool = False) -> None:
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value.encode(), partition=0)
        if each:
            producer.flush(10)
    assert producer.flush(10) == 0


def recreate(broker: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker})
    for future in admin.delete_topics([topic], operation_timeout=10).values():
        future.result(10)
    deadline = time.monotonic() + 10
    while topic in admin.list_topics(timeout=5).topics and time.monotonic() < deadline:
        time.sleep(0.1)
    ensure_topics(broker, [topic])


def test_a_bounded_job_run_again_reads_what_arrived_since(broker, new_topic, tmp_path):
    topic = new_topic("again")
    ensure_topics(broker, [topic])
    produce(broker, topic, [f"a{i}" for i in range(5)])
    job, state = job_file(tmp_path, broker, topic), tmp_path / "state"
    assert run(job, state)[:2] == (0, [f"a{i}" for i in range(5)])
    produce(broker, topic, [f"b{i}" for i in range(3)])
    assert run(job, state)[:2] == (0, ["b0", "b1", "b2"])
    assert run(job, state)[:2] == (0, [])


def test_a_recreated_topic_stops_the_job_unless_a_policy_is_chosen(broker, new_topic, tmp_path):
    topic = new_topic("recreated")
    ensure_topics(broker, [topic])
    produce(broker, topic, [f"old{i}" for i in range(20)])
    job, state = job_file(tmp_path, broker, topic), tmp_path / "state"
    assert run(job, state)[0] == 0  # checkpoint at offset 20
    recreate(broker, topic)
    produce(broker, topic, [f"new{i}" for i in range(5)])  # offsets 0 to 4
    code, rows, err = run(job, state)
    assert (code, rows) == (2, [])
    assert f"the checkpointed offset 20 of {topic}/0 belongs to a deleted topic: its topic id " \
           "was" in err and "the topic now holds offsets 0 to 4" in err  # fmt: skip
    assert "'scan.offset-out-of-range' = 'earliest'" in err and "Traceback" not in err
    policy = BOUNDED + ",\n  'scan.offset-out-of-range' = '{}'"
    earliest = job_file(tmp_path, broker, topic, policy.format("earliest"), "earliest")
    code, rows, err = run(earliest, state)
    assert (code, rows) == (0, [f"new{i}" for i in range(5)])
    assert "going on from offset 0 (0 offset(s) skipped)" in err


def test_a_topic_recreated_with_more_records_than_the_checkpoint_is_found(
    broker, new_topic, tmp_path
):
    """The checkpointed offset lies inside the new topic's range: only the topic id tells
    (without it 20 of the 50 new records would be skipped silently)."""
    topic = new_topic("regrown")
    ensure_topics(broker, [topic])
    produce(broker, topic, [f"old{i}" for i in range(20)])
    job, state = job_file(tmp_path, broker, topic), tmp_path / "state"
    assert run(job, state)[0] == 0
    recreate(broker, topic)
    produce(broker, topic, [f"new{i}" for i in range(50)])
    code, rows, err = run(job, state)
    assert (code, rows) == (2, [])
    assert f"the checkpointed offset 20 of {topic}/0 belongs to a deleted topic: its topic id " \
           "was" in err and "the topic now holds offsets 0 to 49" in err  # fmt: skip
    extra = BOUNDED + ",\n  'scan.offset-out-of-range' = 'earliest'"
    code, rows, err = run(job_file(tmp_path, broker, topic, extra, "earliest"), state)
    assert (code, rows) == (0, [f"new{i}" for i in range(50)])
    assert "going on from offset 0 (0 offset(s) skipped)" in err
    produce(broker, topic, ["after"])
    assert run(job, state)[:2] == (0, ["after"])  # the checkpoint now has the new id


def test_the_latest_policy_skips_to_the_end_and_counts_the_skipped(broker, new_topic, tmp_path):
    topic = new_topic("skip")
    ensure_topics(broker, [topic])
    produce(broker, topic, [f"old{i}" for i in range(10)])
    extra = BOUNDED + ",\n  'scan.offset-out-of-range' = 'latest'"
    job, state = job_file(tmp_path, broker, topic, extra), tmp_path / "state"
    assert run(job, state)[0] == 0
    recreate(broker, topic)
    produce(broker, topic, [f"new{i}" for i in range(4)])
    code, rows, err = run(job, state)
    assert (code, rows) == (0, [])
    assert f"offset 10 of {topic}/0 belongs to a deleted topic" in err
    assert "going on from offset 4 (4 offset(s) skipped)" in err
    produce(broker, topic, ["after"])
    assert run(job, state)[:2] == (0, ["after"])


def test_explicit_start_positions_past_the_end_or_of_no_source_are_errors(
    broker, new_topic, tmp_path
):
    topic = new_topic("explicit")
    ensure_topics(broker, [topic])
    produce(broker, topic, [f"r{i}" for i in range(6)])
    job = job_file(tmp_path, broker, topic)
    code, rows, err = run(job, tmp_path / "s1", "--from", f"offsets:{topic}:0:9")
    assert (code, rows) == (2, [])
    assert f"start offset 9 of {topic}/0 lies past its end offset 6" in err
    code, rows, err = run(job, tmp_path / "s2", "--from", f"offsets:{topic}-typo:0:1")
    assert (code, rows) == (2, [])
    assert f"names {topic}-typo/0, which no source of the job reads" in err
    code, rows, err = run(job, tmp_path / "s3", "--from", f"offsets:{topic}:3:1")
    assert code == 2 and f"names {topic}/3" in err
    code, rows, err = run(job, tmp_path / "s4", "--from", f"offsets:{topic}:0:6")
    assert (code, rows) == (0, [])  # the end offset itself: nothing yet to read
    code, rows, err = run(
        job, tmp_path / "s5", "--from", f"timestamp:{int(time.time() * 1000) + 86_400_000}"
    )
    assert (code, rows) == (2, []) and "lies in the future" in err
    past = int(time.time() * 1000) - 1
    produce(broker, topic, ["late"])  # produced after the timestamp: the only row from it
    code, rows, err = run(job, tmp_path / "s6", "--from", f"timestamp:{past}")
    assert (code, rows) == (0, ["late"])


def test_a_bounded_job_reads_20000_single_record_batches(broker, new_topic, tmp_path):
    topic = new_topic("batches")
    ensure_topics(broker, [topic])
    produce(broker, topic, [f"r{i}" for i in range(20_500)], each=True)
    code, rows, err = run(job_file(tmp_path, broker, topic), tmp_path / "state")
    assert code == 0, err[-2000:]
    assert rows == [f"r{i}" for i in range(20_500)]


def test_a_topic_deleted_while_the_job_reads_it_ends_with_a_message(broker, new_topic, tmp_path):
    topic = new_topic("deleted")
    ensure_topics(broker, [topic])
    produce(broker, topic, ["x", "y"])
    job = job_file(tmp_path, broker, topic, extra="")  # unbounded
    cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--quiet",
           "--state-dir", str(tmp_path / "state")]  # fmt: skip
    with open(tmp_path / "err.log", "w") as err, open(tmp_path / "out.log", "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
    try:
        deadline = time.monotonic() + 60
        while (tmp_path / "out.log").read_text().count("+I[") < 2:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        admin = AdminClient({"bootstrap.servers": broker})
        for future in admin.delete_topics([topic], operation_timeout=10).values():
            future.result(10)
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = (tmp_path / "err.log").read_text()
    assert code == 2, stderr
    assert f"topic '{topic}' of table" in stderr and "no longer exists" in stderr
    assert "the last checkpoint is intact" in stderr
