"""``PackedIndex``: a secondary index as one ordinary LMDB entry per index key.

The value of an index key is the sorted primary keys of its rows packed together: a
fixed index (made for a one-column integer primary key) concatenates their 9-byte
encodings; any other index stores each as a 2-byte big-endian length and the key's
bytes (a primary key is an LMDB key of the row table, so it is at most 511 bytes).
The index key is stored once and its rows cost only their primary keys, without the
per-duplicate node and sub-page overhead of an LMDB ``DUPSORT`` table.

The entry ``EMPTY`` (no index key encodes to it, and it sorts first) holds a header:
whether the index is fixed, and how many (index key, primary key) pairs it holds.

It is built on a ``StateTable`` of raw bytes, so writes are buffered until
``StateBackend.commit()`` and the undo log's key-level before-images cover it: a
roll-back restores each touched index key's whole old value, and the header.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from deltaflow.state.keys import EMPTY
from deltaflow.state.table import DELETED

if TYPE_CHECKING:
    from deltaflow.state.backend import StateBackend

Pair = tuple[bytes, bytes]
FIXED_BYTES = 9  # a one-column integer primary key: NULL flag + 8 bytes
_HEADER = struct.Struct(">?Q")  # fixed, pair count
_LENGTH = struct.Struct(">H")


class RawBytes:
    """The value codec of a table whose values are bytes, stored as they are."""

    encode = staticmethod(bytes)
    decode = staticmethod(bytes)


class PackedIndex:
    """(index key, primary key) pairs packed per index key; see the module docstring."""

    def __init__(self, backend: StateBackend, name: str, fixed: bool) -> None:
        self.name = name
        self._backend = backend
        self._table = backend.table(name, RawBytes())  # type: ignore[arg-type]
        header = backend.read_txn().get(EMPTY, db=self._table.db)
        # an existing index keeps the layout it was written with
        self.fixed = fixed if header is None else _HEADER.unpack(header)[0]

    # -- reads ----------------------------------------------------------------

    def lookup_many(self, keys: list[bytes]) -> list[list[bytes]]:
        """For each of ``keys`` (ascending), its primary keys in order, buffered writes
        merged in; LMDB is read once, in key order."""
        unpack = self._unpack
        return [unpack(value) if value else [] for value in self._table.get_many_encoded(keys)]

    def pairs(self) -> list[Pair]:
        """Every (index key, primary key) pair in order, buffered writes merged in."""
        unpack = self._unpack
        return [
            (key, dup)
            for key, value in self._table.scan_encoded(b"")
            if key != EMPTY
            for dup in unpack(value)  # type: ignore[arg-type]
        ]

    def __len__(self) -> int:
        """The number of pairs, buffered writes included."""
        return _count(self._table.get_encoded(EMPTY))  # type: ignore[arg-type]

    def committed_len(self) -> int:
        """The number of pairs of the last commit."""
        return _count(self._backend.read_txn().get(EMPTY, db=self._table.db))

    # -- writes ---------------------------------------------------------------

    def update(self, gone: list[Pair], added: list[Pair]) -> None:
        """Removes the pairs ``gone``, then adds the pairs ``added`` (buffered): each
        touched index key is read once (one sorted read) and rewritten once."""
        touched: dict[bytes, tuple[list[bytes], list[bytes]]] = {}
        for key, dup in gone:
            touched.setdefault(key, ([], []))[0].append(dup)
        for key, dup in added:
            touched.setdefault(key, ([], []))[1].append(dup)
        if not touched:
            return
        keys = sorted(touched)
        unpack, pack = self._unpack, self._pack
        delta = 0
        puts: list[tuple[bytes, object]] = []
        for key, value in zip(keys, self._table.get_many_encoded(keys), strict=True):
            out, into = touched[key]
            dups = set(unpack(value)) if value else set()  # type: ignore[arg-type]
            before = len(dups)
            dups.difference_update(out)
            dups.update(into)
            delta += len(dups) - before
            puts.append((key, pack(sorted(dups)) if dups else DELETED))
        puts.append((EMPTY, _HEADER.pack(self.fixed, len(self) + delta)))
        self._table.put_many_encoded(puts)

    # -- packing --------------------------------------------------------------

    def _unpack(self, value: bytes) -> list[bytes]:
        if self.fixed:
            return [value[i : i + FIXED_BYTES] for i in range(0, len(value), FIXED_BYTES)]
        out, pos, end = [], 0, len(value)
        unpack_length = _LENGTH.unpack_from
        while pos < end:
            (length,) = unpack_length(value, pos)
            pos += 2
            out.append(value[pos : pos + length])
            pos += length
        return out

    def _pack(self, dups: list[bytes]) -> bytes:
        if self.fixed:
            return b"".join(dups)
        length = _LENGTH.pack
        return b"".join([length(len(dup)) + dup for dup in dups])


def _count(header: bytes | None) -> int:
    return 0 if header is None else _HEADER.unpack(header)[1]
