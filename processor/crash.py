"""Crash injection for the exactly-once tests: ``DELTAFLOW_CRASH_AT`` kills the job at a point.

``DELTAFLOW_CRASH_AT="step2:7"`` makes the process SIGKILL itself the 7th time it
reaches the checkpoint point ``step2``; several points are separated by commas
(``"batch:40,step3:2"``). ``stepN`` comes right after step N of the checkpoint,
``Job.checkpoint`` in ``processor/job.py``, whose numbering ARCHITECTURE.md section 3
shares:

- ``batch``: after a source batch went through the graph and its output to the sinks;
- ``step0``: the graph is flushed into the sinks, the sinks not yet flushed;
- ``step1``: every sink is flushed, the LMDB checkpoint not yet written;
- ``step2``: LMDB holds the epoch as pending, its Kafka transaction is not committed
  (reached only by an epoch that wrote to a Kafka transaction, as ``step3``);
- ``step3``: the Kafka transaction is committed, the pending mark not yet cleared;
- ``step4``: the checkpoint is final.

Without the variable ``point`` is a function that does nothing.
"""

from __future__ import annotations

import os
import signal

ENV = "DELTAFLOW_CRASH_AT"


def parse(text: str) -> dict[str, int]:
    """``"step2:7,batch:3"`` -> ``{"step2": 7, "batch": 3}``."""
    plan = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, count = part.partition(":")
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"{ENV}: write NAME:N with N >= 1, not {part!r}")
        plan[name.strip()] = int(count)
    return plan


_PLAN = parse(os.environ.get(ENV, ""))
_REACHED: dict[str, int] = {}


def _point(name: str) -> None:
    target = _PLAN.get(name)
    if target is None:
        return
    _REACHED[name] = _REACHED.get(name, 0) + 1
    if _REACHED[name] == target:
        os.kill(os.getpid(), signal.SIGKILL)


def _nothing(name: str) -> None:  # noqa: ARG001
    return None


point = _point if _PLAN else _nothing
