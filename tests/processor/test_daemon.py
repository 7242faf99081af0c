"""`deltaflow run` as a daemon on the real broker: SIGKILL and restart, SIGTERM, --from replay.

The job keeps COUNT and SUM per merchant of a Debezium `orders` topic in an upsert
topic. The expected table is computed here from the events themselves: the final
orders (after every insert, update and delete) grouped by merchant.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from tests_support import wait_ready

from deltaflow.connectors.broker import ensure_topics

JOB = """
SET 'execution.checkpointing.interval' = '200 ms';
CREATE TABLE orders (
  id INT, merchant INT, amount DECIMAL(10, 2), PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'kafka', 'topic' = '{src}',
  'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset',{bounded}
  'format' = 'debezium-json'
);
CREATE TABLE totals (
  merchant INT, cnt BIGINT, total DECIMAL(38, 2), PRIMARY KEY (merchant) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{dst}',
  'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'json', 'value.format' = 'json'
);
INSERT INTO totals SELECT merchant, COUNT(*), SUM(amount) FROM orders GROUP BY merchant;
"""


def history(seed: int, n: int) -> list[dict]:
    """Random but valid Debezium events over 150 order ids and 7 merchants."""
    rng = random.Random(seed)
    live: dict[int, dict] = {}
    events = []
    for _ in range(n):
        oid = rng.randrange(150)
        after = {"id": oid, "merchant": rng.randrange(7), "amount": rng.randrange(1, 100000) / 100}
        if oid not in live:
            events.append({"before": None, "after": after, "op": "c"})
            live[oid] = after
        elif rng.random() < 0.15:
            events.append({"before": live.pop(oid), "after": None, "op": "d"})
        else:
            events.append({"before": live[oid], "after": after, "op": "u"})
            live[oid] = after
    return events


def expected_table(events: list[dict]) -> dict[int, tuple[int, Decimal]]:
    live: dict[int, dict] = {}
    for e in events:
        if e["op"] == "d":
            del live[e["before"]["id"]]
        else:
            live[e["after"]["id"]] = e["after"]
    table: dict[int, tuple[int, Decimal]] = {}
    for row in live.values():
        cnt, total = table.get(row["merchant"], (0, Decimal("0.00")))
        table[row["merchant"]] = (cnt + 1, total + Decimal(str(row["amount"])))
    return table


def produce(bootstrap: str, topic: str, events: list[dict], pause: float = 0.0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})
    for i, event in enumerate(events):
        producer.produce(topic, value=json.dumps(event).encode())
        if pause and i % 100 == 99:
            producer.flush(10)
            time.sleep(pause)
    producer.flush(30)


def read_table(bootstrap: str, topic: str) -> dict[int, tuple[int, Decimal]]:
    """The upsert topic folded to its final table."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "t", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    table: dict[int, tuple[int, Decimal]] = {}
    try:
        while True:
            msg = consumer.poll(5.0)
            if msg is None or (msg.error() and msg.error().code() == KafkaError._PARTITION_EOF):
                return table
            key = json.loads(msg.key())["merchant"]
            if msg.value() is None:
                table.pop(key, None)
            else:
                value = json.loads(msg.value(), parse_float=Decimal)
                table[key] = (value["cnt"], Decimal(value["total"]))
    finally:
        consumer.close()


def start(job: Path, state: Path, *extra: str) -> subprocess.Popen:
    """The daemon, its stderr in a file beside the state (``stderr_of``) so that
    ``wait_ready`` can read its readiness line while it runs."""
    cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--state-dir", str(state)]
    log_path = state.parent / f"stderr-{len(list(state.parent.glob('stderr-*.log')))}.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([*cmd, "--quiet", *extra], stderr=log, text=True)
    proc.log_path = log_path  # type: ignore[attr-defined]
    return proc


def stderr_of(proc: subprocess.Popen) -> str:
    return proc.log_path.read_text()  # type: ignore[attr-defined]


def wait_for(bootstrap: str, topic: str, expected: dict, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    table: dict = {}
    while time.monotonic() < deadline:
        table = read_table(bootstrap, topic)
        if table == expected:
            return table
        time.sleep(0.5)
    return table


@pytest.fixture
def topics(broker, new_topic):
    src, dst = new_topic("orders"), new_topic("totals")
    ensure_topics(broker, [src, dst])
    return src, dst


def write_job(tmp_path: Path, bootstrap: str, src: str, dst: str, bounded: bool) -> Path:
    extra = "\n  'scan.bounded.mode' = 'latest-offset'," if bounded else ""
    job = tmp_path / ("bounded.sql" if bounded else "daemon.sql")
    job.write_text(JOB.format(src=src, dst=dst, bootstrap=bootstrap, bounded=extra))
    return job


def test_sigkill_at_random_moments_then_restart_gives_the_same_table(broker, topics, tmp_path):
    src, dst = topics
    events = history(seed=7, n=3000)
    job, state = write_job(tmp_path, broker, src, dst, bounded=False), tmp_path / "state"
    feeder = threading.Thread(target=produce, args=(broker, src, events, 0.05))
    feeder.start()
    rng = random.Random(11)
    kills = 0
    for _ in range(10):
        proc = start(job, state)
        time.sleep(rng.uniform(0.8, 2.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        kills += 1
    feeder.join()
    proc = start(job, state)
    try:
        wait_ready(proc, proc.log_path)
        assert wait_for(broker, dst, expected_table(events)) == expected_table(events)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0, stderr_of(proc)
    assert kills == 10


def test_sigterm_checkpoints_and_exits_zero_within_five_seconds(broker, topics, tmp_path):
    src, dst = topics
    events = history(seed=3, n=500)
    produce(broker, src, events)
    job, state = write_job(tmp_path, broker, src, dst, bounded=False), tmp_path / "state"
    proc = start(job, state)
    wait_ready(proc, proc.log_path)
    assert wait_for(broker, dst, expected_table(events)) == expected_table(events)
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(10)
    assert code == 0, stderr_of(proc)
    assert time.monotonic() - began < 5.0
    inspect = subprocess.run(
        [sys.executable, "-m", "deltaflow.processor", "state", "inspect", "--state-dir", str(state)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "epoch" in inspect.stdout
    assert src in inspect.stdout or "offsets" in inspect.stdout


def test_bounded_run_and_replay_from_earliest_give_the_same_result(
    broker, topics, tmp_path, new_topic
):
    src, dst = topics
    events = history(seed=5, n=800)
    produce(broker, src, events)
    job = write_job(tmp_path, broker, src, dst, bounded=True)
    first = subprocess.run(
        [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--state-dir", str(tmp_path / "a"), "--quiet"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert read_table(broker, dst) == expected_table(events)
    # a replay must go into a fresh state directory
    refused = subprocess.run(
        [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--state-dir", str(tmp_path / "a"), "--from", "earliest"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2
    assert "fresh state directory" in refused.stderr and "Traceback" not in refused.stderr
    dst2 = new_topic("replay")
    ensure_topics(broker, [dst2])
    (tmp_path / "r").mkdir()
    job2 = write_job(tmp_path / "r", broker, src, dst2, bounded=True)
    replay = subprocess.run(
        [sys.executable, "-m", "deltaflow.processor", "run", str(job2), "--state-dir", str(tmp_path / "b"), "--from", "earliest", "--quiet"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    assert read_table(broker, dst2) == expected_table(events)
