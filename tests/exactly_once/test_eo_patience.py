"""Patience: how long a wait for the brokers may go on (no broker needed)."""

from __future__ import annotations

import threading
import time

import pytest

from deltaflow.connectors import patience as patience_module
from deltaflow.connectors.patience import InFlight, Patience, WaitEnded


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
