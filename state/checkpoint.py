"""``Checkpointer``: the checkpoint of a job as one short function of numbered steps.

The protocol (the caller does step 0; ``checkpoint`` does the rest):

0. The caller flushes its operators and every sink BEFORE calling: all output
   produced from the input up to ``offsets`` is acknowledged by the broker (with a
   transactional sink: sent inside the open Kafka transaction, not yet committed).
1. The epoch must move forward: a stale one means two writers share the state
   directory, and writing it would mix their state.
2. ONE LMDB write transaction holds every table's buffered state changes, the
   source ``offsets`` (the positions after the last record that produced those
   changes), the ``epoch`` and the caller's ``extra`` entries. LMDB commits a
   transaction atomically, so after a crash at any instant the directory holds
   exactly the previous checkpoint or exactly this one: state and offsets always
   come from the same epoch. With a transactional sink the same transaction also
   saves the before-image of every key it writes (the undo log) and marks the
   epoch pending.
3. With a transactional sink: ``commit_sink()`` commits the Kafka transaction.
4. With a transactional sink: one LMDB transaction drops the undo log and the
   pending mark; the checkpoint is final.
5. (Inside every commit) the read transaction is renewed, so that readers see
   this checkpoint and no old snapshot keeps the file growing.

Without a transactional sink a crash before step 2 redoes the epoch from the
previous offsets: at-least-once, and an upsert sink ends with the same rows.
With one, a crash between steps 2 and 4 leaves the epoch pending: ``restore``
asks ``sink_committed(epoch)`` whether the Kafka transaction made it (e.g. from
the transactional consumer-group offsets the sink committed with it). If it did,
the checkpoint is made final; if not, or if there is no way to tell, the undo
log rolls state and offsets back to the previous epoch, which is then redone:
its output appears exactly once for ``read_committed`` readers.
"""

from __future__ import annotations

import time
from collections.abc import Callable

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

    def checkpoint(
        self,
        epoch: int,
        offsets: dict[str, object],
        extra: dict[str, object] | None = None,
        commit_sink: Callable[[], None] | None = None,
    ) -> None:
        """Commit the state of ``epoch`` with the source ``offsets`` that produced it."""
        # 1. the epoch moves forward
        last = self.backend.meta(EPOCH_KEY)
        if last is not None and epoch <= int(last):
            raise StateError(
                f"state directory {self.backend.path}: checkpoint epoch {epoch} is not after the "
                f"last committed epoch {last}; is another job writing to this --state-dir?"
            )
        # 2. one LMDB transaction: state + offsets + epoch + extra (+ undo log, pending mark)
        meta = dict(extra or {})
        meta.update({EPOCH_KEY: epoch, OFFSETS_KEY: offsets, TIME_KEY: int(time.time() * 1000)})
        if commit_sink is None:
            self.backend.commit(meta)
            return
        meta[PENDING_KEY] = epoch
        self.backend.commit(meta, undo=True)
        # 3. the sink's transaction commits
        commit_sink()
        # 4. the checkpoint is final: drop the undo log and the pending mark
        self.backend.forget_undo({PENDING_KEY: None})

    def restore(
        self, sink_committed: Callable[[int], bool] | None = None
    ) -> tuple[int, dict[str, object]] | None:
        """The last final checkpoint's ``(epoch, offsets)``, or None when there is none.

        A pending epoch (the job died between steps 2 and 4) is made final when
        ``sink_committed(epoch)`` says its sink transaction committed, and rolled
        back to the previous checkpoint otherwise.
        """
        self.backend.discard()
        pending = self.backend.meta(PENDING_KEY)
        if pending is not None:
            if sink_committed is not None and sink_committed(int(pending)):
                self.backend.forget_undo({PENDING_KEY: None})
            else:
                self.backend.roll_back()
        epoch = self.backend.meta(EPOCH_KEY)
        if epoch is None:
            return None
        return int(epoch), dict(self.backend.meta(OFFSETS_KEY) or {})
