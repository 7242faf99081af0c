"""``StateTable``: one named LMDB sub-database of tuple keys and Python values.

Writes are buffered in a dict until ``StateBackend.commit()`` writes every table's
buffer in one transaction; reads see the buffered writes first. Keys are encoded
with ``deltaflow.state.keys`` (so LMDB order is tuple order), values with
``deltaflow.state.values``. Do not change a value object after ``put``: the buffer
holds the object itself and encodes it at commit.

A table opened with ``keep`` > 0 also keeps up to that many committed values decoded
(the writes of the last commits and the values read since), so that a key read again
after a commit is not read from LMDB and decoded again; past ``keep`` it starts over.
A value read from it is shared: change it only to ``put`` it back (as ``PackedIndex``
does with its lists).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING

from deltaflow.state.keys import EMPTY, decode_key, encode_key, prefix_end
from deltaflow.state.values import TypedValues, decode_value, encode_value

if TYPE_CHECKING:
    from deltaflow.state.store import Database, Store

DELETED = object()  # buffer marker: the key is deleted
_MISSING = object()


class StateTable:
    """A keyed table with write-back buffering; see the module docstring."""

    def __init__(
        self,
        backend: Store,
        name: str,
        db: Database,
        values: TypedValues | None = None,
        keep: int = 0,
    ) -> None:
        self.name = name
        self._backend = backend
        self._db = db
        self._encode_many = _encoder_of(values)
        self._decode = decode_value if values is None else values.decode
        self._buffer: dict[bytes, object] = {}
        # committed values kept decoded (DELETED: known absent); see the module docstring
        self._clean: dict[bytes, object] = {}
        self._keep = keep
        # The buffered keys in order, for scans: keys added since the last scan wait
        # in _unsorted and are merged in by the next scan (Timsort merges the two runs).
        self._sorted: list[bytes] = []
        self._unsorted: list[bytes] = []
        # counts the commits and discards: a value put before one is no longer buffered
        # (an operator that changes its buffered values in place puts new ones after it)
        self.generation = 0

    # -- reads ----------------------------------------------------------------

    def get(self, key: tuple) -> object | None:
        """The value of ``key`` (buffered or committed), or None."""
        return self.get_encoded(encode_key(key) or EMPTY)

    def get_encoded(self, kb: bytes) -> object | None:
        if self._keep:
            return self._get_many_kept([kb])[0]
        value = self._buffer.get(kb, _MISSING)
        if value is _MISSING:
            data = self._backend.read_txn().get(kb, db=self._db)
            return None if data is None else self._decode(data)
        return None if value is DELETED else value

    def get_many(self, keys: list[tuple]) -> list[object | None]:
        """The values of ``keys`` in input order; LMDB is read in key order."""
        return self.get_many_encoded([encode_key(k) or EMPTY for k in keys])

    def get_many_encoded(self, encoded: list[bytes]) -> list[object | None]:
        if self._keep:
            return self._get_many_kept(encoded)
        buffer = self._buffer
        misses = sorted({kb for kb in encoded if kb not in buffer} if buffer else set(encoded))
        stored: dict[bytes, bytes] = {}
        if misses:
            cursor = self._backend.read_txn().cursor(db=self._db)
            stored = dict(cursor.getmulti(misses))
        decode, found = self._decode, stored.get
        if not buffer:
            return [None if (data := found(kb)) is None else decode(data) for kb in encoded]
        out: list[object | None] = []
        for kb in encoded:
            value = buffer.get(kb, _MISSING)
            if value is _MISSING:
                data = found(kb)
                out.append(None if data is None else decode(data))
            else:
                out.append(None if value is DELETED else value)
        return out

    def _get_many_kept(self, encoded: list[bytes]) -> list[object | None]:
        """``get_many_encoded`` of a table that keeps committed values (``keep``): the
        values read from LMDB join the kept ones."""
        buffer, clean = self._buffer, self._clean
        misses = sorted({kb for kb in encoded if kb not in buffer and kb not in clean})
        loaded: dict[bytes, object] = {}
        if misses:
            cursor = self._backend.read_txn().cursor(db=self._db)
            stored = dict(cursor.getmulti(misses))
            decode = self._decode
            loaded = {
                kb: DELETED if (data := stored.get(kb)) is None else decode(data) for kb in misses
            }
        values = [
            buffer[kb] if kb in buffer else clean[kb] if kb in clean else loaded[kb]
            for kb in encoded
        ]
        if loaded:
            self._keep_clean(loaded)
        return [None if value is DELETED else value for value in values]

    def last_encoded(self) -> bytes | None:
        """The largest key stored or buffered (a buffered delete included), or None."""
        cursor = self._backend.read_txn().cursor(db=self._db)
        stored = cursor.key() if cursor.last() else None
        return max(filter(None, (stored, max(self._buffer, default=None))), default=None)

    def scan_prefix(self, prefix: tuple) -> Iterator[tuple[tuple, object]]:
        """Every (key, value) whose key starts with ``prefix``, in key order.

        Buffered writes are merged in. Consume the iterator before the next commit.
        """
        for kb, value in self.scan_encoded(encode_key(prefix)):
            yield decode_key(kb), value

    def scan_encoded(self, prefix: bytes) -> Iterator[tuple[bytes, object]]:
        buffered = self._buffered_range(prefix)
        stored = self._stored_range(prefix)
        pending = next(buffered, None)
        for kb, data in stored:
            while pending is not None and pending[0] < kb:
                if pending[1] is not DELETED:
                    yield pending
                pending = next(buffered, None)
            if pending is not None and pending[0] == kb:
                if pending[1] is not DELETED:
                    yield pending
                pending = next(buffered, None)
            else:
                yield kb, self._decode(data)
        while pending is not None:
            if pending[1] is not DELETED:
                yield pending
            pending = next(buffered, None)

    def scan_many(
        self, prefixes: list[bytes], values: bool = True, buffered: bool = True
    ) -> list[list]:
        """For each of ``prefixes`` (in ascending byte order), its (key, value) entries in
        key order, buffered writes merged in (``buffered=False``: the committed ones only);
        with ``values=False`` the keys only, nothing decoded. One cursor serves every
        prefix, moving forward."""
        cursor = self._backend.read_txn().cursor(db=self._db)
        decode = self._decode
        out: list[list] = []
        for prefix in prefixes:
            found: list = []
            if cursor.set_range(prefix) if prefix else cursor.first():
                if values:
                    for kb, data in cursor:
                        if not kb.startswith(prefix):
                            break
                        found.append((kb, data))
                else:
                    for kb in cursor.iternext(values=False):
                        if not kb.startswith(prefix):
                            break
                        found.append(kb)
            pending = self._buffered_list(prefix) if buffered and self._buffer else None
            if pending:
                out.append(_merged(found, pending, decode, values))
            elif values:
                out.append([(kb, decode(data)) for kb, data in found])
            else:
                out.append(found)
        return out

    def items(self) -> list[tuple[tuple, object]]:
        """Every (key, value) in key order (for tests and inspection)."""
        return list(self.scan_prefix(()))

    def __len__(self) -> int:
        txn = self._backend.read_txn()
        count = txn.stat(self._db)["entries"]
        for kb, value in self._buffer.items():
            exists = txn.get(kb, db=self._db) is not None
            if value is DELETED:
                count -= exists
            else:
                count += not exists
        return count

    # -- writes -----------------------------------------------------------------

    def put(self, key: tuple, value: object) -> None:
        """Set ``key`` to ``value`` (buffered until the backend commits)."""
        self.put_encoded(encode_key(key) or EMPTY, value)

    def delete(self, key: tuple) -> None:
        """Remove ``key`` (buffered until the backend commits)."""
        self.put_encoded(encode_key(key) or EMPTY, DELETED)

    def put_encoded(self, kb: bytes, value: object) -> None:
        if kb not in self._buffer:
            self._unsorted.append(kb)
        self._buffer[kb] = value

    def put_many_encoded(self, items: list[tuple[bytes, object]]) -> None:
        """``put_encoded`` of each (key bytes, value); a value ``DELETED`` deletes."""
        buffer = self._buffer
        self._unsorted += [kb for kb, _ in items if kb not in buffer]
        buffer.update(items)

    def delete_encoded(self, kb: bytes) -> None:
        self.put_encoded(kb, DELETED)

    # -- for the backend ----------------------------------------------------------

    @property
    def db(self) -> Database:
        return self._db

    def pending(self) -> list[tuple[bytes, bytes | None]]:
        """The buffered writes, encoded and in key order (None = delete); the values of
        a batch are encoded together (``encode_many``)."""
        keys = sorted(self._buffer)
        values = list(map(self._buffer.__getitem__, keys))
        if not any(value is DELETED for value in values):
            return list(zip(keys, self._encode_many(values), strict=True))
        encoded = iter(self._encode_many([value for value in values if value is not DELETED]))
        return [
            (kb, None if value is DELETED else next(encoded))
            for kb, value in zip(keys, values, strict=True)
        ]

    def has_pending(self) -> bool:
        return bool(self._buffer)

    def clear(self) -> None:
        """Drops the buffered writes and the kept values."""
        self._buffer = {}
        self._clean = {}
        self._sorted = []
        self._unsorted = []
        self.generation += 1

    def committed(self) -> None:
        """The buffered writes are committed: dropped from the buffer, kept decoded if the
        table keeps values (up to ``keep``, then it starts over)."""
        if self._keep:
            self._keep_clean(self._buffer)
        self._buffer = {}
        self._sorted = []
        self._unsorted = []
        self.generation += 1

    def _keep_clean(self, values: dict[bytes, object]) -> None:
        """Keeps committed ``values`` (DELETED: absent), up to ``keep``: over it, the kept
        ones are dropped first."""
        clean = self._clean
        if len(clean) + len(values) > self._keep:
            clean.clear()
        if len(values) <= self._keep:
            clean.update(values)

    def _buffered_range(self, prefix: bytes) -> Iterator[tuple[bytes, object]]:
        if not self._buffer:
            return iter(())
        return iter(self._buffered_list(prefix))

    def _buffered_list(self, prefix: bytes) -> list[tuple[bytes, object]]:
        if self._unsorted:
            self._unsorted.sort()
            self._sorted += self._unsorted
            self._sorted.sort()
            self._unsorted = []
        keys = self._sorted
        end = prefix_end(prefix)
        start = bisect_left(keys, prefix)
        stop = len(keys) if end is None else bisect_left(keys, end, start)
        buffer = self._buffer
        return [(kb, buffer[kb]) for kb in keys[start:stop]]

    def _stored_range(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        cursor = self._backend.read_txn().cursor(db=self._db)
        if not (cursor.set_range(prefix) if prefix else cursor.first()):
            return
        for kb, data in cursor:
            if not kb.startswith(prefix):
                return
            yield kb, data


def _first(item: tuple[bytes, object]) -> bytes:
    return item[0]


def _encoder_of(values: object | None):
    """The codec's ``encode_many`` (values of a batch at once), or its ``encode`` per value."""
    encode_many = getattr(values, "encode_many", None)
    if encode_many is not None:
        return encode_many
    encode = encode_value if values is None else values.encode  # type: ignore[attr-defined]
    return lambda batch: list(map(encode, batch))


def _merged(stored: list, buffered: list[tuple[bytes, object]], decode, values: bool) -> list:
    """Stored entries (raw) of one prefix overlaid with its buffered writes, in key order."""
    if values:
        merged: dict[bytes, object] = {kb: decode(data) for kb, data in stored}
    else:
        merged = dict.fromkeys(stored)
    for kb, value in buffered:
        if value is DELETED:
            merged.pop(kb, None)
        else:
            merged[kb] = value
    if values:
        return sorted(merged.items(), key=_first)
    return sorted(merged)
