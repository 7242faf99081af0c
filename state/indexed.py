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
changed.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING

from deltaflow.formats.changelog import ADDS
from deltaflow.formats.errors import StateError
from deltaflow.state.keys import encode_key
from deltaflow.state.table import StateTable

if TYPE_CHECKING:
    from deltaflow.state.backend import StateBackend

INDEX_SEPARATOR = "#"


def key_getter(columns: list[int]) -> Callable[[tuple], tuple]:
    """A function picking ``columns`` of a row as a tuple."""
    if len(columns) == 1:
        (only,) = columns
        return lambda row: (row[only],)
    return itemgetter(*columns)


class _Index:
    __slots__ = ("columns", "getter", "table")

    def __init__(self, columns: list[int], table: StateTable | None) -> None:
        self.columns = list(columns)
        self.getter = key_getter(self.columns)
        self.table = table  # None: a primary-key prefix, scanned on the row table


class IndexedTable:
    """Rows by primary key plus secondary indexes; see the module docstring."""

    def __init__(
        self,
        backend: StateBackend,
        name: str,
        key_columns: list[int],
        indexes: dict[str, list[int]],
    ) -> None:
        if not key_columns:
            raise StateError(f"indexed table {name!r} needs at least one primary key column")
        if INDEX_SEPARATOR in name:
            raise StateError(f"indexed table name {name!r} must not contain {INDEX_SEPARATOR!r}")
        self.name = name
        self.key_columns = list(key_columns)
        self._backend = backend
        self._pk = key_getter(self.key_columns)
        self._rows = backend.table(name)
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
        pk_of = self._pk
        pks = [pk_of(row) for row in rows]
        encoded = {pk: encode_key(pk) for pk in dict.fromkeys(pks)}
        before = dict(
            zip(encoded, self._rows.get_many_encoded(list(encoded.values())), strict=True)
        )
        after = dict(before)
        contradictions = []
        for position, (kind, pk, row) in enumerate(zip(kinds, pks, rows, strict=True)):
            if ADDS[kind]:
                after[pk] = row
            elif after[pk] is None:
                contradictions.append(position)
            else:
                after[pk] = None
        for pk, new in after.items():
            old = before[pk]
            if new is not old:
                self._write(encoded[pk], old, new)
        return contradictions

    def _write(self, kb: bytes, old: tuple | None, new: tuple | None) -> None:
        if new is None:
            self._rows.delete_encoded(kb)
        else:
            self._rows.put_encoded(kb, new)
        for index in self._indexes.values():
            if index.table is None:
                continue
            old_key = None if old is None else index.getter(old)
            new_key = None if new is None else index.getter(new)
            if old_key == new_key and (old is None) == (new is None):
                continue
            if old is not None:
                index.table.delete_encoded(encode_key(old_key) + kb)
            if new is not None:
                index.table.put_encoded(encode_key(new_key) + kb, None)

    def build_index(self, name: str, columns: list[int]) -> None:
        """Add a secondary index on ``columns``, backfilled from the rows if needed."""
        if not columns:
            raise StateError(f"index {name!r} of table {self.name!r} needs at least one column")
        if list(columns) == self.key_columns[: len(columns)]:
            self._indexes[name] = _Index(columns, None)
            return
        table = self._backend.table(f"{self.name}{INDEX_SEPARATOR}{name}")
        index = _Index(columns, table)
        txn = self._backend.read_txn()
        committed_match = txn.stat(table.db)["entries"] == txn.stat(self._rows.db)["entries"]
        if not committed_match or self._rows.has_pending():
            self._rebuild(index)
        self._indexes[name] = index

    def _rebuild(self, index: _Index) -> None:
        table = index.table
        stale = [kb for kb, _ in table.scan_encoded(b"")]
        fresh = [encode_key(index.getter(row)) + kb for kb, row in self._rows.scan_encoded(b"")]
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

        Keys are looked up once each, in key order; results are in input order. A
        NULL in a key matches rows whose column is NULL: SQL join semantics (NULL
        matches nothing) are the caller's to apply.
        """
        spec = self._indexes.get(index)
        if spec is None:
            raise StateError(
                f"table {self.name!r} has no index {index!r}; it has {sorted(self._indexes)}"
            )
        prefixes = {key: encode_key(key) for key in keys}
        found: dict[tuple, list[tuple]] = {}
        for key, prefix in sorted(prefixes.items(), key=_second):
            if spec.table is None:
                found[key] = [row for _, row in self._rows.scan_encoded(prefix)]
            else:
                cut = len(prefix)
                pks = [kb[cut:] for kb, _ in spec.table.scan_encoded(prefix)]
                found[key] = self._rows.get_many_encoded(pks) if pks else []
        return [found[key] for key in keys]

    def count(self) -> int:
        """The number of rows."""
        return len(self._rows)

    def items(self) -> list[tuple[tuple, tuple]]:
        """Every (primary key, row) in key order (for tests and inspection)."""
        return self._rows.items()


def _second(item: tuple[tuple, bytes]) -> bytes:
    return item[1]
