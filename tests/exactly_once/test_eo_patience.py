"""Patience: how long a wait for the brokers may go on (no broker needed)."""

from __future__ import annotations

import threading
import time

import pytest

from deltaflow.connectors import patience as patience_module
from deltaflow.connectors.patience import InFlight, Patience, StillBlocked, WaitEnded


def never(_slice: float) -> bool:
    time.sleep(0.01)
    return False


def test_a_wait_ends_after_the_timeout_naming_the_setting():
    began = time.monotonic()
    with pytest.raises(
        WaitEnded, match=r"could not commit within 'deltaflow.broker.timeout' = 0.3 s"
    ):
        Patience(0.3).wait("commit", never)
    assert 0.3 <= time.monotonic() - began < 2


def test_an_outage_that_began_earlier_counts_toward_the_timeout():
    """The brokers have been away for 9 of the 10 s: the wait gets what is left, and no
    attempt is made while they are away."""
    calls = []
    patience = Patience(10, down_for=lambda: 9.0 + (time.monotonic() - began))
    began = time.monotonic()
    with pytest.raises(WaitEnded):
        patience.wait("commit", lambda t: calls.append(t) or False)
    assert time.monotonic() - began < 2.5
    assert calls == []


def test_a_stop_ends_the_wait_after_a_grace_and_at_once_while_the_brokers_are_away(monkeypatch):
    monkeypatch.setattr(patience_module, "STOP_GRACE_S", 0.5)
    stop = threading.Event()
    stop.set()
    began = time.monotonic()
    with pytest.raises(WaitEnded, match="asked to stop"):
        Patience(60, stop).wait("commit", never)
    assert 0.5 <= time.monotonic() - began < 2
    began = time.monotonic()
    with pytest.raises(WaitEnded, match="asked to stop"):
        Patience(60, stop, lambda: 1.0).wait("commit", never)
    assert time.monotonic() - began < 1


def test_a_healthy_call_finishes_within_the_grace_after_a_stop():
    stop = threading.Event()
    stop.set()
    answers = iter([False, False, True])
    Patience(60, stop).wait("commit", lambda t: next(answers))


def test_a_call_stuck_in_flight_can_be_given_up_and_its_error_comes_back():
    release = threading.Event()
    stuck = InFlight(release.wait)
    assert stuck.result(0.05) is False  # the caller goes on; the thread waits on
    release.set()
    assert stuck.result(1) is True
    failing = InFlight(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.result(1)


def outage_between(start_s: float, end_s: float):
    """A broker watch's (down_for, outages) for one outage from start_s to end_s after now."""
    began = time.monotonic()

    def down_for() -> float:
        elapsed = time.monotonic() - began
        return elapsed - start_s if start_s <= elapsed < end_s else 0.0

    return down_for, lambda: int(time.monotonic() - began >= start_s)


def test_a_call_unfinished_after_the_brokers_came_back_is_still_blocked(monkeypatch):
    """The outage runs from 0.2 to 0.8 s; the call counts as stuck STUCK_AFTER_S after the
    brokers were last seen away, not after the wait began."""
    monkeypatch.setattr(patience_module, "STUCK_AFTER_S", 0.5)
    down_for, outages = outage_between(0.2, 0.8)
    patience = Patience(60, down_for=down_for, outages=outages)
    began = time.monotonic()
    with pytest.raises(StillBlocked) as raised:
        patience.wait("commit", never, outages_before=0)
    # the brokers are last seen away within a slice before 0.8 s
    assert 0.8 - patience_module.SLICE_S + 0.5 <= time.monotonic() - began < 0.8 + 0.5 + 1
    assert str(raised.value) == "commit"


def test_without_an_outage_a_long_call_is_not_still_blocked(monkeypatch):
    """A slow call on brokers that never went away (or that this client had already seen
    away before it was made: outages_before) waits out its timeout as before."""
    monkeypatch.setattr(patience_module, "STUCK_AFTER_S", 0.2)
    with pytest.raises(WaitEnded):
        Patience(1.0, outages=lambda: 0).wait("commit", never, outages_before=0)
    with pytest.raises(WaitEnded):
        Patience(1.0, outages=lambda: 3).wait("commit", never, outages_before=3)
    with pytest.raises(WaitEnded):  # an at-least-once writer's wait: no outages_before
        Patience(1.0, outages=lambda: 3).wait("commit", never)
