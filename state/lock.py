"""The lock of a state directory: one job process at a time.

A running job holds an exclusive ``flock`` on ``<state-dir>/deltaflow.lock`` for its
whole life and writes its PID into the file. A second process on the same directory
finds the lock taken and stops at once naming that PID; without the lock it would
restore the same checkpoint and write the same output again (at-least-once) or
fence the healthy job's transactions (exactly-once).

The kernel drops a ``flock`` when the holder's last descriptor closes, which happens
on every exit, ``kill -9`` included: a lock file left by a dead process holds nothing,
and the next start takes it over. The descriptor is opened close-on-exec, so
processes the job starts (the embedded broker) never inherit the lock.

``holder`` tells ``deltaflow state inspect`` whether a job runs on a directory
without taking the lock (a shared lock held for an instant; a job starting in that
instant retries for ``RETRY_S``).
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path

from deltaflow.formats.errors import StateError

SUPERVISOR_ENV = "DELTAFLOW_SUPERVISOR_PID"
LOCK_FILE = "deltaflow.lock"
RETRY_S = 0.5  # a job retries a taken lock this long (an inspect holds it for an instant)


def ensure_directory(path: Path) -> None:
    """Creates the state directory (mode 0700, with its parents); a StateError naming the
    directory and the reason when it cannot be created or is not a directory."""
    if path.is_dir():
        return
    if path.exists():
        raise StateError(f"state directory {path} is not a directory; pass a directory path")
    try:
        path.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        if not path.is_dir():
            raise StateError(
                f"state directory {path} is not a directory; pass a directory path"
            ) from None
    except OSError as err:
        raise StateError(
            f"cannot create state directory {path}: {_reason(err)}; pass --state-dir with a "
            "writable location"
        ) from None


class StateLock:
    """The exclusive lock of one state directory, held from ``acquire`` to ``release``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    def acquire(self) -> StateLock:
        """Takes the lock (creating the directory first); a StateError naming the PID of
        the process that holds it."""
        ensure_directory(self.path)
        file = self.path / LOCK_FILE
        try:
            fd = os.open(file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as err:
            raise StateError(
                f"cannot lock state directory {self.path}: {_reason(err)} ({file}); a job "
                "needs a writable state directory, pass --state-dir with a writable location"
            ) from None
        try:
            _lock(fd, self.path)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{owner_pid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def release(self) -> None:
        """Drops the lock (closing the descriptor releases it); the file stays."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> StateLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _lock(fd: int, path: Path) -> None:
    deadline = time.monotonic() + RETRY_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                pid = _pid_in(fd)
                who = f"process {pid}" if pid else "another process"
                raise StateError(
                    f"state directory {path} is in use by {who} (another deltaflow job on the "
                    "same --state-dir); stop that process first, or give this job a "
                    "--state-dir of its own"
                ) from None
            time.sleep(0.02)
        except OSError as err:  # a file system without locks (some network mounts)
            raise StateError(
                f"cannot lock state directory {path}: {_reason(err)}; put the state "
                "directory on a local file system"
            ) from None


def holder(path: str | Path) -> int | None:
    """The PID of the process holding the lock of the state directory ``path``, or None
    when no process holds it (0 when one does but its PID cannot be read)."""
    try:
        fd = os.open(Path(path) / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None  # no lock file: no job with a lock ever ran here
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _pid_in(fd) or 0
    finally:
        os.close(fd)
    return None


def owner_pid() -> int:
    """The PID an operator knows the job by: the watching parent's when ``deltaflow run``
    runs the job in a supervised child (it sets ``DELTAFLOW_SUPERVISOR_PID``), else ours."""
    parent = os.environ.get(SUPERVISOR_ENV, "")
    if parent.isdigit() and int(parent) == os.getppid():
        return int(parent)
    return os.getpid()


def _pid_in(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode("ascii", errors="replace").strip()
    return int(text) if text.isdigit() else None


def _reason(err: OSError) -> str:
    if err.errno == errno.EROFS:
        return "the file system is read-only"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if err.errno == errno.ENOSPC:
        return "the disk is full"
    return err.strerror or str(err)
