"""The undo log: before-images of one checkpoint, kept until its sink commit is known.

With a transactional sink, the state of epoch N is committed to LMDB before the
sink's Kafka transaction commits. If the job dies in between, the restart must
know which way to go: the undo log holds, for every key that epoch N's LMDB
transaction wrote (state tables and checkpoint metadata alike), the value it had
before, or that it was absent. Rolling back writes those images back in one
transaction; forgetting drops them.

Images live in the sub-database ``__undo__`` under 8-byte sequence numbers (so
no key length limit applies); each value is ``<4-byte name length><table name>
<4-byte key length><key><b'+' old value | b'-'>``. Roll-back applies images newest
first, so that the oldest image of a key wins. A secondary index is an ordinary table
(``deltaflow.state.packed_index``): its images are whole index entries.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deltaflow.state.store import Database, Txn

UNDO_DB = b"__undo__"
_SEQ = struct.Struct(">Q")
_LEN = struct.Struct(">I")


def record(
    txn: Txn,
    undo_db: Database,
    name: bytes,
    db: Database,
    items: list[tuple[bytes, bytes | None]],
) -> None:
    """Save the current values of the keys ``items`` is about to write."""
    keys = [key for key, _ in items]
    old = dict(txn.cursor(db=db).getmulti(keys))
    seq = txn.stat(undo_db)["entries"]
    head = _LEN.pack(len(name)) + name
    images = []
    for key in keys:
        before = old.get(key)
        image = b"-" if before is None else b"+" + before
        images.append((_SEQ.pack(seq), head + _LEN.pack(len(key)) + key + image))
        seq += 1
    txn.cursor(db=undo_db).putmulti(images, append=True)


def tables(txn: Txn, undo_db: Database) -> set[bytes]:
    """The names of the tables with images to roll back."""
    return {_split(value)[0] for value in txn.cursor(db=undo_db).iternext(keys=False)}


def roll_back(txn: Txn, undo_db: Database, handles: dict[bytes, Database]) -> int:
    """Write every image back (newest first), then empty the log; returns the count."""
    count = 0
    for value in txn.cursor(db=undo_db).iterprev(keys=False):
        name, key, image = _split(value)
        if image[:1] == b"+":
            txn.put(key, image[1:], db=handles[name])
        else:
            txn.delete(key, db=handles[name])
        count += 1
    txn.drop(undo_db, delete=False)
    return count


def forget(txn: Txn, undo_db: Database) -> None:
    """Drop every image: the checkpoint they belong to is final."""
    txn.drop(undo_db, delete=False)


def _split(value: bytes) -> tuple[bytes, bytes, bytes]:
    name_len = _LEN.unpack_from(value, 0)[0]
    name = value[4 : 4 + name_len]
    pos = 4 + name_len
    key_len = _LEN.unpack_from(value, pos)[0]
    pos += 4
    return name, value[pos : pos + key_len], value[pos + key_len :]
