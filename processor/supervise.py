"""``deltaflow run`` under a watching parent process: a native crash of the job (a
signal such as SIGSEGV) ends in one message and exit status 2 or 70, never in a bare
"Segmentation fault" with nothing on stderr.

The crash seen: librdkafka (2.12 to 2.16) segfaults in its metadata cache
(``strcmp`` in ``rd_kafka_metadata_cache_find`` called by ``rd_kafka_metadata_update_op``)
when a fetch response carries leader information for a topic it cannot name, which the
embedded broker (tansu) sends for a topic deleted while a consumer fetches it: the
topic's name is NULL. It comes with the first fetch response after the deletion, too
soon for any metadata watch to stop the consumer first; and librdkafka's threads block
signals, so no handler inside the process (``faulthandler`` included) runs. Only a
parent can report it, and it says what it finds: a source topic that no longer exists.

The parent forks before anything heavy is imported, forwards SIGTERM and SIGINT (its
handlers are in place before the child starts, so a signal sent once the child printed
its readiness line always reaches the child's own stop handlers), and
exits with the child's status; a child killed by another signal (SIGKILL) makes the
parent die of the same signal. The child dies with its parent (``PR_SET_PDEATHSIG``).
``DELTAFLOW_SUPERVISE=0`` runs the job in the process itself.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

from deltaflow.state.lock import SUPERVISOR_ENV

ENV = "DELTAFLOW_SUPERVISE"
CRASHES = {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE, signal.SIGILL}
FORWARDED = {signal.SIGTERM, signal.SIGINT}
CRASH_EXIT = 70  # EX_SOFTWARE: a crash without a cause the parent could name
_PR_SET_PDEATHSIG = 1


def supervised(run: Callable[[], int], cause: Callable[[], str | None]) -> int:
    """``run()`` in a child process; its exit status, or a message for a crash.
    ``cause`` names what made the job crash, if it can (it runs after the crash)."""
    if (
        os.environ.get(ENV) == "0"
        or not hasattr(os, "fork")
        or not sys.platform.startswith("linux")
    ):
        return run()
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    # SIGTERM/SIGINT wait (blocked) until the parent forwards them: the child's readiness
    # line (launch.announce_ready) then also means that a signal to the parent reaches it
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    pid = os.fork()
    if pid == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
        _child(run, parent)
    return _watch(pid, cause)


def _child(run: Callable[[], int], parent: int) -> None:
    code = 1
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the prctl
            os._exit(1)
        os.environ[SUPERVISOR_ENV] = str(parent)  # the state lock names the parent's PID
        code = run()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _watch(pid: int, cause: Callable[[], str | None]) -> int:
    def forward(signum, frame):  # noqa: ARG001
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    sig = signal.Signals(os.WTERMSIG(status))
    if sig not in CRASHES:
        if sig != signal.SIGKILL:  # its handler cannot be set (nor caught)
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)  # as if the job had been this process
        return 128 + sig
    found = cause()
    head = f"deltaflow: error: the job process died of {sig.name} (a crash inside librdkafka)"
    tail = "the last checkpoint is intact"
    if found:
        print(f"{head}: {found}; {tail}", file=sys.stderr, flush=True)
        return 2
    print(f"{head}; {tail}, a restart resumes from it", file=sys.stderr, flush=True)
    return CRASH_EXIT
