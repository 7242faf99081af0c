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
- Some calls never finish even after the brokers return: with librdkafka 2.16 a
  transactional producer that lived through an outage can keep waiting for a broker
  it dropped (docs/GUARANTEES.md, "librdkafka version"). A wait told the count of
  outages its client has already seen (``outages_before``) raises ``StillBlocked``
  when the call is still unfinished ``STUCK_AFTER_S`` after the brokers were last
  seen away (or after the wait began, when later), so that the caller can replace
  the client.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

SLICE_S = 0.25
STOP_GRACE_S = 3.0  # after a stop is asked, how long a healthy broker gets to finish a call
# librdkafka waits up to reconnect.backoff.max.ms (10 s by default) before it reconnects,
# so a healthy client may resume its call that long after the brokers return (2.12.1 took
# 9.6 s in the cut tests); 5 s more before the call counts as stuck
STUCK_AFTER_S = 15.0


class WaitEnded(Exception):
    """A wait for the brokers was given up (timeout or stop); the caller words the error."""


class StillBlocked(Exception):
    """A call under way through an outage has not finished ``STUCK_AFTER_S`` after the
    brokers came back; the caller replaces its client (and words the error)."""


@dataclass
class Patience:
    """How long the job waits for its brokers: up to ``timeout_s`` for one wait, less
    once ``down_for()`` (seconds the brokers have been unreachable, from the job's
    broker watch) reaches it, and ``STOP_GRACE_S`` after ``stop`` is set (at once
    when the brokers are away). ``outages()`` counts the times the broker watch found
    the brokers away."""

    timeout_s: float
    stop: threading.Event = field(default_factory=threading.Event)
    down_for: Callable[[], float] = lambda: 0.0
    outages: Callable[[], int] = lambda: 0

    def wait(
        self, what: str, attempt: Callable[[float], bool], outages_before: int | None = None
    ) -> None:
        """Calls ``attempt(SLICE_S)`` until it returns True; raises ``WaitEnded`` when the
        timeout passes or the job is stopped. ``what`` completes "could not ...".
        With ``outages_before`` it raises ``StillBlocked`` as the module docstring says."""
        started = clock = time.monotonic()
        stopped_at: float | None = None
        while not self._try(attempt):
            now = time.monotonic()
            if self.down_for() > 0:
                clock = now
            elif outages_before is not None and self.outages() > outages_before:
                if now - clock >= STUCK_AFTER_S:
                    raise StillBlocked(what)
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
