"""One crash at each checkpoint step, on purpose: the restart rolls back or forward.

Killed at ``step2`` (LMDB holds the epoch as pending, its Kafka transaction is not
committed) the restart must roll the state back and redo the epoch; killed at
``step3`` (the transaction committed, the pending mark still set) it must roll
forward and not redo it. Either way the committed output holds every change once.
"""

from __future__ import annotations

import signal
import time

import pytest
from eo_harness import (
    apply_retract_log,
    expected_table,
    history,
    produce,
    read_upsert_log,
    start,
    write_job,
)
from job_process import stderr_of
from tests_support import wait_ready

from deltaflow.connectors.broker import ensure_topics
from deltaflow.state.backend import StateBackend
from deltaflow.state.checkpoint import PENDING_KEY

PENDING_AFTER = {"batch": False, "step0": False, "step1": False, "step2": True,
                 "step3": True, "step4": False}  # fmt: skip


@pytest.mark.parametrize("unknown_keys", ["ignore", "policy"])
@pytest.mark.parametrize("point", list(PENDING_AFTER))
def test_a_crash_at_each_step_is_recovered_exactly_once(
    point, unknown_keys, broker, new_topic, tmp_path
):
    names = {t: new_topic(t) for t in ("orders", "customers", "log", "upsert")}
    ensure_topics(broker, list(names.values()))
    names.update(bootstrap=broker, prefix=new_topic("eo"))
    events = history(seed=31, n=400)
    produce(broker, {"orders": names["orders"], "customers": names["customers"]}, events, 100, 0)
    job, state = (
        write_job(tmp_path / "eo.sql", unknown_keys=unknown_keys, **names),
        tmp_path / "state",
    )
    proc = start(job, state, crash_at=f"{point}:1")
    assert proc.wait(60) == -signal.SIGKILL
    with StateBackend(state, create=False, readonly=True) as backend:
        assert (backend.meta(PENDING_KEY) is not None) == PENDING_AFTER[point]
    proc = start(job, state)
    expected = expected_table(events)
    wait_ready(proc, proc.log_path)  # a roll forward may leave nothing to redo: SIGTERM soon
    deadline = time.monotonic() + 60
    try:
        while read_upsert_log(broker, names["upsert"])[0] != expected:
            assert time.monotonic() < deadline, "the restarted job did not catch up"
            time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, stderr_of(proc)
    log_table, afters = apply_retract_log(broker, names["log"])
    upsert_table, values = read_upsert_log(broker, names["upsert"])
    assert log_table == upsert_table == expected
    assert values == afters
