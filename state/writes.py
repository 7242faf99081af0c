"""Writing a table's buffered items into an LMDB write transaction (``StateBackend.commit``)."""

from __future__ import annotations

from collections import deque
from functools import partial
from itertools import compress, repeat
from operator import is_, itemgetter, not_
from typing import TYPE_CHECKING, cast

import lmdb

from deltaflow.formats.errors import StateError

if TYPE_CHECKING:
    from deltaflow.state.store import Database, Txn

MAX_KEY_BYTES = 511  # LMDB's compiled-in key size limit
_first = itemgetter(0)
_second = itemgetter(1)


def write_items(
    txn: Txn, name: bytes, db: Database, items: list[tuple[bytes, bytes | None]]
) -> None:
    """Writes ``items`` (a value None deletes its key); the puts and the deletes are sorted
    out by C-level maps, with no Python step per item."""
    values = list(map(_second, items))
    gone = list(map(is_, values, repeat(None)))
    try:
        if True not in gone:
            if items:
                txn.cursor(db=db).putmulti(cast(list[tuple[bytes, bytes]], items))
            return
        puts = cast(list[tuple[bytes, bytes]], list(compress(items, map(not_, gone))))
        if puts:
            txn.cursor(db=db).putmulti(puts)
        deque(map(partial(txn.delete, db=db), compress(map(_first, items), gone)), maxlen=0)
    except lmdb.BadValsizeError:
        longest = max(len(key) for key, _ in items)
        raise StateError(
            f"state table {name.decode()!r}: a key of {longest} bytes is over LMDB's limit of "
            f"{MAX_KEY_BYTES} bytes (a very long string in a GROUP BY, join or primary key); "
            "shorten that key column, e.g. with SUBSTRING or a hash"
        ) from None
