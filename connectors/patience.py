"""How long a job waits for its Kafka brokers, and waiting that stays interruptible.

A job must never hang on its brokers: a wait ends once they have been unreachable
for ``deltaflow.broker.timeout`` and soon after the job is asked to stop
(SIGTERM). Two things stand in the way, and ``Patience`` handles both:

- Python runs a signal handler only between bytecodes of the main thread, so a
  librdkafka call blocked in C keeps SIGTERM waiting. Every wait is therefore made
  of slices of ``SLICE_S``, checking the stop flag and the clock in between.
- Some librdkafka calls do not keep their own timeout: in librdkafka up to at least
  2.14, ``send_offsets_to_transaction`` blocks forever when the brokers go away
  between its AddOffsetsToTxn and TxnOffsetCommit requests (librdkafka issue #5456:
  the coordinator request's timeout is never checked). ``InFlight`` runs such a
  call on a daemon thread and waits for it in slices, so the job can give up on it
  (the thread is abandoned; the process exits without waiting for it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

SLICE_S = 0.25
STOP_GRACE_S = 3.0  # after a stop is asked, how long a healthy broker gets to finish a call


class WaitEnded(Exception):
    """A wait for the brokers was given up (timeout or stop); the caller words the error."""


@dataclass
class Patience:
    """How long the job waits for its brokers: up to ``timeout_s`` for one wait, less
    once ``down_for()`` (seconds the brokers have been unreachable, from the job's
    broker watch) reaches it, and ``STOP_GRACE_S`` after ``stop`` is set (at once
    when the brokers are away)."""

    timeout_s: float
    stop: threading.Event = field(default_factory=threading.Event)
    down_for: Callable[[], float] = lambda: 0.0

    def wait(self, what: str, attempt: Callable[[float], bool]) -> None:
        """Calls ``attempt(SLICE_S)`` until it returns True; raises ``WaitEnded`` when the
        timeout passes or the job is stopped. ``what`` completes "could not ..."."""
        started = time.monotonic()
        stopped_at: float | None = None
        while not self._try(attempt):
            now = time.monotonic()
            if self.stop.is_set():
                stopped_at = stopped_at or now
                if now - stopped_at >= STOP_GRACE_S or self.down_for() > 0:
                    raise WaitEnded(f"the job was asked to stop while waiting to {what}")
            if max(now - started, self.down_for()) >= self.timeout_s:
                raise WaitEnded(
                    f"could not {what} within 'deltaflow.broker.timeout' = {self.timeout_s:g} s"
                )

    def _try(self, attempt: Callable[[float], bool]) -> bool:
        """One attempt, unless the brokers are known to be away (then a pause instead:
        a call made while they are away may block far beyond its timeout)."""
        if self.down_for() > 0:
            time.sleep(SLICE_S)
            return False
        return attempt(SLICE_S)


class InFlight:
    """One blocking call run on a daemon thread; ``result(timeout)`` waits for it."""

    def __init__(self, call: Callable[[], object]) -> None:
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._call = call
        threading.Thread(target=self._run, name="deltaflow-kafka-call", daemon=True).start()

    def _run(self) -> None:
        try:
            self._call()
        except BaseException as err:  # handed to the waiting thread
            self._error = err
        self._done.set()

    def result(self, timeout: float) -> bool:
        """True once the call returned; re-raises its exception; False while it runs."""
        if not self._done.wait(timeout):
            return False
        if self._error is not None:
            raise self._error
        return True
