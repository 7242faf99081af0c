"""The narrow interface a table has to the LMDB environment it lives in.

``StateBackend`` (``state/backend.py``) owns the environment and implements these
protocols; the tables (``StateTable``, ``PackedIndex``, ``IndexedTable``) are written
against them, so no table module refers back to the backend module."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

if TYPE_CHECKING:
    import lmdb

    Database: TypeAlias = lmdb._Database  # a sub-database's handle
    Txn: TypeAlias = lmdb.Transaction[bytes]  # a transaction without buffers (bytes values)


class Store(Protocol):
    """What a ``StateTable`` reads through: the current read transaction, and the
    handles of sub-databases."""

    path: Path

    def read_txn(self) -> Txn: ...
    def db(self, name: bytes, *, create: bool) -> Any: ...


class TableStore(Store, Protocol):
    """What a table made of tables (a packed index, an indexed mirror) also needs: the
    environment's tables by name, one object per name (``StateBackend.table``,
    ``StateBackend.packed_index``)."""

    def table(self, name: str, values: Any = None, keep: int = 0) -> Any: ...
    def packed_index(self, name: str, fixed: bool = False, int_columns: int = 0) -> Any: ...
