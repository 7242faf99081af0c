"""Checkpoints: atomic state + offsets, crash safety under SIGKILL, full disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from deltaflow.formats.errors import StateError
from deltaflow.state.backend import StateBackend
from deltaflow.state.checkpoint import Checkpointer

KEYS = 400

# A job that checkpoints forever: epoch e sets every key of "agg" to e, adds key (e,)
# to "log", and records offset e * KEYS. It resumes from the last checkpoint.
WRITER = textwrap.dedent(
    f"""
    import sys
    from deltaflow.state.backend import StateBackend
    from deltaflow.state.checkpoint import Checkpointer

    backend = StateBackend(sys.argv[1], map_size=32 * 1024)
    checkpointer = Checkpointer(backend)
    restored = checkpointer.restore()
    epoch = 0 if restored is None else restored[0]
    agg, log = backend.table("agg"), backend.table("log")
    while True:
        epoch += 1
        for i in range({KEYS}):
            agg.put((i,), (epoch, "x" * (epoch % 50)))
        log.put((epoch,), epoch)
        checkpointer.commit(epoch, {{"orders:0": epoch * {KEYS}}}, {{"note": "e%d" % epoch}})
        if epoch % 5 == 0:
            print(epoch, flush=True)
    """
)


def check_consistent(path) -> int:
    with StateBackend(path) as backend:
        epoch, offsets = Checkpointer(backend).restore()
        assert offsets == {"orders:0": epoch * KEYS}
        assert backend.meta("note") == f"e{epoch}"
        values = {value for _, value in backend.table("agg").items()}
        assert values == {(epoch, "x" * (epoch % 50))}
        assert [key for key, _ in backend.table("log").items()] == [
            (e,) for e in range(1, epoch + 1)
        ]
        return epoch


def test_sigkill_during_commits_never_leaves_a_half_checkpoint(tmp_path) -> None:
    path = tmp_path / "state"
    epochs = []
    for round_no in range(6):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE)
        assert child.stdout.readline()  # at least five checkpoints written this round
        time.sleep(0.05 * round_no)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        epochs.append(check_consistent(path))
    assert epochs == sorted(epochs) and epochs[-1] >= 30


# The same job with a transactional sink: the "sink" appends the epoch to a file as
# its transaction commit; sink_committed() reads that file. Every epoch must appear
# in the sink exactly once, and the state must be at the sink's last epoch.
TRANSACTIONAL_WRITER = textwrap.dedent(
    f"""
    import os, sys
    from deltaflow.state.backend import StateBackend
    from deltaflow.state.checkpoint import Checkpointer

    state_dir, sink_path = sys.argv[1], sys.argv[2]

    def sink_epochs():
        if not os.path.exists(sink_path):
            return []
        with open(sink_path) as f:
            return [int(line) for line in f.read().split("\\n")[:-1]]

    backend = StateBackend(state_dir, map_size=32 * 1024)
    checkpointer = Checkpointer(backend)
    restored = checkpointer.restore(lambda e: e in sink_epochs())
    epoch = 0 if restored is None else restored[0]
    agg, log = backend.table("agg"), backend.table("log")
    sink = open(sink_path, "a")

    def commit_sink():
        sink.write("%d\\n" % epoch)
        sink.flush()

    while True:
        epoch += 1
        for i in range({KEYS}):
            agg.put((i,), (epoch, "x" * (epoch % 50)))
        log.put((epoch,), epoch)
        # steps 2 to 4 of the job's checkpoint (processor/job.py: Job.checkpoint)
        offsets = {{"orders:0": epoch * {KEYS}}}
        checkpointer.commit(epoch, offsets, {{"note": "e%d" % epoch}}, pending=True)
        commit_sink()
        checkpointer.finalize()
        if epoch % 5 == 0:
            print(epoch, flush=True)
    """
)


def test_sigkill_with_transactional_sink_gives_each_epoch_exactly_once(tmp_path) -> None:
    path, sink = tmp_path / "state", tmp_path / "sink.txt"

    def committed(epoch: int) -> bool:
        return str(epoch) in sink.read_text().split("\n")[:-1]

    for round_no in range(6):
        child = subprocess.Popen(
            [sys.executable, "-c", TRANSACTIONAL_WRITER, str(path), str(sink)],
            stdout=subprocess.PIPE,
        )
        assert child.stdout.readline()
        time.sleep(0.05 * round_no)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        with StateBackend(path) as backend:
            Checkpointer(backend).restore(committed)
        epoch = check_consistent(path)
        lines = sink.read_text().split("\n")
        epochs = [int(line) for line in lines[:-1]]
        assert epochs == list(range(1, len(epochs) + 1))  # no epoch twice, none skipped
        assert epoch == epochs[-1]  # state is exactly at the sink's last committed epoch


def test_pending_epoch_rolls_back_unless_sink_committed(tmp_path) -> None:
    with StateBackend(tmp_path / "s") as backend:
        checkpointer = Checkpointer(backend)
        table = backend.table("t")
        table.put((1,), "one")
        table.put((2,), "two")
        transactional_checkpoint(checkpointer, 1, {"src": 10})
        table.put((1,), "ONE")
        table.delete((2,))
        table.put((3,), "three")

        def crash() -> None:
            raise KeyboardInterrupt  # the job dies after step 2, before the sink commits

        with pytest.raises(KeyboardInterrupt):
            transactional_checkpoint(checkpointer, 2, {"src": 20}, {"note": "second"}, crash)
    with StateBackend(tmp_path / "s") as backend:
        assert Checkpointer(backend).restore(lambda epoch: False) == (1, {"src": 10})
        assert backend.table("t").items() == [((1,), "one"), ((2,), "two")]
        assert backend.meta("note") is None
        assert Checkpointer(backend).restore() == (1, {"src": 10})  # nothing pending any more


def test_pending_epoch_is_kept_when_sink_committed(tmp_path) -> None:
    with StateBackend(tmp_path / "s") as backend:
        checkpointer = Checkpointer(backend)
        backend.table("t").put((1,), "one")
        transactional_checkpoint(checkpointer, 1, {"src": 10})
        backend.table("t").put((1,), "ONE")
        with pytest.raises(KeyboardInterrupt):
            transactional_checkpoint(checkpointer, 2, {"src": 20}, commit_sink=_interrupt)
    with StateBackend(tmp_path / "s") as backend:
        assert Checkpointer(backend).restore(lambda epoch: epoch == 2) == (2, {"src": 20})
        assert backend.table("t").items() == [((1,), "ONE")]
        assert backend.roll_back() == 0  # the undo log is gone


def _interrupt() -> None:
    raise KeyboardInterrupt


def transactional_checkpoint(checkpointer, epoch, offsets, extra=None, commit_sink=None) -> None:
    """Steps 2 to 4 of a checkpoint with a Kafka transaction (``Job.checkpoint``):
    ``commit_sink`` stands for step 3, the transaction's commit."""
    checkpointer.commit(epoch, offsets, extra, pending=True)
    if commit_sink is not None:
        commit_sink()
    checkpointer.finalize()


