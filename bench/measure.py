"""Run a command in its own process group and measure it: wall time, peak RSS of the
process tree (sampled from /proc: summed VmRSS and each process's VmHWM), CPU seconds.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import lmdb

TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Measured:
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    peak_rss_mb: float
    cpu_s: float


def load() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` shows them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def tree_usage(root: int, hwm: dict[int, int]) -> tuple[int, float]:
    """(RSS bytes, CPU seconds) summed over ``root`` and its live descendants; records each
    process's own peak (VmHWM, which starts afresh at exec) in ``hwm``."""
    tree, stack, rss, cpu = _children(), [root], 0, 0.0
    while stack:
        pid = stack.pop()
        stack.extend(tree.get(pid, ()))
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        mem = {k: v for k, v in _kib(status)}
        rss += mem.get("VmRSS", 0)
        hwm[pid] = max(hwm.get(pid, 0), mem.get("VmHWM", 0))
        cpu += sum(int(f) for f in fields[11:15]) / TICK  # utime stime cutime cstime
    return rss, cpu


def _kib(status: str):
    for line in status.splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            key, value = line.split(":", 1)
            yield key, int(value.split()[0]) * 1024


class Sampler(threading.Thread):
    """Samples a process tree: the peak of its summed RSS, each process's VmHWM, CPU."""

    def __init__(self, pid: int, every: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.peak_rss, self.cpu = 0, 0.0
        self.hwm: dict[int, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.every):
            rss, cpu = tree_usage(self.pid, self.hwm)
            self.peak_rss = max(self.peak_rss, rss)
            self.cpu = max(self.cpu, cpu)

    @property
    def peak(self) -> int:
        """Bytes: the sampled peak, or the sum of the processes' own peaks if higher
        (a peak between two samples; for a tree this is an upper bound)."""
        return max(self.peak_rss, sum(self.hwm.values()))


def run(cmd: list[str], cwd: str, timeout: float, env: dict | None = None) -> Measured:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        sampler = Sampler(proc.pid)
        sampler.start()
        timer = threading.Timer(timeout, _kill_group, (proc.pid,))
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        timer.cancel()
        sampler.done.set()
        sampler.join()
        _kill_group(proc.pid)  # a JVM or broker left behind by the child
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measured(
            returncode=proc.returncode,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
            wall_s=wall,
            # not ru_maxrss: it counts the parent's image between fork and exec
            peak_rss_mb=sampler.peak / 2**20,
            cpu_s=max(sampler.cpu, usage.ru_utime + usage.ru_stime),
        )


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# a named database's record in LMDB's main database: MDB_db (pad, flags, depth, branch,
# leaf and overflow pages, entries, root) of a 64-bit build
_MDB_DB = struct.Struct("=IHHQQQQQ")


def state_mb(path: str) -> float:
    """MB of LMDB pages in use (branch + leaf + overflow of every table) in a finished
    job's state directory, as deltaflow's ``StateBackend.stats()`` counts them; 0 when
    there is none."""
    if not os.path.exists(os.path.join(path, "data.mdb")):
        return 0.0
    env = lmdb.open(path, readonly=True, lock=False, subdir=True)
    try:
        size = env.stat()["psize"]
        total = 0
        with env.begin() as txn:
            for name, record in txn.cursor():
                if name.startswith(b"__") or len(record) != _MDB_DB.size:
                    continue
                _, _, _, branch, leaf, overflow, _, _ = _MDB_DB.unpack(record)
                total += (branch + leaf + overflow) * size
        return total / 1e6
    finally:
        env.close()
