"""An exactly-once job whose brokers go away for good in the middle of committing an epoch.

The proxy in front of the broker is cut between the two requests of
``send_offsets_to_transaction`` (AddOffsetsToTxn, then FindCoordinator or
TxnOffsetCommit): librdkafka then blocks in that call past its timeout for as long
as the broker stays away (librdkafka issue #5456). The job must still stop after
'deltaflow.broker.timeout', or within seconds of a SIGTERM, with exit status 2, and
a restart once the broker is back must give every change exactly once. A broker
that comes back after such a cut (or after one that lost the answer to the commit's
EndTxn) finds the same job going on, with every change exactly once.
"""

from __future__ import annotations

import json
import signal
import time

import pytest
from committed_log import committed_records
from confluent_kafka import Producer
from cut_proxy import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    FIND_COORDINATOR,
    PRODUCE,
    TXN_OFFSET_COMMIT,
)
from job_process import stderr_of

JOB = """
SET 'execution.checkpointing.interval' = '200 ms';
SET 'deltaflow.broker.timeout' = '{timeout}';
CREATE TABLE orders (id INT, merchant INT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'debezium-json');
CREATE TABLE totals (merchant INT, cnt BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '{bootstrap}',
  'format' = 'debezium-json', 'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = 'gone');
INSERT INTO totals SELECT merchant, COUNT(*) FROM orders GROUP BY merchant;
"""


def produce(bootstrap: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for oid in range(first, first + count):
        event = {"before": None, "after": {"id": oid, "merchant": oid % 3}, "op": "c"}
        producer.produce("orders", json.dumps(event).encode())
    assert producer.flush(30) == 0


def strict_totals(bootstrap: str) -> dict[int, int]:
    """The committed retract log applied strictly: a duplicated or lost change fails."""
    table: dict[int, int] = {}
    for offset, _key, value, _headers in committed_records(bootstrap, "totals"):
        event = json.loads(value)
        if event["op"] == "d":
            row = event["before"]
            held = table.pop(row["merchant"], None)
            assert held == row["cnt"], f"offset {offset}: retraction of {row}, table has {held}"
        else:
            row = event["after"]
            assert row["merchant"] not in table, f"offset {offset}: {row} added twice"
            table[row["merchant"]] = row["cnt"]
    return table


def wait_for(bootstrap: str, expected: dict, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while (got := strict_totals(bootstrap)) != expected and time.monotonic() < deadline:
        time.sleep(0.3)
    return got


def gone_mid_commit(jobs, tmp_path, bootstrap, proxy, timeout: str, answer_lost: int | None = None):
    """Starts the job, lets it commit 30 orders, then cuts the broker inside the commit
    of the next 30 (or once a request ``answer_lost`` of their epoch reached the broker,
    its answer lost); returns the job process once the cut has happened."""
    job = tmp_path / "gone.sql"
    job.write_text(JOB.format(bootstrap=bootstrap, timeout=timeout))
    proc = jobs.start(job, tmp_path / "state")
    produce(bootstrap, 0, 30)
    assert wait_for(bootstrap, {0: 10, 1: 10, 2: 10}) == {0: 10, 1: 10, 2: 10}, stderr_of(proc)
    if answer_lost is not None:
        proxy.cut_after(answer_lost)
    else:
        proxy.cut_between(ADD_OFFSETS_TO_TXN, (FIND_COORDINATOR, TXN_OFFSET_COMMIT))
    produce(bootstrap, 30, 30)
    assert proxy.tripped.wait(30), stderr_of(proc)
    return proc, job


def restart_gives_exactly_once(jobs, tmp_path, bootstrap, proxy, job) -> None:
    """Broker back: the restarted job settles the interrupted epoch, and every change
    appears once (the strict log check fails on a duplicate or a gap)."""
    proxy.restore()
    again = jobs.start(job, tmp_path / "state")
    produce(bootstrap, 60, 30)
    expected = {0: 30, 1: 30, 2: 30}
    assert wait_for(bootstrap, expected) == expected, stderr_of(again)[-3000:]
    again.send_signal(signal.SIGTERM)
    assert again.wait(30) == 0, stderr_of(again)[-3000:]


def test_brokers_gone_for_good_mid_commit_stop_the_job_after_its_timeout(proxied, tmp_path, jobs):
    bootstrap, proxy = proxied
    proc, job = gone_mid_commit(jobs, tmp_path, bootstrap, proxy, "5 s")
    began = time.monotonic()
    code = proc.wait(60)
    stderr = stderr_of(proc)
    assert code == 2, stderr[-3000:]
    assert time.monotonic() - began < 5 + 15  # the timeout and some slack
    ours = [line for line in stderr.splitlines() if line.startswith("deltaflow: error")]
    assert len(ours) == 1 and "'deltaflow.broker.timeout' = 5 s" in ours[0], ours
    assert "the last checkpoint is intact" in ours[0]
    assert "Traceback" not in stderr
    restart_gives_exactly_once(jobs, tmp_path, bootstrap, proxy, job)


def test_sigterm_while_the_brokers_are_gone_stops_the_job_within_seconds(proxied, tmp_path, jobs):
    bootstrap, proxy = proxied
    proc, job = gone_mid_commit(jobs, tmp_path, bootstrap, proxy, "10 min")
    time.sleep(3)  # the job is now waiting for the brokers (for up to 10 min)
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    began = time.monotonic()
    code = proc.wait(30)
    stderr = stderr_of(proc)
    assert time.monotonic() - began < 8, stderr[-3000:]
    assert code == 2, stderr[-3000:]
    ours = [line for line in stderr.splitlines() if line.startswith("deltaflow: error")]
    assert len(ours) == 1 and "asked to stop" in ours[0], ours
    assert "Traceback" not in stderr
    restart_gives_exactly_once(jobs, tmp_path, bootstrap, proxy, job)


@pytest.mark.parametrize(
    "answer_lost",
    [None, PRODUCE, ADD_PARTITIONS_TO_TXN, TXN_OFFSET_COMMIT, END_TXN],
    ids=["marker", "produce", "add-partitions", "txn-offset-commit", "end-txn"],
)
def test_a_broker_back_after_a_cut_inside_a_commit_finds_the_job_going_on(
    proxied, tmp_path, jobs, answer_lost
):
    """The cut comes between the marker's two requests, or once the broker did a request
    of the epoch (wrote the records, added the partition, stored the marker, committed)
    without the job hearing of it; the job retries and must not write anything twice."""
    bootstrap, proxy = proxied
    proc, _ = gone_mid_commit(jobs, tmp_path, bootstrap, proxy, "120 s", answer_lost)
    time.sleep(8)
    assert proc.poll() is None, stderr_of(proc)[-3000:]
    proxy.restore()
    produce(bootstrap, 60, 30)
    expected = {0: 30, 1: 30, 2: 30}
    assert wait_for(bootstrap, expected) == expected, stderr_of(proc)[-3000:]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0, stderr_of(proc)[-3000:]
