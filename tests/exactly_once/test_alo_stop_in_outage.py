"""At-least-once jobs asked to stop while their brokers are away (issue #6's leftovers).

An at-least-once sink's flush waits for the broker's acknowledgements; during an
outage a SIGTERM must end that wait within seconds (exit status 2, "asked to stop"),
as the exactly-once path does, and the restarted job redoes the unfinished epoch so
that no change is lost. A source with ``properties.group.id`` commits the group's
offsets on close; that commit must not hold a stopping job while the brokers are away.
"""

from __future__ import annotations

import signal
import time

import cut_proxy
from cut_proxy import PRODUCE
from job_process import stderr_of
from test_eo_broker_outage import produce, totals, wait_for

JOB = """
SET 'execution.checkpointing.interval' = '200 ms';
SET 'deltaflow.broker.timeout' = '10 min';
CREATE TABLE orders (id INT, merchant INT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'debezium-json'{group});
CREATE TABLE totals (merchant INT, cnt BIGINT, PRIMARY KEY (merchant) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'json', 'value.format' = 'json',
  'sink.delivery-guarantee' = 'at-least-once');
INSERT INTO totals SELECT merchant, COUNT(*) FROM orders GROUP BY merchant;
"""


def start(jobs, tmp_path, bootstrap: str, group: str = ""):
    job = tmp_path / "alo.sql"
    job.write_text(JOB.format(bootstrap=bootstrap, group=group))
    return jobs.start(job, tmp_path / "state"), job


def stop_promptly(proc) -> tuple[int, str]:
    """SIGTERM; the exit status and stderr, once the job ended within 8 s."""
    proc.send_signal(signal.SIGTERM)
    began = time.monotonic()
    code = proc.wait(30)
    stderr = stderr_of(proc)
    assert time.monotonic() - began < 8, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    return code, stderr


def stops_while_waiting(proc, proxy, mention: str) -> None:
    """Once the cut has tripped the job waits for the brokers; a SIGTERM then ends it
    within 8 s with exit status 2 and one error line that names ``mention``."""
    assert proxy.tripped.wait(30), stderr_of(proc)
    time.sleep(3)  # waiting for the brokers, for up to its 10 min timeout
    assert proc.poll() is None, stderr_of(proc)[-3000:]
    code, stderr = stop_promptly(proc)
    assert code == 2, stderr[-3000:]
    ours = [line for line in stderr.splitlines() if line.startswith("deltaflow: error")]
    assert len(ours) == 1 and "asked to stop" in ours[0], ours
    assert mention in ours[0] and "the last checkpoint is intact" in ours[0], ours


def restart_counts_all(jobs, job, state, proxy, bootstrap, first: int, expected: dict) -> None:
    """Brokers back: the restart redoes the unfinished epoch and, with 30 more orders
    from ``first``, reaches ``expected`` (none lost); it then stops cleanly."""
    proxy.restore()
    again = jobs.start(job, state)
    produce(bootstrap, first, 30)
    assert wait_for(bootstrap, expected) == expected, stderr_of(again)[-3000:]
    again.send_signal(signal.SIGTERM)
    assert again.wait(30) == 0, stderr_of(again)[-3000:]


def test_sigterm_while_a_flush_waits_for_gone_brokers_stops_the_job_within_seconds(
    proxied, tmp_path, jobs, monkeypatch
):
    bootstrap, proxy = proxied
    # cut_after(PRODUCE) picks a transactional Produce; here: the job's, to topic 'totals'
    monkeypatch.setattr(cut_proxy, "_transactional", lambda body: b"totals" in body)
    proc, job = start(jobs, tmp_path, bootstrap)
    produce(bootstrap, 0, 30)
    assert wait_for(bootstrap, {0: 10, 1: 10, 2: 10}) == {0: 10, 1: 10, 2: 10}, stderr_of(proc)
    # the job's Produce of the next totals reaches the broker, its answer is lost and the
    # broker cut: the job's checkpoint now waits for acknowledgements that never come
    proxy.cut_after(PRODUCE)
    produce(bootstrap, 30, 30)
    stops_while_waiting(proc, proxy, "totals'")
    restart_counts_all(jobs, job, tmp_path / "state", proxy, bootstrap, 60, {0: 30, 1: 30, 2: 30})


def test_a_source_with_a_group_id_does_not_hold_a_stopping_job_during_an_outage(
    proxied, tmp_path, jobs
):
    bootstrap, proxy = proxied
    proc, job = start(jobs, tmp_path, bootstrap, ", 'properties.group.id' = 'stopper'")
    produce(bootstrap, 0, 30)
    assert wait_for(bootstrap, {0: 10, 1: 10, 2: 10}) == {0: 10, 1: 10, 2: 10}, stderr_of(proc)
    time.sleep(1)  # the acknowledgements reach the job and a checkpoint commits the offsets
    proxy.cut()
    time.sleep(3)  # the broker watch has noticed; the last positions await their commit
    assert proc.poll() is None, stderr_of(proc)[-3000:]
    code, stderr = stop_promptly(proc)
    # everything read was written and acknowledged before the cut: the last checkpoint
    # needs nothing from the brokers, so the job ends as on any stop (on a loaded machine
    # an acknowledgement may still have been on its way: then the flush is given up)
    ours = [line for line in stderr.splitlines() if line.startswith("deltaflow: error")]
    assert (code, ours) == (0, []) or (code == 2 and "asked to stop" in ours[0]), stderr[-3000:]
    proxy.restore()
    again = jobs.start(job, tmp_path / "state")
    produce(bootstrap, 30, 30)
    expected = {0: 20, 1: 20, 2: 20}
    assert wait_for(bootstrap, expected) == expected, stderr_of(again)[-3000:]
    again.send_signal(signal.SIGTERM)
    assert again.wait(30) == 0, stderr_of(again)[-3000:]
    assert totals(bootstrap) == expected
