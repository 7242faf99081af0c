"""``StateBackend``: the one LMDB environment of a job.

Layers, as in Kafka Streams: LMDB sub-databases hold bytes; ``StateTable`` turns
them into tuple keys and Python values with a write-back buffer; ``commit()`` is
the transaction that writes every table's buffer plus the checkpoint metadata
(source offsets, epoch) at once, so state and offsets can never disagree.

LMDB rules kept here: open the environment in the process that uses it (never
before ``fork()``); one read transaction at a time, renewed after each commit
(a long-lived reader makes the file grow); one write transaction per commit,
never per row; the map grows on demand (``MapFullError`` -> double, retry).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lmdb
import orjson

from deltaflow.formats.errors import StateError
from deltaflow.state import undo as undo_log
from deltaflow.state.indexed import IndexedTable
from deltaflow.state.lmdb_env import (
    META_DB,
    claim,
    open_env,
    open_meta,
    write_error,
)
from deltaflow.state.packed_index import PackedIndex
from deltaflow.state.table import StateTable
from deltaflow.state.values import TypedValues
from deltaflow.state.writes import write_items

if TYPE_CHECKING:
    from deltaflow.state.store import Database, Txn

# A named database's record in the main database: LMDB's MDB_db (64-bit build).
_DB_RECORD = struct.Struct("=IHHQQQQQ")


class StateBackend:
    """One LMDB environment per job; see the module docstring."""

    def __init__(
        self,
        path: str | Path,
        *,
        map_size: int = 1 << 30,
        create: bool = True,
        durable: bool = True,
        readonly: bool = False,
    ) -> None:
        self.path = Path(path)
        self._pid = os.getpid()
        self._env: lmdb.Environment | None = None
        claim(self)
        self._env = open_env(self.path, map_size, create and not readonly, durable, readonly)
        self._read: Txn | None = None
        self._tables: dict[str, StateTable] = {}
        self._indexes: dict[str, PackedIndex] = {}
        self._mirrors: dict[str, IndexedTable] = {}
        self._dbs: dict[bytes, Database] = {}
        self._meta_db = open_meta(self._env, self.path, self.db, create and not readonly)

    # -- tables ---------------------------------------------------------------

    def table(self, name: str, values: TypedValues | None = None, keep: int = 0) -> StateTable:
        """The named table (an LMDB sub-database), created on first use.

        ``values``: the codec of a table whose values all have one type (the first
        caller's counts); without it values are encoded by their shape. ``keep``: how
        many committed values it keeps decoded (see ``StateTable``; the first caller's).
        """
        table = self._tables.get(name)
        if table is None:
            _check_name(name)
            table = StateTable(self, name, self.db(name.encode(), create=True), values, keep)
            self._tables[name] = table
        return table

    def packed_index(self, name: str, fixed: bool = False, int_columns: int = 0) -> PackedIndex:
        """The named secondary index (``deltaflow.state.packed_index``), created on first
        use; ``fixed``: a new one packs primary keys of 9 bytes, ``int_columns`` (two or
        more): of that many integer columns, by their tags (an existing one keeps the
        layout it was written with)."""
        index = self._indexes.get(name)
        if index is None:
            _check_name(name)
            index = PackedIndex(self, name, fixed, int_columns)
            self._indexes[name] = index
        return index

    def indexed(
        self,
        name: str,
        key_columns: list[int],
        indexes: dict[str, list[int]],
        types: list | None = None,
        values: TypedValues | None = None,
        filters: dict | None = None,
    ) -> IndexedTable:
        """The mirror of a CDC table keyed by ``key_columns`` with secondary ``indexes``.

        One object per name: operators that share a source share its mirror, and an
        index asked for by a later caller is added (and backfilled) on the way. The
        first caller's ``types`` (column types: compiled key encoders) and ``values``
        (the rows' codec) count. ``filters``: by index name, the rows a filtered index
        holds (``IndexedTable.build_index``).
        """
        filters = filters or {}
        mirror = self._mirrors.get(name)
        if mirror is None:
            mirror = IndexedTable(self, name, key_columns, indexes, types, values, filters=filters)
            self._mirrors[name] = mirror
            return mirror
        if list(key_columns) != mirror.key_columns:
            raise StateError(
                f"indexed table {name!r} is keyed by columns {mirror.key_columns}, "
                f"not {list(key_columns)}; give each mirror its own name"
            )
        for index, columns in indexes.items():
            known = mirror.indexes.get(index)
            if known is None:
                mirror.build_index(index, columns, filters.get(index))
            elif known != list(columns):
                raise StateError(
                    f"index {index!r} of table {name!r} is on columns {known}, not "
                    f"{list(columns)}; give the index another name"
                )
        return mirror

    def is_open(self) -> bool:
        """The environment is open, and in this process (not a fork's inherited copy)."""
        return self._env is not None and self._pid == os.getpid()

    def db(self, name: bytes, *, create: bool) -> Database:
        """The handle of a sub-database (opened once per environment)."""
        handle = self._dbs.get(name)
        if handle is None:
            env = self._check_process()
            self.end_read()  # a read transaction sees only handles opened before it began
            while handle is None:
                try:
                    handle = env.open_db(name, create=create)
                except lmdb.NotFoundError:
                    raise StateError(
                        f"state directory {self.path} has no table {name.decode()!r}"
                    ) from None
                except lmdb.MapFullError:
                    self._grow()
                except lmdb.Error as err:
                    raise write_error(self.path, err) from err
            self._dbs[name] = handle
        return handle

    # -- transactions ---------------------------------------------------------

    def read_txn(self) -> Txn:
        """The current read transaction (begun lazily, ended by every commit)."""
        if self._read is None:
            self._read = self._check_process().begin(buffers=False)
        return self._read

    def end_read(self) -> None:
        if self._read is not None:
            self._read.abort()
            self._read = None

    def commit(self, meta: Mapping[str, object] | None = None, *, undo: bool = False) -> None:
        """Write every table's buffered writes and ``meta`` in ONE transaction.

        With ``undo``, the transaction also saves the before-image of every key it
        writes (see ``deltaflow.state.undo``), until ``forget_undo`` or ``roll_back``.
        """
        mirrors = [m.commit_writes() for m in self._mirrors.values()]
        writes = [w for w in mirrors if w is not None]
        writes += [
            (t.name.encode(), t.db, t.pending()) for t in self._tables.values() if t.has_pending()
        ]
        writes.append((META_DB, self._meta_db, _meta_items(meta)))
        undo_db = self.db(undo_log.UNDO_DB, create=True) if undo else None

        def body(txn: Txn) -> None:
            for name, db, items in writes:
                if undo_db is not None:
                    undo_log.record(txn, undo_db, name, db, items)
                write_items(txn, name, db, items)

        self.transact(body)
        for mirror in self._mirrors.values():
            mirror.committed()
        for table in self._tables.values():
            table.committed()

    def transact(self, body: Callable[[Txn], None]) -> None:
        """Run ``body`` in ONE write transaction.

        A full map is doubled and the transaction retried; any other LMDB failure
        (a full disk) aborts it, so the last commit stays intact, and raises StateError.
        """
        env = self._check_process()
        self.end_read()
        while True:
            try:
                with env.begin(write=True) as txn:
                    body(txn)
                return
            except lmdb.MapFullError:
                self._grow()
            except lmdb.Error as err:
                raise write_error(self.path, err) from err

    def roll_back(self, meta: dict[str, object] | None = None) -> int:
        """Restore every before-image of the undo log (and write ``meta``) in one transaction.

        Buffered writes are dropped. Returns the number of images written back.
        """
        self.discard()
        if undo_log.UNDO_DB not in self._names():
            return 0
        undo_db = self.db(undo_log.UNDO_DB, create=False)
        names = undo_log.tables(self.read_txn(), undo_db)
        handles = {name: self.db(name, create=False) for name in names if name != META_DB}
        handles[META_DB] = self._meta_db
        restored = []

        def body(txn: Txn) -> None:
            restored.append(undo_log.roll_back(txn, undo_db, handles))
            write_items(txn, META_DB, self._meta_db, _meta_items(meta))

        self.transact(body)
        self.discard()  # nothing kept from before the roll-back
        return restored[0]

    def forget_undo(self, meta: dict[str, object] | None = None) -> None:
        """Drop the undo log (and write ``meta``) in one transaction."""
        undo_db = self.db(undo_log.UNDO_DB, create=True)

        def body(txn: Txn) -> None:
            undo_log.forget(txn, undo_db)
            write_items(txn, META_DB, self._meta_db, _meta_items(meta))

        self.transact(body)

    def discard(self) -> None:
        """Drop every buffered, uncommitted write (and the values kept decoded)."""
        for mirror in self._mirrors.values():
            mirror.forget()
        for table in self._tables.values():
            table.clear()

    # -- metadata -------------------------------------------------------------

    def meta(self, key: str) -> Any:
        """The last committed value of a meta entry, or None."""
        data = self.read_txn().get(key.encode(), db=self._meta_db)
        return None if data is None else orjson.loads(data)

    def check_plan(self, fingerprint: str, description: str) -> None:
        """Refuse a state directory written by a different job or plan."""
        stored = self.meta("plan.fingerprint")
        if stored is None:
            entries = {"plan.fingerprint": fingerprint, "plan.description": description}
            self.transact(
                lambda txn: write_items(txn, META_DB, self._meta_db, _meta_items(entries))
            )
            return
        if stored != fingerprint:
            raise StateError(
                f"state directory {self.path} belongs to a different job or plan "
                f"({self.meta('plan.description')}, fingerprint {stored}), not to this one "
                f"({description}, fingerprint {fingerprint}); replay this job into a new directory "
                "(deltaflow run JOB.sql --state-dir NEW_DIR --from earliest), or delete "
                f"{self.path} to start it from scratch"
            )

    # -- inspection -----------------------------------------------------------

    def table_names(self) -> list[str]:
        """Every table in the environment, in name order (internal ones left out)."""
        return [name.decode() for name in self._names() if not name.startswith(b"__")]

    def _names(self) -> list[bytes]:
        return list(self.read_txn().cursor().iternext(values=False))

    def stats(self) -> list[tuple[str, int, int]]:
        """(table, committed entries, bytes of its pages) for every table.

        Safe from another thread (a metrics server): it reads in a short transaction
        of its own and opens no database handle. A table's record in LMDB's main
        database is its on-disk descriptor (``MDB_db``: flags, depth, branch, leaf and
        overflow page counts, entries, root), read here as it is; opening handles
        while the job opens or commits its own is not allowed by LMDB and fails with
        EINVAL now and then.
        """
        env = self._check_process()
        out = []
        psize = env.stat()["psize"]
        with env.begin() as txn:
            for name, record in txn.cursor().iternext(keys=True, values=True):
                if name.startswith(b"__") or len(record) != _DB_RECORD.size:
                    continue
                _, _, _, branch, leaf, overflow, entries, _ = _DB_RECORD.unpack(record)
                out.append((name.decode(), entries, (branch + leaf + overflow) * psize))
        return out

    def close(self) -> None:
        """Release the environment; buffered writes not committed are dropped."""
        if self._env is not None:
            self.end_read()
            self._tables.clear()
            self._indexes.clear()
            self._mirrors.clear()
            self._env.close()
            self._env = None

    def __enter__(self) -> StateBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ------------------------------------------------------------

    def _grow(self) -> None:
        env = self._check_process()
        size = env.info()["map_size"] * 2
        try:
            env.set_mapsize(size)
        except lmdb.Error as err:
            raise StateError(
                f"state directory {self.path}: cannot grow the LMDB map to {size} bytes ({err}); "
                "free disk space or memory and restart the job, it resumes from the last checkpoint"
            ) from err

    def _check_process(self) -> lmdb.Environment:
        """The open environment, in the process that opened it (else a StateError)."""
        if self._env is None:
            raise StateError(f"state directory {self.path} is closed")
        if os.getpid() != self._pid:
            raise StateError(
                f"state directory {self.path} was opened in another process (before a fork); "
                "open the StateBackend in the process that uses it"
            )
        return self._env


def _meta_items(meta: Mapping[str, object] | None) -> list[tuple[bytes, bytes | None]]:
    return sorted((key.encode(), orjson.dumps(value)) for key, value in (meta or {}).items())


def _check_name(name: str) -> None:
    if not name or name.startswith("__") or "\x00" in name:
        raise StateError(
            f"invalid state table name {name!r}: use a non-empty name not starting with '__'"
        )
