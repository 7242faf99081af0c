"""``PackedIndex``: a secondary index as one ordinary LMDB entry per index key.

The value of an index key is the sorted primary keys of its rows packed together, in
one of three layouts:

- *fixed* (made for a one-column integer primary key): their 9-byte encodings
  concatenated;
- *integer keys* (made for a primary key of two or more integer columns, TPC-H
  lineitem's): their ``encode_key`` bytes concatenated, each integer's tag telling its
  length, split again by one regular expression (in C) that knows every tag of an
  integer in BIGINT's range and NULL (a value it cannot split whole, an integer beyond
  BIGINT in an untyped key, is split by decoding it);
- *lengths* (any other key): each as a 2-byte big-endian length and the key's bytes (a
  primary key is an LMDB key of the row table, so it is at most 511 bytes).

The index key is stored once and its rows cost only their primary keys, without the
per-duplicate node and sub-page overhead of an LMDB ``DUPSORT`` table.

The entry ``EMPTY`` (no index key encodes to it, and it sorts first) holds a header,
packed as the one element of a value: how many (index key, primary key) pairs the index
holds. Fixed and lengths: whether the index is fixed and the count (raw, 9 bytes in a
fixed index, 11 with the length prefix in the other); integer keys: the key
``(count, columns, 0, ...)`` of as many integer columns as its primary keys. The raw
header's first byte (0x01, 0x00, an integer's tag) tells an opened index its layout.

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

from deltaflow.state.keys import (
    EMPTY,
    INT_BIG_NEG,
    INT_BIG_POS,
    INT_ZERO,
    NONE,
    decode_key,
    encode_key,
)
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

    def __init__(self, backend: TableStore, name: str, fixed: bool, int_columns: int = 0) -> None:
        self.name = name
        self._backend = backend
        db = backend.db(name.encode(), create=True)  # before the read: opening ends it
        header = backend.read_txn().get(EMPTY, db=db)
        # an existing index keeps the layout it was written with
        if header is None:
            self.fixed = fixed
            self.int_columns = 0 if fixed or int_columns < 2 else int_columns
        else:
            self.fixed = header[0] == 1 and len(header) == _HEADER.size
            self.int_columns = 0 if header[0] in (0, 1) else decode_key(header)[1]
        self._codec: _Codec | _IntKeys = (
            _IntKeys(self.int_columns) if self.int_columns else _Codec(self.fixed)
        )
        # the lists of the index keys touched lately stay decoded across commits
        self._table = backend.table(name, self._codec, KEEP_KEYS)  # type: ignore[arg-type]

    @staticmethod
    def codec_for(int_columns: int) -> _IntKeys:
        """The codec of the integer keys layout for keys of ``int_columns`` columns."""
        return _IntKeys(int_columns)

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
        return self._codec.count(self._table.get_encoded(EMPTY))  # type: ignore[arg-type]

    def committed_len(self) -> int:
        """The number of pairs of the last commit."""
        header = self._backend.read_txn().get(EMPTY, db=self._table.db)
        return 0 if header is None else self._codec.count(self._codec.decode(header))

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
        puts.append((EMPTY, [self._codec.header(count)]))
        self._table.put_many_encoded(puts)


class _Codec:
    """A ``StateTable`` value codec: a sorted list of primary keys <-> their packed bytes."""

    def __init__(self, fixed: bool) -> None:
        self.fixed = fixed
        self.encode = b"".join if fixed else _pack_lengths
        self.decode = _unpack_fixed if fixed else _unpack_lengths

    def encode_many(self, values: list[list[bytes]]) -> list[bytes]:
        return list(map(self.encode, values))

    def header(self, count: int) -> bytes:
        return _HEADER.pack(self.fixed, count)

    @staticmethod
    def count(header: list[bytes] | None) -> int:
        return 0 if header is None else _HEADER.unpack(header[0])[1]


class _IntKeys:
    """The codec of the integer keys layout (module docstring) for keys of ``columns``
    integer columns: packed by one join, split by one regular expression."""

    def __init__(self, columns: int) -> None:
        self.columns = columns
        self.encode = b"".join
        self._split = re.compile(b"(?:%s){%d}" % (_INT_ELEMENT, columns), re.DOTALL).findall

    def encode_many(self, values: list[list[bytes]]) -> list[bytes]:
        return list(map(b"".join, values))

    def decode(self, value: bytes) -> list[bytes]:
        keys = self._split(value)
        if sum(map(len, keys)) == len(value):  # every byte in a key: split whole, in order
            return keys
        flat, n = decode_key(value), self.columns  # a value the expression does not know
        return [encode_key(flat[i : i + n]) for i in range(0, len(flat), n)]

    def header(self, count: int) -> bytes:
        return encode_key((count, self.columns) + (0,) * (self.columns - 2))

    @staticmethod
    def count(header: list[bytes] | None) -> int:
        return 0 if header is None else decode_key(header[0])[0]  # type: ignore[no-any-return]


def _int_element() -> bytes:
    """An expression matching one ``encode_key`` element of an integer in BIGINT's range
    or NULL: a tag, then as many bytes as it says (``deltaflow.state.keys``)."""
    options = [re.escape(bytes((NONE,))), re.escape(bytes((INT_ZERO,)))]
    for length in range(1, 8):
        for tag in (INT_ZERO + length, INT_ZERO - length):
            options.append(re.escape(bytes((tag,))) + b".{%d}" % length)
    for tag, length in ((INT_BIG_POS, 8), (INT_BIG_NEG, 0xFFFFFFFF - 8)):  # 8 bytes
        options.append(re.escape(bytes((tag,)) + struct.pack(">I", length)) + b".{8}")
    return b"(?:" + b"|".join(options) + b")"


_INT_ELEMENT = _int_element()


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
