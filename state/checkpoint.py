"""``Checkpointer``: the checkpoint of a job as one short function of numbered steps.

The protocol (the caller does step 0; ``checkpoint`` does the rest):

0. The caller flushes its operators and every sink BEFORE calling: all output
   produced from the input up to ``offsets`` is acknowledged by the broker.
1. The epoch must move forward: a stale one means two writers share the state
   directory, and writing it would mix their state.
2. ONE LMDB write transaction holds every table's buffered state changes, the
   source ``offsets`` (the positions after the last record that produced those
   changes), the ``epoch`` and the caller's ``extra`` entries. LMDB commits a
   transaction atomically, so after a crash at any instant the directory holds
   exactly the previous checkpoint or exactly this one: state and offsets always
   come from the same epoch.
3. The read transaction is renewed (inside ``StateBackend.commit``), so that
   readers see this checkpoint and no old snapshot keeps the file growing.

A crash between step 0 and step 2 leaves the previous checkpoint: the job
resumes from its offsets and produces that epoch's output again (at-least-once;
an upsert sink ends with the same rows).

``restore()`` reads the last checkpoint back: ``(epoch, offsets)``, or None for a
fresh state directory.
"""

from __future__ import annotations

import time

from deltaflow.formats.errors import StateError
from deltaflow.state.backend import StateBackend

EPOCH_KEY = "epoch"
OFFSETS_KEY = "offsets"
TIME_KEY = "checkpoint.time_ms"


class Checkpointer:
    """Writes and restores checkpoints of one job's ``StateBackend``."""

    def __init__(self, backend: StateBackend) -> None:
        self.backend = backend

    def checkpoint(
        self, epoch: int, offsets: dict[str, object], extra: dict[str, object] | None = None
    ) -> None:
        """Commit the state of ``epoch`` with the source ``offsets`` that produced it."""
        # 1. the epoch moves forward
        last = self.backend.meta(EPOCH_KEY)
        if last is not None and epoch <= int(last):
            raise StateError(
                f"state directory {self.backend.path}: checkpoint epoch {epoch} is not after the "
                f"last committed epoch {last}; is another job writing to this --state-dir?"
            )
        # 2. one LMDB transaction: state + offsets + epoch + extra
        meta = dict(extra or {})
        meta.update({EPOCH_KEY: epoch, OFFSETS_KEY: offsets, TIME_KEY: int(time.time() * 1000)})
        self.backend.commit(meta)
        # 3. (in commit) the read transaction is renewed

    def restore(self) -> tuple[int, dict[str, object]] | None:
        """The last checkpoint's ``(epoch, offsets)``, or None when there is none."""
        self.backend.discard()
        epoch = self.backend.meta(EPOCH_KEY)
        if epoch is None:
            return None
        return int(epoch), dict(self.backend.meta(OFFSETS_KEY) or {})