def test_restore_of_fresh_directory_is_none(tmp_path) -> None:
    with StateBackend(tmp_path / "s") as backend:
        assert Checkpointer(backend).restore() is None


def test_restore_drops_uncommitted_writes(tmp_path) -> None:
    with StateBackend(tmp_path / "s") as backend:
        checkpointer = Checkpointer(backend)
        backend.table("t").put((1,), "kept")
        checkpointer.commit(1, {"src": 10})
        backend.table("t").put((1,), "lost")
        assert checkpointer.restore() == (1, {"src": 10})
        assert backend.table("t").get((1,)) == "kept"


def test_epoch_must_move_forward(tmp_path) -> None:
    with StateBackend(tmp_path / "s") as backend:
        checkpointer = Checkpointer(backend)
        checkpointer.commit(4, {"src": 1})
        with pytest.raises(StateError, match="epoch 4 is not after the last committed epoch 4"):
            checkpointer.commit(4, {"src": 2})
        assert checkpointer.restore() == (4, {"src": 1})


FULL_DISK = textwrap.dedent(
    """
    import resource, signal, sys
    from deltaflow.formats.errors import StateError
    from deltaflow.state.backend import StateBackend
    from deltaflow.state.checkpoint import Checkpointer

    backend = StateBackend(sys.argv[1])
    checkpointer = Checkpointer(backend)
    backend.table("t").put((0,), "small")
    checkpointer.commit(1, {"src": 1})
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    limit = 2 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    for i in range(1, 3000):
        backend.table("t").put((i,), "y" * 2000)
    try:
        checkpointer.commit(2, {"src": 2})
    except StateError as err:
        print(err)
        sys.exit(0)
    sys.exit(1)
    """
)


def test_full_disk_is_a_state_error_and_keeps_last_checkpoint(tmp_path) -> None:
    path = tmp_path / "s"
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "the disk is full" in done.stdout and "last checkpoint is intact" in done.stdout
    with StateBackend(path) as backend:
        assert Checkpointer(backend).restore() == (1, {"src": 1})
        assert backend.table("t").items() == [((0,), "small")]
