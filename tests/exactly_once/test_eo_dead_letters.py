"""Dead letters ('deadletter.topic') under crashes and outages.

With an exactly-once sink the dead letters go into the epoch's Kafka transaction: a
job killed (SIGKILL) again and again while poison records arrive leaves each poison
record in the dead-letter topic exactly once for a ``read_committed`` reader, beside
an exactly-once output (an at-least-once letter of an epoch redone after a kill was
written twice). Without one, the letters have a producer of their own whose flush
waits with the job's patience: a SIGTERM while it waits for a cut broker ends the job
within seconds (exit status 2, "asked to stop"), and the restart loses nothing.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time

import cut_proxy
import pytest
from committed_log import committed_records
from confluent_kafka import Producer
from cut_proxy import PRODUCE
from eo_harness import start
from job_process import stderr_of
from test_alo_stop_in_outage import restart_counts_all, stops_while_waiting
from test_eo_broker_outage import produce, wait_for
from tests_support import wait_ready

from deltaflow.connectors.broker import ensure_topics

EO_JOB = """
SET 'execution.checkpointing.interval' = '200 ms';
CREATE TABLE orders (id INT, merchant INT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = '{orders}', 'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'debezium-json',
  'deadletter.topic' = '{dlq}');
CREATE TABLE counts (merchant INT, cnt BIGINT) WITH (
  'connector' = 'kafka', 'topic' = '{log}', 'properties.bootstrap.servers' = '{bootstrap}',
  'format' = 'debezium-json', 'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = '{prefix}');
INSERT INTO counts SELECT merchant, COUNT(*) FROM orders GROUP BY merchant;
"""
ORDERS, POISON_EVERY, CHUNK = 600, 10, 50
ROUNDS = ["step2:1", "batch:2", "step2:2", "step3:1", "batch:1", "outside", "step1:3"]


def record(i: int) -> tuple[bytes, bytes]:
    """Order ``i`` as (key, value); every POISON_EVERY-th is cut-off JSON (a poison record)."""
    if i % POISON_EVERY == POISON_EVERY - 1:
        return b"p%d" % i, b'{"before": null, "after": {"id": %d, "merchant": ' % i
    event = {"before": None, "after": {"id": i, "merchant": i % 5}, "op": "c"}
    return b"%d" % i, json.dumps(event).encode()


def feed(bootstrap: str, topic: str, pause: float) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "log_level": 0})
    for i in range(ORDERS):
        key, value = record(i)
        producer.produce(topic, value, key)
        if i % CHUNK == CHUNK - 1:
            producer.flush(10)
            time.sleep(pause)
    assert producer.flush(30) == 0


def counts_from_log(bootstrap: str, topic: str) -> dict[int, int]:
    """The committed retract log applied strictly: a row added twice or a retraction of
    a row that is not the current one is a duplicate or a loss."""
    table: dict[int, int] = {}
    for offset, _key, value, _headers in committed_records(bootstrap, topic):
        event = json.loads(value)
        if event["op"] == "d":
            row = event["before"]
            assert table.pop(row["merchant"], None) == row["cnt"], f"offset {offset}: {row}"
        else:
            row = event["after"]
            assert row["merchant"] not in table, f"offset {offset}: {row} added twice"
            table[row["merchant"]] = row["cnt"]
    return table


def letter_offsets(bootstrap: str, dlq: str) -> list[int]:
    """The source offset of each committed dead letter, in the order they were written."""
    out = []
    for _, key, value, headers in committed_records(bootstrap, dlq):
        origin = int(dict(headers)["deltaflow.offset"])
        assert (key, value) == record(origin), origin  # the raw record, key and value
        out.append(origin)
    return out


@pytest.fixture
def names(broker, new_topic):
    topics = {t: new_topic(t) for t in ("orders", "log", "dlq")}
    ensure_topics(broker, list(topics.values()))
    return dict(topics, bootstrap=broker, prefix=new_topic("eo-dlq"))


def test_each_dead_letter_is_committed_once_across_sigkills(names, tmp_path):
    job = tmp_path / "dlq.sql"
    job.write_text(EO_JOB.format(**names))
    state = tmp_path / "state"
    feeder = threading.Thread(target=feed, args=(names["bootstrap"], names["orders"], 0.4))
    feeder.start()
    rng = random.Random(5)
    for crash_at in ROUNDS:
        proc = start(job, state, "" if crash_at == "outside" else crash_at)
        try:
            code = proc.wait(rng.uniform(2.5, 4.0))
        except Exception:  # the point was not reached in time: killed from outside
            proc.send_signal(signal.SIGKILL)
            code = proc.wait(10)
        assert code == -signal.SIGKILL, (crash_at, code, stderr_of(proc)[-3000:])
    feeder.join()
    poisons = [i for i in range(ORDERS) if i % POISON_EVERY == POISON_EVERY - 1]
    expected = {m: sum(1 for i in range(ORDERS) if i % 5 == m and i not in poisons)
                for m in range(5)}  # fmt: skip
    proc = start(job, state)
    wait_ready(proc, proc.log_path)
    deadline = time.monotonic() + 60
    try:
        while counts_from_log(names["bootstrap"], names["log"]) != expected:
            assert time.monotonic() < deadline, stderr_of(proc)[-3000:]
            time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, stderr_of(proc)[-3000:]
    # every poison record once: none lost, none written again by a redone epoch
    assert sorted(letter_offsets(names["bootstrap"], names["dlq"])) == poisons


ALO_JOB = """
SET 'execution.checkpointing.interval' = '200 ms';
SET 'deltaflow.broker.timeout' = '10 min';
CREATE TABLE orders (id INT, merchant INT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'debezium-json',
  'deadletter.topic' = 'dlq');
CREATE TABLE totals (merchant INT, cnt BIGINT, PRIMARY KEY (merchant) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'json', 'value.format' = 'json');
INSERT INTO totals SELECT merchant, COUNT(*) FROM orders GROUP BY merchant;
"""
CUT_OFF = b'{"before": null, "after": {"id": 999, "merchant": '


def test_sigterm_while_the_dead_letter_flush_waits_for_a_gone_broker_stops_within_seconds(
    proxied, tmp_path, jobs, monkeypatch
):
    bootstrap, proxy = proxied
    ensure_topics(bootstrap, ["dlq"])
    # cut_after(PRODUCE) picks the job's Produce to topic 'dlq'
    monkeypatch.setattr(cut_proxy, "_transactional", lambda body: b"dlq" in body)
    job = tmp_path / "alo.sql"
    job.write_text(ALO_JOB.format(bootstrap=bootstrap))
    proc = jobs.start(job, tmp_path / "state")
    produce(bootstrap, 0, 30)
    assert wait_for(bootstrap, {0: 10, 1: 10, 2: 10}) == {0: 10, 1: 10, 2: 10}, stderr_of(proc)
    # the dead letter's Produce reaches the broker, its answer is lost and the broker cut:
    # the checkpoint's flush of the dead letters waits for an acknowledgement
    proxy.cut_after(PRODUCE)
    poison = Producer({"bootstrap.servers": bootstrap})
    poison.produce("orders", CUT_OFF, b"bad")
    assert poison.flush(10) == 0
    stops_while_waiting(proc, proxy, "topic 'dlq'")
    # brokers back: the restart redoes the epoch; the letter is there (at least once)
    restart_counts_all(jobs, job, tmp_path / "state", proxy, bootstrap, 30, {0: 20, 1: 20, 2: 20})
    letters = committed_records(bootstrap, "dlq")
    assert letters and {(key, value) for _, key, value, _ in letters} == {(b"bad", CUT_OFF)}


TWO_CLUSTERS = """
CREATE TABLE orders (id INT, merchant INT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = '{orders}', 'properties.bootstrap.servers' = '{source}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json', 'deadletter.topic' = '{dlq}');
CREATE TABLE counts (merchant INT, cnt BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '{sink}',
  'format' = 'debezium-json', 'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = '{prefix}');
INSERT INTO counts SELECT merchant, COUNT(*) FROM orders GROUP BY merchant;
"""


def test_dead_letters_on_another_cluster_than_the_transaction_are_at_least_once(
    names, proxied, tmp_path
):
    """One transaction cannot span two clusters: the job says so at start and writes the
    letters with their own producer (GUARANTEES.md)."""
    source, sink = names["bootstrap"], proxied[0]
    producer = Producer({"bootstrap.servers": source})
    for i in range(POISON_EVERY):
        key, value = record(i)
        producer.produce(names["orders"], value, key)
    assert producer.flush(10) == 0
    job = tmp_path / "two.sql"
    job.write_text(TWO_CLUSTERS.format(source=source, sink=sink, **names))
    cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--quiet"]
    done = subprocess.run(
        [*cmd, "--state-dir", str(tmp_path / "state")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "dead letters" in line]
    assert len(said) == 1 and f"({source})" in said[0] and "at-least-once" in said[0], said
    assert letter_offsets(source, names["dlq"]) == [POISON_EVERY - 1]
    assert counts_from_log(sink, "totals") == {0: 2, 1: 2, 2: 2, 3: 2, 4: 1}  # orders 0-8
