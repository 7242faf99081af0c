"""``deltaflow state inspect``: what a state directory holds.

Prints whether a job runs on the directory (the PID holding its lock), the plan and
the tables (topics, brokers, formats) the directory belongs to, the last checkpoint
(epoch, time and source offsets) and every table with its committed entry count and
size. The environment is opened read-only and the lock is not taken, so a running
job can be inspected.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import TextIO

from deltaflow.state.backend import StateBackend
from deltaflow.state.checkpoint import (
    EPOCH_KEY,
    IDENTITY_KEY,
    OFFSETS_KEY,
    PENDING_KEY,
    TIME_KEY,
)
from deltaflow.state.lock import holder


def inspect_cli(state_dir: str, out: TextIO | None = None) -> int:
    """Print the contents of ``state_dir``; a missing or foreign directory is a StateError."""
    out = out or sys.stdout
    with StateBackend(state_dir, create=False, readonly=True) as backend:
        lines = describe(backend)
    pid = holder(state_dir)
    if pid is None:
        lines.append("in use: no (no job runs on it)")
    else:
        lines.append(f"in use: yes, by the job running as process {pid or '(unknown)'}")
    for line in lines:
        print(line, file=out)
    return 0


def describe(backend: StateBackend) -> list[str]:
    """The report, line by line."""
    lines = [f"state directory {backend.path}"]
    fingerprint = backend.meta("plan.fingerprint")
    if fingerprint is not None:
        lines.append(f"plan: {backend.meta('plan.description')} (fingerprint {fingerprint})")
    identity = backend.meta(IDENTITY_KEY)
    for table, props in sorted(identity.items() if isinstance(identity, dict) else []):
        lines.append(f"{table}: " + ", ".join(f"{k} = {v!r}" for k, v in sorted(props.items())))
    epoch = backend.meta(EPOCH_KEY)
    if epoch is None:
        lines.append("last checkpoint: none")
    else:
        lines.append(f"last checkpoint: epoch {epoch}{_when(backend.meta(TIME_KEY))}")
        offsets = backend.meta(OFFSETS_KEY) or {}
        for source in sorted(offsets):
            lines.append(f"  offsets {source}: {json.dumps(offsets[source])}")
        pending = backend.meta(PENDING_KEY)
        if pending is not None:
            lines.append(
                f"  epoch {pending} waits for its sink transaction: the next start keeps it "
                "if the sink committed, and rolls it back otherwise"
            )
    stats = backend.stats()
    width = max([len("table")] + [len(name) for name, _, _ in stats])
    lines.append(f"{'table':<{width}}  {'entries':>12}  {'bytes':>14}")
    for name, entries, size in stats:
        lines.append(f"{name:<{width}}  {entries:>12,}  {size:>14,}")
    total_entries = sum(entries for _, entries, _ in stats)
    total_bytes = sum(size for _, _, size in stats)
    lines.append(f"{'total':<{width}}  {total_entries:>12,}  {total_bytes:>14,}")
    return lines


def _when(millis: object) -> str:
    if not isinstance(millis, int):
        return ""
    stamp = datetime.fromtimestamp(millis / 1000, tz=UTC)
    return f" at {stamp:%Y-%m-%d %H:%M:%S} UTC"
