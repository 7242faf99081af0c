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

A batch is applied per distinct primary key: the stored rows of the batch's keys
are read once (sorted), the changes are replayed in memory, and only the final
row of each key is written, with its index entries moved when an indexed column
changed. Each key is encoded once per batch, and with the row ``types`` given,
by encoders compiled for the key columns' types (``typed_keys``).

Lookups take a batch of index keys: on the full primary key one sorted
``getmulti``; otherwise one cursor visits the sorted index keys and the rows of
every primary key found are read in one more sorted pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING

from deltaflow.formats.changelog import ADDS
from deltaflow.formats.errors import StateError
from deltaflow.formats.types import INTEGER_ROOTS, DataType
from deltaflow.state.keys import decode_key, encode_key
from deltaflow.state.packed_index import PackedIndex
from deltaflow.state.table import DELETED
from deltaflow.state.typed_keys import KeyCache, key_encoder

if TYPE_CHECKING:
    from deltaflow.state.backend import StateBackend

INDEX_SEPARATOR = "#"
_BIAS = 1 << 63
_NULL_DUP = bytes(9)


def key_getter(columns: list[int]) -> Callable[[tuple], tuple]:
    """A function picking ``columns`` of a row as a tuple."""
    if len(columns) == 1:
        (only,) = columns
        return lambda row: (row[only],)
    return itemgetter(*columns)


def _fixed_keys(key_columns: list[int], types: Sequence[DataType] | None) -> bool:
    """Whether a new index stores primary keys in 9 bytes (a one-column integer key)."""
    return (
        types is not None and len(key_columns) == 1 and types[key_columns[0]].root in INTEGER_ROOTS
    )


def _dup_codec(key_columns: list[int], fixed: bool) -> tuple:
    """How an index stores a row's primary key as a duplicate: (duplicate of (row key bytes,
    row), primary key of a duplicate or None when the duplicate is the row key bytes).

    In a ``fixed`` index (made for a one-column integer key) it takes 9 bytes: a NULL
    flag, then the value plus 2**63 big-endian (the order of the key's encoding); the
    index packs such keys with no length prefix."""
    if not fixed:
        return (lambda kb, row: kb), None
    (column,) = key_columns

    def dup_of(kb: bytes, row: tuple) -> bytes:
        value = row[column]
        return _NULL_DUP if value is None else b"\x01" + (value + _BIAS).to_bytes(8, "big")

    def pk_of(dup: bytes) -> tuple:
        return (int.from_bytes(dup[1:], "big") - _BIAS,) if dup[0] else (None,)

    return dup_of, pk_of


def stored_columns(key_columns: list[int], width: int) -> list[int]:
    """The columns of a row of ``width`` columns that its stored value holds: all but the
    primary key columns when those lead the row (the key holds them), else all."""
    return list(range(_leading(key_columns), width))


def _leading(key_columns: list[int]) -> int:
    """How many primary key columns lead the row (all of them or none)."""
    return len(key_columns) if list(key_columns) == list(range(len(key_columns))) else 0


def _encoder(columns: list[int], types: Sequence[DataType] | None) -> Callable[[tuple], bytes]:
    return encode_key if types is None else key_encoder([types[c] for c in columns])


