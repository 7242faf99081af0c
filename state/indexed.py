"""``IndexedTable``: the mirror of a CDC source table with a primary key.

Rows live in the table ``<name>`` keyed by primary key. A secondary index lives in
``<name>#<index>``: its keys are ``encode_key(index columns) + encode_key(primary
key)`` with no value, so a prefix scan on the index values yields the primary
keys of the matching rows in order, without decoding anything (the key encoding
is self-delimiting). An index whose columns are a prefix of the primary key
needs no structure of its own: it is a prefix scan of the row table (Fluss's
``bucket.key``).

Every row has exactly one entry in each secondary index, so an index whose
committed entry count differs from the row count (new, or built by a run that
stopped before its commit) is rebuilt from the rows when the table is opened.

A batch is applied per distinct primary key: the stored rows of the batch's keys
are read once (sorted), the changes are replayed in memory, and only the final
row of each key is written, with its index entries moved when an indexed column
changed. Each key is encoded once per batch, and with the row ``types`` given,
by encoders compiled for the key columns' types (``typed_keys``); index tables
store no value bytes.

Lookups take a batch of index keys: on the full primary key one sorted
``getmulti``; otherwise one cursor visits the sorted prefixes and the rows of
every primary key found are read in one more sorted pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING

from deltaflow.formats.changelog import ADDS
from deltaflow.formats.errors import StateError
from deltaflow.formats.types import DataType
from deltaflow.state.keys import encode_key
from deltaflow.state.table import DELETED, KeysOnly, StateTable
from deltaflow.state.typed_keys import KeyCache, key_encoder

if TYPE_CHECKING:
    from deltaflow.state.backend import StateBackend

INDEX_SEPARATOR = "#"


def key_getter(columns: list[int]) -> Callable[[tuple], tuple]:
    """A function picking ``columns`` of a row as a tuple."""
    if len(columns) == 1:
        (only,) = columns
        return lambda row: (row[only],)
    return itemgetter(*columns)


def _encoder(columns: list[int], types: Sequence[DataType] | None) -> Callable[[tuple], bytes]:
    return encode_key if types is None else key_encoder([types[c] for c in columns])


class _Index:
    __slots__ = ("cache", "columns", "encode", "getter", "table", "unique")

    def __init__(self, columns: list[int], table: StateTable | None, encode, unique: bool) -> None:
        self.columns = list(columns)
        self.getter = key_getter(self.columns)
        self.encode = encode
        self.cache = KeyCache(encode)
        self.table = table  # None: a primary-key prefix, scanned on the row table
        self.unique = unique  # the whole primary key: one row at most per index key


class IndexedTable:
    """Rows by primary key plus secondary indexes; see the module docstring."""

    def __init__(
        self,
        backend: StateBackend,
        name: str,
        key_columns: list[int],
        indexes: dict[str, list[int]],
        types: Sequence[DataType] | None = None,
        values: object | None = None,
    ) -> None:
        """``types``: the rows' column types, for compiled key encoders; ``values``: the
        rows' value codec (a ``TypedValues``), if they have one type."""
        if not key_columns:
            raise StateError(f"indexed table {name!r} needs at least one primary key column")
        if INDEX_SEPARATOR in name:
            raise StateError(f"indexed table name {name!r} must not contain {INDEX_SEPARATOR!r}")
        self.name = name
        self.key_columns = list(key_columns)
        self._backend = backend
        self._pk = key_getter(self.key_columns)
        self._types = None if types is None else list(types)
        self._encode_pk = _encoder(self.key_columns, self._types)
        self._rows = backend.table(name, values)  # type: ignore[arg-type]
        self._indexes: dict[str, _Index] = {}
        for index_name, columns in indexes.items():
            self.build_index(index_name, columns)

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
    ) -> tuple[dict[tuple, tuple | None], list[int]]:
        """``apply``, also returning each changed primary key's row from before the batch
        (None: absent) with the contradictions."""
        pks = list(map(self._pk, rows))
        distinct = list(dict.fromkeys(pks))
        encoded = list(map(self._encode_pk, distinct))
        before = dict(zip(distinct, self._rows.get_many_encoded(encoded), strict=True))
        after = dict(before)
        contradictions = []
        adds = ADDS
        for position, kind in enumerate(kinds):
            if adds[kind]:
                after[pks[position]] = rows[position]
            elif after[pks[position]] is None:
                contradictions.append(position)
            else:
                after[pks[position]] = None
        changed = [
            (kb, before[pk], new)
            for kb, (pk, new) in zip(encoded, after.items(), strict=True)
            if new is not before[pk]
        ]
        self._rows.put_many_encoded(
            [(kb, DELETED if new is None else new) for kb, _, new in changed]
        )
        for index in self._indexes.values():
            if index.table is not None and changed:
                _move(index, changed)
        return before, contradictions

    def build_index(self, name: str, columns: list[int]) -> None:
        """Add a secondary index on ``columns``, backfilled from the rows if needed."""
        if not columns:
            raise StateError(f"index {name!r} of table {self.name!r} needs at least one column")
        encode = _encoder(list(columns), self._types)
        if list(columns) == self.key_columns[: len(columns)]:
            unique = len(columns) == len(self.key_columns)
            self._indexes[name] = _Index(columns, None, encode, unique)
            return
        table = self._backend.table(f"{self.name}{INDEX_SEPARATOR}{name}", KeysOnly)  # type: ignore[arg-type]
        index = _Index(columns, table, encode, False)
        txn = self._backend.read_txn()
        committed_match = txn.stat(table.db)["entries"] == txn.stat(self._rows.db)["entries"]
        if not committed_match or self._rows.has_pending():
            self._rebuild(index)
        self._indexes[name] = index

    def _rebuild(self, index: _Index) -> None:
        table = index.table
        stale = table.scan_many([b""], values=False)[0]
        fresh = [index.encode(index.getter(row)) + kb for kb, row in self._rows.scan_encoded(b"")]
        for kb in stale:
            table.delete_encoded(kb)
        for kb in fresh:
            table.put_encoded(kb, None)

    # -- reads ----------------------------------------------------------------

    def get(self, pk: tuple) -> tuple | None:
        """The row with primary key ``pk``, or None."""
        return self._rows.get(pk)

    def get_many(self, pks: list[tuple]) -> list[tuple | None]:
        """The rows of ``pks`` in input order."""
        return self._rows.get_many(pks)

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
        encoded = spec.cache.encode_many(distinct)
        if spec.unique:
            found = [[] if r is None else [r] for r in self._rows.get_many_encoded(encoded)]
        else:
            found = self._scan(spec, sorted(set(encoded)), encoded)
        if len(distinct) == len(keys):
            return found
        by_key = dict(zip(distinct, found, strict=True))
        return [list(by_key[key]) for key in keys]

    def _scan(self, spec: _Index, prefixes: list[bytes], encoded: list[bytes]) -> list[list]:
        """The rows under each of ``encoded`` (``prefixes``: the same, sorted)."""
        if spec.table is None:
            scanned = self._rows.scan_many(prefixes)
            by_prefix = {
                p: [row for _, row in found] for p, found in zip(prefixes, scanned, strict=True)
            }
            return [by_prefix[p] for p in encoded]
        scanned = spec.table.scan_many(prefixes, values=False)
        cuts = {
            p: [kb[len(p) :] for kb in found] for p, found in zip(prefixes, scanned, strict=True)
        }
        pks = sorted({pk for found in cuts.values() for pk in found})
        rows = dict(zip(pks, self._rows.get_many_encoded(pks), strict=True)) if pks else {}
        return [[rows[pk] for pk in cuts[p]] for p in encoded]

    def count(self) -> int:
        """The number of rows."""
        return len(self._rows)

    def items(self) -> list[tuple[tuple, tuple]]:
        """Every (primary key, row) in key order (for tests and inspection)."""
        return self._rows.items()


def _move(index: _Index, changed: list[tuple[bytes, tuple | None, tuple | None]]) -> None:
    """Moves the index entries of the changed rows (``(row key, old, new)``, None: absent)
    whose indexed columns changed; each index key is encoded once."""
    getter = index.getter
    gone, added = [], []
    for kb, old, new in changed:
        if old is None:
            added.append((getter(new), kb))  # type: ignore[arg-type]
        elif new is None:
            gone.append((getter(old), kb))
        else:
            old_key, new_key = getter(old), getter(new)
            if old_key != new_key:
                gone.append((old_key, kb))
                added.append((new_key, kb))
    encode = index.cache.encode_many
    writes = [
        (kb + pk, DELETED) for kb, (_, pk) in zip(encode([k for k, _ in gone]), gone, strict=True)
    ]
    writes += [
        (kb + pk, None) for kb, (_, pk) in zip(encode([k for k, _ in added]), added, strict=True)
    ]
    index.table.put_many_encoded(writes)  # type: ignore[union-attr]
