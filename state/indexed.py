"""``IndexedTable``: the mirror of a CDC source table with a primary key.

Rows live in the table ``<name>`` keyed by primary key; when the primary key columns
lead the row, the stored value leaves them out (the key holds them) and reads put them
back. A secondary index lives in ``<name>#<index>``, a ``PackedIndex``: one entry per
``encode_key(index columns)``, its value the sorted primary keys of its rows packed
together (a one-column integer key in 9 fixed bytes; any other key as its
``encode_key`` bytes), so a lookup of an index key yields the primary keys of the
matching rows in order. An index whose columns are a prefix of the primary key
needs no structure of its own: it is a prefix scan of the row table (Fluss's
``bucket.key``).

Every row has exactly one pair in each secondary index, so an index whose
committed pair count differs from the row count (new, or built by a run that
stopped before its commit) is rebuilt from the rows when the table is opened.

A batch is applied per distinct primary key: the current rows of the batch's keys
are taken from the rows kept in memory (below) or read once (sorted), the changes
are replayed in memory, and only the final row of each key is kept, with its index
entries moved when an indexed column changed (``row_keys.compile_moves``).

The table keeps the current rows of the primary keys touched or read lately, by
row key (``row_keys``: the value itself for a one-column key; ``row_cache``: by slot of a
list for a one-column integer key while its values fit), up to ``keep`` keys, then it
starts over: a key changed again, or looked up, after a commit is not read
from LMDB and decoded again. A changed row stays there alone, decoded, until ``flush``
(the backend's commit, or a read that goes by encoded keys) encodes it and its key once,
however many batches of the checkpoint changed it, and writes them in key order.

Lookups take a batch of index keys: on the full primary key the kept rows, then one
sorted ``getmulti``; otherwise one cursor visits the sorted index keys and the rows of
every primary key found are taken the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from itertools import chain, compress, filterfalse, repeat
from operator import is_, is_not, itemgetter
from typing import TYPE_CHECKING, Any

from deltaflow.formats.changelog import ADDS
from deltaflow.formats.errors import StateError
from deltaflow.formats.types import DataType
from deltaflow.state import row_keys
from deltaflow.state.index_entries import Index
from deltaflow.state.keys import decode_key
from deltaflow.state.row_cache import MISSING, ByKey, BySlot, Unfit
from deltaflow.state.row_keys import stored_columns
from deltaflow.state.table import DELETED
from deltaflow.state.typed_keys import KeyCache, encode_sorted_ints
from deltaflow.state.values import TypedValues

if TYPE_CHECKING:
    from deltaflow.state.store import Database, TableStore

__all__ = ["IndexedTable", "stored_columns"]

INDEX_SEPARATOR = "#"
FILTERED_INDEXES = "indexed.filtered"  # the filtered indexes backfilled (build_index)
KEEP_ROWS = 250_000  # rows an IndexedTable keeps in memory by row key, then it starts over
KEEP_KEY_BYTES = 200_000  # row keys whose bytes it keeps (``_pk_bytes``), then it starts over
_UNREAD = object()  # the largest stored key is not read yet
_OFF = object()  # no largest key kept: the keys are not integers
_INT_OR_NULL = frozenset({int, type(None)})
_INT = frozenset({int})
_first = itemgetter(0)
_second = itemgetter(1)


class IndexedTable:
    """Rows by primary key plus secondary indexes; see the module docstring."""

    def __init__(
        self,
        backend: TableStore,
        name: str,
        key_columns: list[int],
        indexes: dict[str, list[int]],
        types: Sequence[DataType] | None = None,
        values: object | None = None,
        keep: int | None = None,
        filters: dict[str, Callable[[tuple], bool]] | None = None,
    ) -> None:
        """``types``: the rows' column types, for compiled key encoders; ``values``: the
        codec (a ``TypedValues``) of the stored part of a row (``stored_columns``), if
        that has one type; ``keep``: how many rows it keeps in memory (module docstring;
        default ``KEEP_ROWS``); ``filters``: of filtered indexes, the rows they hold
        (``build_index``)."""
        if not key_columns:
            raise StateError(f"indexed table {name!r} needs at least one primary key column")
        if INDEX_SEPARATOR in name:
            raise StateError(f"indexed table name {name!r} must not contain {INDEX_SEPARATOR!r}")
        self.name = name
        self.key_columns = list(key_columns)
        self._backend = backend
        self.row_key = row_keys.row_key(self.key_columns)  # the keys of ``apply_changes``
        self._from_tuple = row_keys.from_tuple(self.key_columns)
        self._key_tuple = row_keys.key_tuple(self.key_columns)
        self._types = None if types is None else list(types)
        self._encode_pk = row_keys.key_bytes(self.key_columns, self._types)
        # the bytes of the row keys changed lately: a batch's changed keys are encoded once
        # for its indexes (one list of primary keys each) and for the flush or commit
        # (used once a secondary index stores encoded row keys: ``build_index``)
        self._pk_bytes = KeyCache(self._encode_pk, KEEP_KEY_BYTES)
        self._encode_pks: Callable[[list], list[bytes]] = partial(_each_encoded, self._encode_pk)
        # primary key columns leading the row are not stored in the value (the key has them)
        self._lead = row_keys.leading(self.key_columns)
        # rows are encoded here (at the flush) and decoded here (per read): the row
        # table holds their bytes as they are
        self._encode_rows, self._decode_row = row_keys.row_codec(values)
        self._rows = backend.table(name, row_keys.RAW)  # type: ignore[arg-type]
        fixed = row_keys.fixed_keys(self.key_columns, types)
        # the current rows (None: absent) by row key, and the last row of each key changed
        # since the last flush, not in the row table yet: encoded once per key at the
        # flush or the commit (``row_cache``: by slot for integer keys while they fit)
        self._kept: ByKey | BySlot = BySlot() if fixed else ByKey()
        # integer row keys (or tuples of them, for a key of integer columns): the largest
        # one stored or buffered (None: none), read lazily; a key past it is absent without
        # a read (new keys of a sequence; tuples compare as their bytes sort)
        self._tuples = row_keys.integer_columns(self.key_columns, types) >= 2
        self._last: object = _UNREAD if fixed or self._tuples else _OFF
        self._committing: list | None = None  # the keys of commit_writes, until committed
        self._keep = KEEP_ROWS if keep is None else keep
        self._indexes: dict[str, Index] = {}
        for index_name, columns in indexes.items():
            self.build_index(index_name, columns, (filters or {}).get(index_name))

    @property
    def indexes(self) -> dict[str, list[int]]:
        return {name: index.columns for name, index in self._indexes.items()}

    # -- writes ---------------------------------------------------------------

    def apply(self, kinds: list[int], rows: list[tuple]) -> list[int]:
        """Apply a changelog batch: +I/+U upsert by primary key, -U/-D delete.

        Returns the positions of the changes that contradict the mirror (a -U/-D
        of a key that is not there), so that the caller can apply its bad-input
        policy; such a change deletes nothing.
        """
        return self.apply_changes(kinds, rows)[1]

    def apply_changes(
        self, kinds: list[int], rows: list[tuple]
    ) -> tuple[dict[object, tuple | None], list[int]]:
        """``apply``, also returning the row from before the batch (None: absent) of each
        primary key the batch touches, by row key (``row_key``), with the contradictions."""
        keys = list(map(self.row_key, rows))
        before = self._current(list(dict.fromkeys(keys)))
        after = dict(before)
        adds, contradicted = ADDS, False
        for kind, key, row in zip(kinds, keys, rows, strict=True):
            if adds[kind]:
                after[key] = row
            elif after[key] is None:
                contradicted = True
            else:
                after[key] = None
        contradictions = row_keys.contradictions(kinds, keys, before) if contradicted else []
        self.put_rows(before, after)
        return before, contradictions

    def rows(self, keys: list) -> dict[object, tuple | None]:
        """The current row (None: absent) of each of the distinct row ``keys``
        (``row_key``), by row key: for a caller that works out a batch's final rows
        itself (``put_rows``)."""
        return self._current(keys)

    def put_rows(self, before: dict, after: dict) -> None:
        """The final row (None: deleted) of each key of ``after``, whose rows were
        ``before`` (as ``rows`` gave them, same keys)."""
        try:
            self._kept.put(after)
        except Unfit:
            self._kept = self._kept.as_by_key()
            self._kept.put(after)
        for index in self._indexes.values():
            if index.table is not None:
                self._move(index, before, after)

    def flush(self) -> None:
        """Buffers the writes of the rows of the batches applied since the last flush in
        the row table (the last row of each key, it and its key encoded once), for a read
        that goes by encoded keys."""
        if not self._kept.changed():
            return
        keys, encoded, values, _ = self._encoded()
        self._kept.clean()
        stored: Sequence[object] = values
        if any(map(is_, values, repeat(None))):
            stored = [DELETED if value is None else value for value in values]
        self._rows.put_many_encoded(list(zip(encoded, stored, strict=True)))
        self._raise_last(keys)

    def commit_writes(self) -> tuple[bytes, Database, list] | None:
        """For the backend's commit: (table name, LMDB handle, the writes of the rows
        applied since the last flush, encoded and in key order, None deleting), written
        straight from here; None when there are none, or when the row table has
        buffered writes already (the rows are then flushed to them). ``committed`` follows
        the commit."""
        if not self._kept.changed():
            return None
        if self._rows.has_pending():
            self.flush()
            return None
        keys, encoded, values, ordered = self._encoded()
        self._committing = keys
        writes = list(zip(encoded, values, strict=True))
        if not ordered:
            writes.sort(key=_first)
        return self._rows.name.encode(), self._rows.db, writes

    def committed(self) -> None:
        """The writes of ``commit_writes`` are committed."""
        if self._committing is not None:
            self._kept.clean()
            self._raise_last(self._committing)
            self._committing = None

    def _encoded(self) -> tuple[list, list[bytes], list[bytes | None], bool]:
        """The last row of each key applied since the last flush: (row keys, their bytes,
        the rows' bytes or None for a deleted row, whether in key order), each row encoded
        once however many batches changed it, in one pass (``encode_images``). Positive
        integer keys are sorted as ints and encoded by runs of one length
        (``encode_sorted_ints``), their bytes then in order with no sort of the bytes."""
        keys, rows, ints = self._kept.latest(self._last is not _OFF and not self._tuples)
        encoded = encode_sorted_ints(keys) if ints else None
        images = row_keys.encode_images(rows, self._lead, self._encode_rows)
        if encoded is not None:
            return keys, encoded, images, True
        return keys, self._encode_pks(keys), images, False

    def _raise_last(self, keys: list) -> None:
        """Keeps the largest integer row key up to date with the flushed ``keys``."""
        if self._last is _OFF or self._last is _UNREAD:
            return
        if self._tuples:
            if not _INT.issuperset(map(type, chain.from_iterable(keys))):
                self._last = _OFF  # a NULL in a key column: no order to go by
                return
            top = max(keys, default=None)
        elif not _INT_OR_NULL.issuperset(map(type, keys)):
            self._last = _OFF
            return
        else:
            top = max(filter(partial(is_not, None), keys), default=None)
        if top is not None and (self._last is None or top > self._last):
            self._last = top

    def forget(self) -> None:
        """Drops the rows kept in memory, changes not flushed included (the backend's
        discard and roll-back: the table is then as its last commit)."""
        self._kept.clear()
        self._committing = None
        if self._last is not _OFF:
            self._last = _UNREAD

    def _current(self, keys: list) -> dict[object, tuple | None]:
        """The current row (None: absent) of each of the distinct row ``keys``: kept ones,
        the rest read in one sorted pass and kept."""
        found = self._lookup(keys)
        if any(map(is_, found, repeat(MISSING))):
            missing = list(compress(keys, map(is_, found, repeat(MISSING))))
            if len(self._kept) + len(missing) > self._keep:
                self.flush()
                self._kept.clear()
                missing = keys
                found = [MISSING] * len(keys)
            loaded = self._load(missing)
            self._kept.add(missing, loaded)
            rows = dict(zip(keys, found, strict=True))
            rows.update(zip(missing, loaded, strict=True))  # in place: the keys' order kept
            return rows
        return dict(zip(keys, found, strict=True))

    def _lookup(self, keys: list) -> list:
        """The kept row of each of ``keys`` (None: absent, MISSING: not kept)."""
        try:
            return self._kept.lookup(keys)
        except Unfit:
            self._kept = self._kept.as_by_key()
            return self._kept.lookup(keys)

    def _load(self, keys: list) -> list:
        """The stored rows (None: absent) of row ``keys``, read in one sorted pass; integer
        keys past the largest stored one are absent without a read."""
        last = self._last_key()
        if last is _OFF:
            return self._full(keys, self._rows.get_many_encoded(list(map(self._encode_pk, keys))))
        past = _past_tuples(keys, last) if self._tuples else _past(keys, last)
        if all(past):
            return [None] * len(keys)
        read = list(filterfalse(past.__getitem__, range(len(keys)))) if any(past) else None
        wanted = keys if read is None else [keys[i] for i in read]
        rows = self._full(wanted, self._rows.get_many_encoded(list(map(self._encode_pk, wanted))))
        if read is None:
            return rows
        out: list = [None] * len(keys)
        for i, row in zip(read, rows, strict=True):
            out[i] = row
        return out

    def _last_key(self) -> Any:
        """The largest integer row key stored or buffered (None: none), or _OFF."""
        if self._last is _UNREAD:
            kb = self._rows.last_encoded()
            if kb is None:
                self._last = None
            elif self._tuples:
                last = decode_key(kb)
                width = len(self.key_columns)
                fit = len(last) == width and _INT.issuperset(map(type, last))
                self._last = last if fit else _OFF
            else:
                last = decode_key(kb)[0]
                self._last = last if type(last) is int else _OFF
        return self._last

    def build_index(
        self, name: str, columns: list[int], keep: Callable[[tuple], bool] | None = None
    ) -> None:
        """Add a secondary index on ``columns``, backfilled from the rows if needed.

        ``keep``: a filtered index, holding only the rows it is true for (those a reader
        applying that filter can find; ``row_keys.compile_moves``); not for a primary-key
        prefix, which has no table. Its pairs are fewer than the rows, so it is known to
        be complete by a mark written with its backfill (``FILTERED_INDEXES``), in the
        same commit; from then on every commit moves its pairs with the rows."""
        if not columns:
            raise StateError(f"index {name!r} of table {self.name!r} needs at least one column")
        encode = row_keys.encoder(list(columns), self._types)
        if list(columns) == self.key_columns[: len(columns)]:
            self._indexes[name] = Index(columns, None, encode)
            return
        fixed = row_keys.fixed_keys(self.key_columns, self._types)
        ints = row_keys.integer_columns(self.key_columns, self._types)
        full = f"{self.name}{INDEX_SEPARATOR}{name}"
        table = self._backend.packed_index(full, fixed, ints)
        index = Index(columns, table, encode, keep)
        index.dups_of, index.key_of = row_keys.dup_codec(table.fixed, self._pk_bytes.encode_many)
        if index.key_of is None:  # it stores the keys' bytes: share them with the commit
            self._encode_pks = self._pk_bytes.encode_many
        self.flush()
        rows = self._backend.read_txn().stat(self._rows.db)["entries"]
        if keep is None:
            committed_match = table.committed_len() == rows
        else:
            marks = self._backend.table(FILTERED_INDEXES, TypedValues(bool))
            committed_match = bool(marks.get((full,)))
        if not committed_match or self._rows.has_pending():
            self._rebuild(index)
            if keep is not None:
                marks.put((full,), True)
        self._indexes[name] = index

    def _rebuild(self, index: Index) -> None:
        fresh = index.entries([row for _, row in self._scan_rows()], self.row_key)
        index.table.update(index.table.pairs(), fresh)  # type: ignore[union-attr]

    def _move(self, index: Index, before: dict, after: dict) -> None:
        """Moves the index entries of the rows of a batch's keys (``before`` and ``after``
        it, None: absent) whose indexed columns changed."""
        try:
            pairs = index.moved(before, after)
        except OverflowError:
            raise StateError(
                f"indexed table {self.name!r}: a primary key is outside BIGINT's range; "
                "declare the key column with the type of its values"
            ) from None
        index.table.update(*pairs)  # type: ignore[union-attr]

    # -- reads ----------------------------------------------------------------

    def get(self, pk: tuple) -> tuple | None:
        """The row with primary key ``pk``, or None."""
        return self.get_many([pk])[0]

    def get_many(self, pks: list[tuple]) -> list[tuple | None]:
        """The rows of ``pks`` in input order."""
        keys = [self._from_tuple(tuple(pk)) for pk in pks]
        return list(map(self._current(list(dict.fromkeys(keys))).__getitem__, keys))

    def _full(self, keys: list, stored: list) -> list:
        """The rows of row ``keys`` from their ``stored`` bytes (None: absent)."""
        decode = self._decode_row
        if not self._lead:
            return [None if data is None else decode(data) for data in stored]
        pk = self._key_tuple
        return [
            None if data is None else pk(key) + decode(data)
            for key, data in zip(keys, stored, strict=True)
        ]

    def _scan_rows(self, prefix: bytes = b"") -> list[tuple[bytes, tuple]]:
        """(row key bytes, row) of every row whose key starts with ``prefix``, in order."""
        self.flush()
        return self._rows_of(list(self._rows.scan_encoded(prefix)))

    def _rows_of(self, found: list[tuple[bytes, bytes]]) -> list[tuple[bytes, tuple]]:
        """(row key bytes, row) of (row key bytes, stored bytes) pairs."""
        decode = self._decode_row
        if not self._lead:
            return [(kb, decode(data)) for kb, data in found]
        return [(kb, decode_key(kb) + decode(data)) for kb, data in found]

    def lookup(self, index: str, keys: list[tuple]) -> list[list[tuple]]:
        """For each index key, the rows whose index columns equal it (in primary key order).

        Keys are looked up once each, in key order; results are in input order (a
        new list per key). A NULL in a key matches rows whose column is NULL: SQL join
        semantics (NULL matches nothing) are the caller's to apply.
        """
        spec = self._indexes.get(index)
        if spec is None:
            raise StateError(
                f"table {self.name!r} has no index {index!r}; it has {sorted(self._indexes)}"
            )
        distinct = list(dict.fromkeys(keys))
        if len(spec.columns) == len(self.key_columns) and spec.table is None:
            wanted = list(map(self._from_tuple, distinct))
            rows = self._current(list(dict.fromkeys(wanted)))
            found = [[] if r is None else [r] for r in map(rows.__getitem__, wanted)]
        else:
            encoded = spec.cache.encode_many(distinct)
            found = self._scan(spec, sorted(set(encoded)), encoded)
        if len(distinct) == len(keys):
            return found
        by_key = dict(zip(distinct, found, strict=True))
        return [list(by_key[key]) for key in keys]

    def _scan(self, spec: Index, prefixes: list[bytes], encoded: list[bytes]) -> list[list]:
        """The rows under each of ``encoded`` (``prefixes``: the same, sorted)."""
        if spec.table is None:
            self.flush()
            by_prefix = {
                p: [row for _, row in self._rows_of(found)]
                for p, found in zip(prefixes, self._rows.scan_many(prefixes), strict=True)
            }
            return [by_prefix[p] for p in encoded]
        cuts = dict(zip(prefixes, spec.table.lookup_many(prefixes), strict=True))
        dups = sorted({dup for found in cuts.values() for dup in found})
        if not dups:
            return [[] for _ in encoded]
        if spec.key_of is not None:
            current = self._current(list(map(spec.key_of, dups)))
            rows = dict(zip(dups, current.values(), strict=True))
        else:
            self.flush()
            stored = self._rows.get_many_encoded(dups)
            pks = list(map(decode_key, dups)) if self._lead else []
            rows = dict(
                zip(dups, self._full(list(map(self._from_tuple, pks)), stored), strict=True)
            )
        return [[rows[dup] for dup in cuts[p]] for p in encoded]

    def count(self) -> int:
        """The number of rows."""
        self.flush()
        return len(self._rows)

    def items(self) -> list[tuple[tuple, tuple]]:
        """Every (primary key, row) in key order (for tests and inspection)."""
        return [(decode_key(kb), row) for kb, row in self._scan_rows()]


def _past(keys: list, last: int | None) -> list[bool]:
    """For each row key, whether it is an int past ``last`` (None: none stored), so absent;
    by C-level maps when every key is an int (the common case: a sequence's new keys)."""
    if _INT.issuperset(map(type, keys)):
        return [True] * len(keys) if last is None else list(map(last.__lt__, keys))
    return [type(key) is int and (last is None or key > last) for key in keys]


def _each_encoded(encode: Callable[[Any], bytes], keys: list) -> list[bytes]:
    """The bytes of each of ``keys``."""
    return list(map(encode, keys))


def _past_tuples(keys: list, last: tuple | None) -> list[bool]:
    """``_past`` for row keys that are tuples of integers (a key of integer columns),
    compared with the largest stored one ``last`` as tuples (their bytes sort the same
    way); a key holding anything but integers is read."""
    if _INT.issuperset(map(type, chain.from_iterable(keys))):
        return [True] * len(keys) if last is None else list(map(last.__lt__, keys))
    return [_INT.issuperset(map(type, key)) and (last is None or key > last) for key in keys]
