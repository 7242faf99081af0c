"""The regular join's state of one input side (``join.JoinOperator``).

In memory a side holds, per join key, ``{entry key: [row, copies, matches]}``: the
entry key is the row's unique key (its shortest one; one column: the value itself) or
else the row itself (rows with ARRAY/MAP columns under a hashable copy). The entries of
recently used join keys stay decoded in ``cache``, so a key changed in batch after batch
is read from state once.

Two state layouts:

- **One entry per row** (rows of scalar columns, no state TTL; Flink's MapState per
  join key): the LMDB key is the join key's encoding followed by the entry key's
  (``state.keys``, so the join key is a prefix of its rows' keys) and the value is the
  entry ``(row, copies, matches)``. Reading a join key's rows is one cursor range; a
  change of one row writes that row's entry only, so a hot join key holding thousands of
  rows is not rewritten whole when one of them changes. An entry key whose LMDB key
  would be over LMDB's 511 bytes is stored under a 16-byte BLAKE2b digest of its
  encoding instead (after a 0xFF byte, which starts no encoded value): a digest is only
  ever compared with digests, and the entry itself holds the row.
- **One value per join key** (otherwise): ``[(row, copies, matches), ...]``, the whole
  list written again when one of its rows changes. With state TTL this keeps TTL per
  join key, as before.

Changes are recorded as they are made: ``changed`` holds (join key, entry key) of each
entry added, changed or removed; ``touched`` the join keys all of whose entries changed
(the matches counts of an outer side).
"""

from __future__ import annotations

from collections.abc import Callable
from hashlib import blake2b
from operator import itemgetter
from typing import Any

from deltaflow.processor.runtime.base import row_freezer, row_shape
from deltaflow.state.keys import EMPTY
from deltaflow.state.typed_keys import key_encoder, value_encoder
from deltaflow.state.values import TypedValues
from deltaflow.state.writes import MAX_KEY_BYTES

# Join keys whose decoded entries a side keeps between batches; past it the cache
# starts over (the state table stays the truth: only this operator writes it).
CACHED_KEYS = 200_000
_DIGEST = b"\xff"  # starts the stored key of an entry key too long for LMDB (no value starts so)


