"""librdkafka's log lines, rate-limited: one line per state, then how many repeats were left out.

During a broker outage every client of a job (source consumers, sink producers, the
transactional producer) logs each failed reconnect: about 38 lines a second on
stderr, which buries everything else and fills a pipe that nobody drains. The
clients get ``LIMITER`` as their ``logger`` (``kafka_client``), so librdkafka hands
its lines to it (from the thread that polls the client) instead of writing them.

A line is keyed by its text without the client's name, the thread and broker it
names, and with every number left out: ``Connect to ipv4#127.0.0.1:9092 failed:
Connection refused (after 0ms in state CONNECT)`` from the consumer's connections
to the bootstrap server, the partition leader and the group coordinator and from
the producer's is one key (the cluster is down; the job's broker watch names it). The first line of a key
is printed; its repeats are counted, not printed. The count is printed when a line
of another key is printed (a state change), and at most every ``REPEAT_S`` while
the repeats go on (on the next repeat, or ``tick()``), and on ``flush()``.
A client whose properties set ``debug`` logs everything, unlimited.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from dataclasses import dataclass

REPEAT_S = 60.0
# the parts of a line left out of its key: the client's name, the thread, the broker
_NAME = re.compile(r"\[?rdkafka#[a-z]+-\d+\]?\s*")
_THREAD = re.compile(r"\[thrd:[^\]]*\]:\s*(?:[\w.\-]+(?::\d+)?(?:/\w+)?: )*")
_NUMBER = re.compile(r"\d+")


@dataclass
class _Seen:
    text: str  # the last line printed for the key
    printed: float
    repeats: int = 0  # left out since then


class LogLimiter:
    """librdkafka's ``logger``: it calls ``log(level, fmt, *args)``; see the module docstring."""

    def __init__(self, stream=None, repeat_s: float = REPEAT_S, clock=time.monotonic) -> None:
        self.stream = stream
        self.repeat_s = repeat_s
        self.clock = clock
        self.seen: dict[str, _Seen] = {}
        self.suppressed = 0  # lines left out so far, over all keys
        self._lock = threading.Lock()

    def log(self, level: int, fmt: str, *args) -> None:  # noqa: ARG002 - logging's signature
        text = fmt % args if args else fmt
        key = _NUMBER.sub("#", _THREAD.sub("", _NAME.sub("", text)))
        with self._lock:
            now = self.clock()
            seen = self.seen.get(key)
            if seen is not None:  # a repeat: counted; the count is due after REPEAT_S
                seen.repeats += 1
                self.suppressed += 1
                if now - seen.printed >= self.repeat_s:
                    self._report(lambda other: other is seen)
                return
            self._report(lambda _: True)  # a new state: first what the others repeated
            self._write(f"deltaflow: librdkafka: {text}")
            self.seen[key] = _Seen(text, now)

    def tick(self) -> None:
        """Prints the counts of repeats older than ``REPEAT_S`` (the job calls it)."""
        with self._lock:
            now = self.clock()
            self._report(lambda seen: now - seen.printed >= self.repeat_s)

    def flush(self) -> None:
        """Prints every count of repeats not printed yet (the job calls it when it ends)."""
        with self._lock:
            self._report(lambda _: True)

    def _report(self, due) -> None:
        now = self.clock()
        for seen in self.seen.values():
            if seen.repeats and due(seen):
                span = now - seen.printed
                over = f" over {span:.0f} s" if span >= 1 else ""
                self._write(
                    f"deltaflow: librdkafka: {seen.repeats} more line(s) like "
                    f"'{_shorten(seen.text)}'{over}, left out"
                )
                seen.repeats, seen.printed = 0, now

    def _write(self, line: str) -> None:
        stream = self.stream or sys.stderr
        try:
            print(line, file=stream, flush=True)
        except (OSError, ValueError):  # stderr closed: nothing to tell anyone
            pass


def _shorten(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


LIMITER = LogLimiter()
