"""A transactional call that the brokers' return does not end: the job replaces its
producer and settles the epoch in process (connectors/transactions.py, TransactionStuck).

After an outage the proxy leaves the broker reachable but one request of the next
epoch's commit unanswered on a connection that stays open: the epoch marker's
TxnOffsetCommit never reaches the broker (the epoch is not committed), or the EndTxn
reaches it and its answer is lost (the epoch is committed). That is what librdkafka
2.16 does by itself after a cut (docs/GUARANTEES.md, "librdkafka version"); here the
sink's 'properties.metadata.recovery.strategy' = 'none' keeps 2.16 from getting stuck
at the cut on its own, so the unanswered request is the one that counts with any
version. The job must log one line saying what it did and go on with every change
exactly once: rolled back and redone, or kept.
"""

from __future__ import annotations

import re
import signal
import time

import pytest
from cut_proxy import END_TXN, TXN_OFFSET_COMMIT
from job_process import stderr_of
from test_eo_broker_gone import JOB, produce, wait_for

STUCK_JOB = JOB.replace(
    "'sink.transactional-id-prefix' = 'gone'",
    "'sink.transactional-id-prefix' = 'gone', 'properties.metadata.recovery.strategy' = 'none'",
)


def wait_for_line(proc, text: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while text not in stderr_of(proc) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert text in stderr_of(proc), stderr_of(proc)[-3000:]


@pytest.mark.parametrize(
    ("request_key", "outcome"),
    [
        (TXN_OFFSET_COMMIT, r"epoch (\d+) was not committed, redone from epoch (\d+)$"),
        (END_TXN, r"epoch (\d+) was committed by the broker, kept$"),
    ],
    ids=["marker-unanswered", "commit-answer-lost"],
)
def test_a_call_unanswered_after_an_outage_is_settled_in_process(
    proxied, tmp_path, jobs, request_key, outcome
):
    bootstrap, proxy = proxied
    job = tmp_path / "stuck.sql"
    job.write_text(STUCK_JOB.format(bootstrap=bootstrap, timeout="120 s"))
    proc = jobs.start(job, tmp_path / "state")
    produce(bootstrap, 0, 30)
    assert wait_for(bootstrap, {0: 10, 1: 10, 2: 10}) == {0: 10, 1: 10, 2: 10}, stderr_of(proc)
    proxy.cut()
    wait_for_line(proc, "cannot reach the Kafka brokers")
    (proxy.swallow if request_key == TXN_OFFSET_COMMIT else proxy.mute_after)(request_key)
    proxy.restore()
    produce(bootstrap, 30, 30)
    assert proxy.hung.wait(30), stderr_of(proc)[-3000:]
    expected = {0: 20, 1: 20, 2: 20}  # the strict log check fails on a duplicate or a gap
    assert wait_for(bootstrap, expected, timeout=90) == expected, stderr_of(proc)[-3000:]
    produce(bootstrap, 60, 30)  # the new producer carries on
    expected = {0: 30, 1: 30, 2: 30}
    assert wait_for(bootstrap, expected) == expected, stderr_of(proc)[-3000:]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0, stderr_of(proc)[-3000:]
    ours = [line for line in stderr_of(proc).splitlines() if "replaced the transactional" in line]
    assert len(ours) == 1, ours
    assert "the call has not returned 15 s after the brokers came back" in ours[0]
    settled = re.search(outcome, ours[0])
    assert settled, ours[0]
    if len(settled.groups()) == 2:  # rolled back to the checkpoint before the epoch
        assert int(settled[2]) == int(settled[1]) - 1, ours[0]
