"""The LMDB environment under a ``StateBackend``: opening it (once per process and path),
claiming its path, checking the state format in its metadata database, and the
user-facing wording of a failed write."""

from __future__ import annotations

import errno
import os
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import lmdb
import orjson

from deltaflow.formats.errors import StateError
from deltaflow.state.lock import ensure_directory

if TYPE_CHECKING:
    from deltaflow.state.store import Database


class Owner(Protocol):
    """What ``claim`` knows of the object that opens an environment (a ``StateBackend``)."""

    path: Path

    def is_open(self) -> bool:
        """Its environment is open, in this process."""
        ...


META_DB = b"__deltaflow__"
FORMAT_KEY = "format"
FORMAT_VERSION = 4  # 3: secondary indexes packed per index key; 4: session accumulators
MAX_DBS = 4096
# The environments open in this process, by real path: LMDB forbids opening one twice.
_OPEN: weakref.WeakValueDictionary[str, Owner] = weakref.WeakValueDictionary()
# LMDB reports a short write (a full disk, a file size limit) as EIO.
_DISK_ERRORS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EIO)


def open_meta(env: lmdb.Environment, path: Path, db: Callable[..., Any], create: bool) -> Database:
    """The handle of the metadata database of ``env`` at ``path`` (opened with ``db``,
    ``StateBackend.db``), created with the format version in a new environment; a
    StateError for an environment deltaflow did not write, or wrote in another state
    format."""
    names = set()
    with env.begin() as txn:
        names = {name for name in txn.cursor().iternext(values=False)}
    if META_DB not in names:
        if not create:
            raise StateError(
                f"{path} is not a deltaflow state directory (an LMDB environment "
                "without deltaflow metadata); pass the --state-dir of a deltaflow job"
            )
        handle = db(META_DB, create=True)
        version = orjson.dumps(FORMAT_VERSION)
        with env.begin(write=True) as txn:
            txn.put(FORMAT_KEY.encode(), version, db=handle)
        return handle
    handle = db(META_DB, create=False)
    with env.begin() as txn:
        data = txn.get(FORMAT_KEY.encode(), db=handle)
    if data is None or orjson.loads(data) != FORMAT_VERSION:
        raise StateError(
            f"state directory {path} was written by an incompatible deltaflow "
            f"(state format {data!r}, this one reads {FORMAT_VERSION}); replay the job "
            "into a new --state-dir"
        )
    return handle


def open_env(
    path: Path, map_size: int, create: bool, durable: bool, readonly: bool
) -> lmdb.Environment:
    if not path.exists():
        if not create:
            raise StateError(
                f"state directory {path} does not exist; pass the --state-dir of a job"
            )
        ensure_directory(path)
    elif not path.is_dir():
        raise StateError(f"state directory {path} is not a directory; pass a directory path")
    elif not create and not (path / "data.mdb").exists():
        raise StateError(
            f"{path} is not a deltaflow state directory (no data.mdb); pass the --state-dir of a job"
        )
    try:
        return lmdb.open(
            str(path),
            map_size=map_size,
            max_dbs=MAX_DBS,
            create=create,
            sync=durable,
            metasync=durable,
            readahead=False,
            readonly=readonly,
            mode=0o600,
        )
    except lmdb.Error as err:
        raise StateError(f"cannot open state directory {path}: {err}") from err


def write_error(path: Path, err: lmdb.Error) -> StateError:
    text = str(err)
    if any(os.strerror(code) in text for code in _DISK_ERRORS):
        return StateError(
            f"state directory {path}: cannot write to the disk, the disk is full or failing "
            f"({text}); the last checkpoint is intact, free space and restart the job to "
            "resume from it"
        )
    return StateError(
        f"state directory {path}: LMDB write failed ({text}); the last checkpoint is intact, "
        "restart the job to resume from it"
    )


def claim(owner: Owner) -> None:
    """Registers ``owner`` as the one opener of its path in this process; a StateError
    when another owner has it open here."""
    key = os.path.realpath(owner.path)
    other = _OPEN.get(key)
    if other is not None and other.is_open():
        raise StateError(
            f"state directory {owner.path} is already open in this process; use that "
            "StateBackend (LMDB breaks its locks when one process opens an environment twice)"
        )
    _OPEN[key] = owner