class _Index:
    __slots__ = ("cache", "columns", "dup_of", "encode", "getter", "pk_of", "table", "unique")

    def __init__(self, columns: list[int], table: PackedIndex | None, encode, unique: bool) -> None:
        self.columns = list(columns)
        self.getter = key_getter(self.columns)
        self.encode = encode
        self.cache = KeyCache(encode)
        self.table = table  # None: a primary-key prefix, scanned on the row table
        self.unique = unique  # the whole primary key: one row at most per index key
        self.dup_of = None  # a secondary index: how it stores a primary key (_dup_codec)
        self.pk_of = None


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
        codec (a ``TypedValues``) of the stored part of a row (``stored_columns``), if
        that has one type."""
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
        # primary key columns leading the row are not stored in the value (the key has them)
        self._lead = _leading(self.key_columns)
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
        stored = self._rows.get_many_encoded(encoded)
        before = dict(zip(distinct, self._full(distinct, stored), strict=True))
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
        lead = self._lead
        self._rows.put_many_encoded(
            [(kb, DELETED if new is None else new[lead:]) for kb, _, new in changed]
        )
        for index in self._indexes.values():
            if index.table is not None and changed:
                self._move(index, changed)
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
        fixed = _fixed_keys(self.key_columns, self._types)
        table = self._backend.packed_index(f"{self.name}{INDEX_SEPARATOR}{name}", fixed)
        index = _Index(columns, table, encode, False)
        index.dup_of, index.pk_of = _dup_codec(self.key_columns, table.fixed)
        rows = self._backend.read_txn().stat(self._rows.db)["entries"]
        committed_match = table.committed_len() == rows
        if not committed_match or self._rows.has_pending():
            self._rebuild(index)
        self._indexes[name] = index

    def _rebuild(self, index: _Index) -> None:
        dup_of = index.dup_of
        fresh = [
            (index.encode(index.getter(row)), dup_of(kb, row)) for kb, row in self._scan_rows()
        ]
        index.table.update(index.table.pairs(), fresh)  # type: ignore[union-attr]

    # -- reads ----------------------------------------------------------------

    def get(self, pk: tuple) -> tuple | None:
        """The row with primary key ``pk``, or None."""
        return self.get_many([pk])[0]

    def get_many(self, pks: list[tuple]) -> list[tuple | None]:
        """The rows of ``pks`` in input order."""
        pks = [tuple(pk) for pk in pks]
        return self._full(pks, self._rows.get_many(pks))  # type: ignore[arg-type]

    def _full(self, pks: list[tuple], stored: list) -> list:
        """The rows of primary keys ``pks`` from their ``stored`` values (None: absent)."""
        if not self._lead:
            return stored
        return [
            None if value is None else pk + value for pk, value in zip(pks, stored, strict=True)
        ]

    def _scan_rows(self, prefix: bytes = b"") -> list[tuple[bytes, tuple]]:
        """(row key bytes, row) of every row whose key starts with ``prefix``, in order."""
        found = list(self._rows.scan_encoded(prefix))
        if not self._lead:
            return found
        return [(kb, decode_key(kb) + value) for kb, value in found]

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
            rows = self._full(distinct, self._rows.get_many_encoded(encoded))
            found = [[] if r is None else [r] for r in rows]
        else:
            found = self._scan(spec, sorted(set(encoded)), encoded)
        if len(distinct) == len(keys):
            return found
        by_key = dict(zip(distinct, found, strict=True))
        return [list(by_key[key]) for key in keys]

    def _scan(self, spec: _Index, prefixes: list[bytes], encoded: list[bytes]) -> list[list]:
        """The rows under each of ``encoded`` (``prefixes``: the same, sorted)."""
        if spec.table is None:
            lead = self._lead
            by_prefix = {
                p: [decode_key(kb) + row if lead else row for kb, row in found]
                for p, found in zip(prefixes, self._rows.scan_many(prefixes), strict=True)
            }
            return [by_prefix[p] for p in encoded]
        cuts = dict(zip(prefixes, spec.table.lookup_many(prefixes), strict=True))
        dups = sorted({dup for found in cuts.values() for dup in found})
        if not dups:
            return [[] for _ in encoded]
        if spec.pk_of is not None:
            pks = list(map(spec.pk_of, dups))
            stored = self._rows.get_many_encoded(list(map(self._encode_pk, pks)))
        else:
            stored = self._rows.get_many_encoded(dups)
            pks = list(map(decode_key, dups)) if self._lead else []
        rows = dict(zip(dups, self._full(pks, stored), strict=True))
        return [[rows[dup] for dup in cuts[p]] for p in encoded]

    def count(self) -> int:
        """The number of rows."""
        return len(self._rows)

    def items(self) -> list[tuple[tuple, tuple]]:
        """Every (primary key, row) in key order (for tests and inspection)."""
        return [(decode_key(kb), row) for kb, row in self._scan_rows()]

    def _move(self, index: _Index, changed: list[tuple[bytes, tuple | None, tuple | None]]) -> None:
        """Moves the index entries of the changed rows (``(row key, old, new)``, None:
        absent) whose indexed columns changed; each index key is encoded once."""
        getter, dup_of = index.getter, index.dup_of
        gone, added = [], []
        for kb, old, new in changed:
            if old is None:
                added.append((getter(new), kb, new))  # type: ignore[arg-type]
            elif new is None:
                gone.append((getter(old), kb, old))
            elif (old_key := getter(old)) != (new_key := getter(new)):
                gone.append((old_key, kb, old))
                added.append((new_key, kb, new))
        encode = index.cache.encode_many
        try:
            pairs = [
                [
                    (ik, dup_of(kb, row))
                    for ik, (_, kb, row) in zip(encode([e[0] for e in side]), side, strict=True)
                ]
                for side in (gone, added)
            ]
        except OverflowError:
            raise StateError(
                f"indexed table {self.name!r}: a primary key is outside BIGINT's range; "
                "declare the key column with the type of its values"
            ) from None
        index.table.update(*pairs)  # type: ignore[union-attr]
