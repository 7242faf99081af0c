"""Writing a table's buffered items into an LMDB write transaction (``StateBackend.commit``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import lmdb

from deltaflow.formats.errors import StateError

if TYPE_CHECKING:
    from deltaflow.state.store import Database, Txn

MAX_KEY_BYTES = 511  # LMDB's compiled-in key size limit


def write_items(
    txn: Txn, name: bytes, db: Database, items: list[tuple[bytes, bytes | None]]
) -> None:
    """Writes ``items`` (a value None deletes its key)."""
    puts = [(k, v) for k, v in items if v is not None]
    try:
        if puts:
            txn.cursor(db=db).putmulti(puts)
        for key, value in items:
            if value is None:
                txn.delete(key, db=db)
    except lmdb.BadValsizeError:
        longest = max(len(key) for key, _ in items)
        raise StateError(
            f"state table {name.decode()!r}: a key of {longest} bytes is over LMDB's limit of "
            f"{MAX_KEY_BYTES} bytes (a very long string in a GROUP BY, join or primary key); "
            "shorten that key column, e.g. with SUBSTRING or a hash"
        ) from None
