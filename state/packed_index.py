"""``PackedIndex``: a secondary index as one ordinary LMDB entry per index key.

The value of an index key is the sorted primary keys of its rows packed together: a
fixed index (made for a one-column integer primary key) concatenates their 9-byte
encodings; any other index stores each as a 2-byte big-endian length and the key's
bytes (a primary key is an LMDB key of the row table, so it is at most 511 bytes).
The index key is stored once and its rows cost only their primary keys, without the
per-duplicate node and sub-page overhead of an LMDB ``DUPSORT`` table.

The entry ``EMPTY`` (no index key encodes to it, and it sorts first) holds a header,
packed as the one element of a value: whether the index is fixed, and how many
(index key, primary key) pairs it holds. Its raw value is 9 bytes in a fixed index
and 11 (length prefix first) in another, which tells an opened index its layout.

It is built on a ``StateTable`` whose buffered values are the sorted lists of primary
keys themselves, changed in place by each batch and packed once, at the commit (one
unpack and one pack per touched index key and checkpoint). The undo log's key-level
before-images cover it: a roll-back restores each touched index key's whole old value,
and the header.
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_left
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING

from deltaflow.state.keys import EMPTY
from deltaflow.state.table import DELETED

if TYPE_CHECKING:
    from deltaflow.state.store import TableStore

Pair = tuple[bytes, bytes]
FIXED_BYTES = 9  # a one-column integer primary key: NULL flag + 8 bytes
KEEP_KEYS = 100_000  # index keys whose lists stay decoded after a commit (StateTable keep)
_HEADER = struct.Struct(">?Q")  # fixed, pair count
_first = itemgetter(0)
_LENGTH = struct.Struct(">H")
# splits a fixed index's value into its 9-byte keys (in C: faster than slicing in a loop)
_unpack_fixed = re.compile(b".{%d}" % FIXED_BYTES, re.DOTALL).findall


class PackedIndex:
    """(index key, primary key) pairs packed per index key; see the module docstring."""

    def __init__(self, backend: TableStore, name: str, fixed: bool) -> None:
        self.name = name
        self._backend = backend
        db = backend.db(name.encode(), create=True)  # before the read: opening ends it
        header = backend.read_txn().get(EMPTY, db=db)
        # an existing index keeps the layout it was written with
        self.fixed = fixed if header is None else len(header) == _HEADER.size
        self._codec = _Codec(self.fixed)
        # the lists of the index keys touched lately stay decoded across commits
        self._table = backend.table(name, self._codec, KEEP_KEYS)  # type: ignore[arg-type]

    # -- reads ----------------------------------------------------------------

    def lookup_many(self, keys: list[bytes]) -> list[list[bytes]]:
        """For each of ``keys`` (ascending), its primary keys in order, buffered writes
        merged in; LMDB is read once, in key order."""
        return [list(dups) if dups else [] for dups in self._table.get_many_encoded(keys)]

    def pairs(self) -> list[Pair]:
        """Every (index key, primary key) pair in order, buffered writes merged in."""
        return [
            (key, dup)
            for key, dups in self._table.scan_encoded(b"")
            if key != EMPTY
            for dup in dups  # type: ignore[attr-defined]
        ]

    def __len__(self) -> int:
        """The number of pairs, buffered writes included."""
        return _count(self._table.get_encoded(EMPTY))  # type: ignore[arg-type]

    def committed_len(self) -> int:
        """The number of pairs of the last commit."""
        header = self._backend.read_txn().get(EMPTY, db=self._table.db)
        return 0 if header is None else _count(self._codec.decode(header))

    # -- writes ---------------------------------------------------------------

    def update(self, gone: list[Pair], added: list[Pair]) -> None:
        """Removes the pairs ``gone``, then adds the pairs ``added`` (buffered): the
        touched index keys are read at once (kept ones from memory, the rest in one
        sorted read) and their lists changed in place."""
        keys = list(dict.fromkeys(chain(map(_first, gone), map(_first, added))))
        if not keys:
            return
        stored = self._table.get_many_encoded(keys)
        lists = {key: [] if dups is None else dups for key, dups in zip(keys, stored, strict=True)}
        count = len(self)
        for key, dup in gone:
            dups = lists[key]
            at = bisect_left(dups, dup)
            if at < len(dups) and dups[at] == dup:
                del dups[at]
                count -= 1
        for key, dup in added:
            dups = lists[key]
            if not dups or dups[-1] < dup:  # past the last: new keys often come in order
                dups.append(dup)
                count += 1
                continue
            at = bisect_left(dups, dup)
            if dups[at] != dup:
                dups.insert(at, dup)
                count += 1
        puts: list[tuple[bytes, object]] = [
            (key, dups if dups else DELETED) for key, dups in lists.items()
        ]
        puts.append((EMPTY, [_HEADER.pack(self.fixed, count)]))
        self._table.put_many_encoded(puts)


class _Codec:
    """A ``StateTable`` value codec: a sorted list of primary keys <-> their packed bytes."""

    def __init__(self, fixed: bool) -> None:
        self.encode = b"".join if fixed else _pack_lengths
        self.decode = _unpack_fixed if fixed else _unpack_lengths

    def encode_many(self, values: list[list[bytes]]) -> list[bytes]:
        return list(map(self.encode, values))


def _pack_lengths(dups: list[bytes]) -> bytes:
    length = _LENGTH.pack
    return b"".join([length(len(dup)) + dup for dup in dups])


def _unpack_lengths(value: bytes) -> list[bytes]:
    out, pos, end = [], 0, len(value)
    unpack_length = _LENGTH.unpack_from
    while pos < end:
        (length,) = unpack_length(value, pos)
        pos += 2
        out.append(value[pos : pos + length])
        pos += length
    return out


def _count(header: list[bytes] | None) -> int:
    return 0 if header is None else _HEADER.unpack(header[0])[1]
