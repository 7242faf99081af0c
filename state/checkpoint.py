"""``Checkpointer``: the LMDB half of a job's checkpoint, and its restore after a crash.

The checkpoint itself is one function of numbered steps, ``processor/job.py:
Job.checkpoint`` (ARCHITECTURE.md section 3); this module does its steps 2 and 4 on the state directory:

2. ``commit``: ONE LMDB write transaction holds every table's buffered state changes,
   the source ``offsets`` (the positions after the last record that produced those
   changes), the ``epoch`` and the caller's ``extra`` entries. LMDB commits a
   transaction atomically, so after a crash at any instant the directory holds
   exactly the previous checkpoint or exactly this one: state and offsets always
   come from the same epoch. With ``pending`` (the epoch wrote to a Kafka transaction,
   committed in step 3) the same transaction also saves the before-image of every key
   it writes (the undo log) and marks the epoch pending. An epoch that does not move
   forward is refused first: two writers would share the state directory.
4. ``finalize``: one LMDB transaction drops the undo log and the pending mark; the
   checkpoint is final.

Every LMDB commit also renews the read transaction, so that readers see the
checkpoint and no old snapshot keeps the file growing.

A crash between steps 2 and 4 leaves the epoch pending: ``restore`` asks
``sink_committed(epoch)`` whether the Kafka transaction made it (e.g. from the
transactional consumer-group offsets the sink committed with it). If it did, the
checkpoint is made final; if not, or if there is no way to tell, the undo log rolls
state and offsets back to the previous epoch, which is then redone: its output
appears exactly once for ``read_committed`` readers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from deltaflow.formats.errors import StateError
from deltaflow.state.backend import StateBackend

EPOCH_KEY = "epoch"
OFFSETS_KEY = "offsets"
TIME_KEY = "checkpoint.time_ms"
PENDING_KEY = "checkpoint.pending"
IDENTITY_KEY = "tables.identity"  # what each table reads or writes (processor/identity.py)


class Checkpointer:
    """Writes and restores checkpoints of one job's ``StateBackend``."""

    def __init__(self, backend: StateBackend) -> None:
        self.backend = backend

    def commit(
        self,
        epoch: int,
        offsets: dict[str, object],
        extra: dict[str, object] | None = None,
        pending: bool = False,
    ) -> None:
        """Step 2: the state of ``epoch`` with the source ``offsets`` that produced it, in
        one LMDB transaction (``pending``: with the undo log and the pending mark)."""
        last = self.backend.meta(EPOCH_KEY)
        if last is not None and epoch <= int(last):
            raise StateError(
                f"state directory {self.backend.path}: checkpoint epoch {epoch} is not after the "
                f"last committed epoch {last}; is another job writing to this --state-dir?"
            )
        meta = dict(extra or {})
        meta.update({EPOCH_KEY: epoch, OFFSETS_KEY: offsets, TIME_KEY: int(time.time() * 1000)})
        if pending:
            meta[PENDING_KEY] = epoch
        self.backend.commit(meta, undo=pending)

    def finalize(self) -> None:
        """Step 4: the pending epoch is final: the undo log and the pending mark go."""
        self.backend.forget_undo({PENDING_KEY: None})

    def restore(
        self, sink_committed: Callable[[int], bool] | None = None
    ) -> tuple[int, dict[str, Any]] | None:
        """The last final checkpoint's ``(epoch, offsets)``, or None when there is none.

        A pending epoch (the job died between steps 2 and 4) is made final when
        ``sink_committed(epoch)`` says its sink transaction committed, and rolled
        back to the previous checkpoint otherwise.
        """
        self.backend.discard()
        pending = self.backend.meta(PENDING_KEY)
        if pending is not None:
            if sink_committed is not None and sink_committed(int(pending)):
                self.finalize()
            else:
                self.backend.roll_back()
        epoch = self.backend.meta(EPOCH_KEY)
        if epoch is None:
            return None
        return int(epoch), dict(self.backend.meta(OFFSETS_KEY) or {})