class Side:
    """One input's rows by join key; see the module docstring."""

    def __init__(
        self, backend, name: str, types: list, outer: bool, unique_keys: tuple, ttl: bool
    ) -> None:
        self.nulls = (None,) * len(types)
        self.outer = outer
        self.freeze = row_freezer(types)
        columns = _unique_columns(types, unique_keys)
        self.unique = None if columns is None else itemgetter(*columns)
        shape = row_shape(types)
        self.per_row = shape is not None and not ttl  # the table takes the entry lists themselves
        self.table = _table(backend, name, shape, self.per_row)
        self.suffix = _suffix_encoder(types, columns) if self.per_row else None
        self.loaded: dict[tuple, dict] = {}
        self.cache: dict[tuple, dict] = {}
        self.cache_limit = 0 if ttl else CACHED_KEYS  # with TTL expiry is decided by the table
        self.changed: list[tuple[tuple, object]] = []
        self.touched: set[tuple] = set()
        self.stale = False  # the cache was dropped while the table had buffered writes

    def entry_key(self, row: tuple) -> object:
        if self.unique is not None:
            return self.unique(row)
        return row if self.freeze is None else self.freeze(row)

    def load(self, encoded: dict[tuple, bytes]) -> None:
        """Reads the entries of the batch's join keys (``encoded``: key -> its state key)."""
        cache, loaded = self.cache, self.loaded
        missing = [key for key in encoded if key not in cache]
        if len(cache) + len(missing) > self.cache_limit:
            cache.clear()
            missing = list(encoded)
            self.stale = self.per_row and (self.stale or self.table.has_pending())
        elif self.stale and not self.table.has_pending():
            self.stale = False  # committed since: nothing buffered is missing from the cache
        if missing:
            (self._load_rows if self.per_row else self._load_lists)(missing, encoded)
        for key in encoded:
            loaded[key] = cache[key]

    def _load_lists(self, missing: list, encoded: dict[tuple, bytes]) -> None:
        cache, entry_key = self.cache, self.unique or self.freeze
        stored = self.table.get_many_encoded([encoded[key] for key in missing])
        for key, raw in zip(missing, stored, strict=True):
            if raw is None:
                cache[key] = {}
            elif entry_key is None:
                cache[key] = {e[0]: list(e) for e in raw}
            else:
                cache[key] = {entry_key(e[0]): list(e) for e in raw}

    def _load_rows(self, missing: list, encoded: dict[tuple, bytes]) -> None:
        """One cursor range per missing join key, in key order; buffered entries are
        merged in only when the cache may lack them (``stale``)."""
        cache, entry_key = self.cache, self.unique
        prefixes = sorted(_prefix(encoded[key]) for key in missing)
        found_all = self.table.scan_many(prefixes, buffered=self.stale)
        by_prefix = dict(zip(prefixes, found_all, strict=True))
        for key in missing:
            found = by_prefix[_prefix(encoded[key])]
            if entry_key is None:
                cache[key] = {e[0]: e if type(e) is list else list(e) for _, e in found}
            else:
                cache[key] = {entry_key(e[0]): e if type(e) is list else list(e) for _, e in found}

    def store(self, encoded: dict[tuple, bytes]) -> None:
        """Writes the changes of the batch (buffered in the table until the commit)."""
        if self.per_row:
            self._store_rows(encoded)
        else:
            self._store_lists(encoded)
        self.changed.clear()
        self.touched.clear()
        self.loaded.clear()

    def _store_lists(self, encoded: dict[tuple, bytes]) -> None:
        table = self.table
        for key in self.touched.union([key for key, _ in self.changed]):
            entries = self.loaded[key]
            if entries:
                table.put_encoded(encoded[key], _copied(entries))
            else:
                table.delete_encoded(encoded[key])

    def _store_rows(self, encoded: dict[tuple, bytes]) -> None:
        loaded, suffix = self.loaded, self.suffix
        puts: list[tuple[bytes, object]] = []
        deletes: list[bytes] = []
        prefixes = {key: _prefix(kb) for key, kb in encoded.items()}
        for key, ek in dict.fromkeys(self.changed):
            entry = loaded[key].get(ek)
            kb = _entry_key(prefixes[key], suffix(ek))  # type: ignore[misc]
            if entry is None:
                deletes.append(kb)
            else:
                puts.append((kb, entry))
        for key in self.touched:
            prefix = prefixes[key]
            puts += [(_entry_key(prefix, suffix(ek)), e) for ek, e in loaded[key].items()]  # type: ignore[misc]
        if puts:
            self.table.put_many_encoded(puts)
        for kb in deletes:
            self.table.delete_encoded(kb)


def _prefix(kb: bytes) -> bytes:
    """The state key of a join key as the prefix of its entries' keys (``()``: all)."""
    return b"" if kb == EMPTY else kb


def _entry_key(prefix: bytes, suffix: bytes) -> bytes:
    kb = prefix + suffix
    if len(kb) <= MAX_KEY_BYTES:
        return kb
    return prefix + _DIGEST + blake2b(suffix, digest_size=16).digest()


def _unique_columns(types: list, unique_keys: tuple) -> tuple | None:
    """The columns of a side's shortest unique key; None without one, or when a key
    column is not hashable."""
    if not unique_keys:
        return None
    columns = min(unique_keys, key=len)
    if not columns or row_freezer([types[i] for i in columns]) is not None:
        return None
    return tuple(columns)


def _suffix_encoder(types: list, columns: tuple | None) -> Callable[[Any], bytes]:
    """The encoding of an entry key: the unique key's columns (one column: its value), or
    the whole row."""
    if columns is None:
        return key_encoder(types)
    if len(columns) == 1:
        return value_encoder(types[columns[0]])
    return key_encoder([types[c] for c in columns])


def _copied(entries: dict[tuple, list]) -> list[tuple]:
    """The entries as stored, ``[(row, copies, matches), ...]``, copied when put (a table
    that does not take the live entries encodes later batches' changes otherwise)."""
    return list(map(tuple, entries.values()))


def _table(backend, name: str, shape: object, per_row: bool):  # noqa: ANN202
    """A side's state table, typed when the row's columns allow it (msgpack, far cheaper
    than pickling Decimals and datetimes): ``(row, copies, matches)`` per entry (the live
    entry lists are put: msgpack writes a list as it writes a tuple), or
    ``[(row, copies, matches), ...]`` per join key."""
    if shape is None:
        return backend.table(name)
    if per_row:
        return backend.table(name, TypedValues(tuple[shape, int, int]))  # type: ignore[valid-type]
    return backend.table(name, TypedValues(list[tuple[shape, int, int]]))  # type: ignore[valid-type]
