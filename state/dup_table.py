"""``DupTable``: a set of (key, duplicate) byte pairs in an LMDB ``DUPSORT`` sub-database.

A secondary index stores each index key once, with the primary keys of its rows as the
key's sorted duplicates, instead of one whole ``index key + primary key`` entry per row:
the index key is not repeated per row and a duplicate carries no value. Writes are
buffered per pair (present or absent) until ``StateBackend.commit()``; reads merge the
buffer in. The undo log records each written pair's presence before the commit (see
``deltaflow.state.undo``), so a roll-back restores exactly the pairs it touched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deltaflow.state.backend import StateBackend

Pair = tuple[bytes, bytes]


class DupTable:
    """Buffered (key, duplicate) pairs; see the module docstring."""

    dupsort = True

    def __init__(self, backend: StateBackend, name: str, db: object) -> None:
        self.name = name
        self._backend = backend
        self._db = db
        self._buffer: dict[bytes, dict[bytes, bool]] = {}  # key -> {dup: present}

    # -- reads ----------------------------------------------------------------

    def lookup_many(self, keys: list[bytes]) -> list[list[bytes]]:
        """For each of ``keys`` (ascending), its duplicates in order, buffered writes merged
        in. One cursor serves every key, moving forward."""
        cursor = self._backend.read_txn().cursor(db=self._db)
        buffer = self._buffer
        out = []
        for key in keys:
            stored = list(cursor.iternext_dup(keys=False)) if cursor.set_key(key) else []
            pending = buffer.get(key) if buffer else None
            if pending:
                merged = dict.fromkeys(stored, True)
                merged.update(pending)
                stored = sorted(dup for dup, present in merged.items() if present)
            out.append(stored)
        return out

    def pairs(self) -> list[Pair]:
        """Every committed pair in order (buffered writes left out)."""
        cursor = self._backend.read_txn().cursor(db=self._db)
        return list(cursor.iternext(keys=True, values=True))

    def __len__(self) -> int:
        """The number of pairs, buffered writes included."""
        cursor = self._backend.read_txn().cursor(db=self._db)
        count = self._backend.read_txn().stat(self._db)["entries"]
        for key, pending in self._buffer.items():
            for dup, present in pending.items():
                count += present - cursor.set_key_dup(key, dup)
        return count

    # -- writes ---------------------------------------------------------------

    def update(self, gone: list[Pair], added: list[Pair]) -> None:
        """Removes the pairs ``gone``, then adds the pairs ``added`` (buffered)."""
        buffer = self._buffer
        for key, dup in gone:
            pending = buffer.get(key)
            if pending is None:
                pending = buffer[key] = {}
            pending[dup] = False
        for key, dup in added:
            pending = buffer.get(key)
            if pending is None:
                pending = buffer[key] = {}
            pending[dup] = True

    # -- for the backend ------------------------------------------------------

    @property
    def fixed(self) -> bool:
        """Whether every duplicate has one size (the table is ``DUPFIXED``)."""
        return bool(self._db.flags(self._backend.read_txn())["dupfixed"])  # type: ignore[attr-defined]

    @property
    def db(self) -> object:
        return self._db

    def pending(self) -> list[tuple[bytes, bytes, bool]]:
        """The buffered writes in (key, duplicate) order: (key, duplicate, present)."""
        return sorted(
            (key, dup, present)
            for key, pending in self._buffer.items()
            for dup, present in pending.items()
        )

    def has_pending(self) -> bool:
        return bool(self._buffer)

    def clear(self) -> None:
        self._buffer = {}
