"""``deltaflow state inspect`` output and errors."""

from __future__ import annotations

import io

import lmdb
import pytest

from deltaflow.formats.changelog import INSERT
from deltaflow.formats.errors import StateError
from deltaflow.processor.cli import main
from deltaflow.state.backend import StateBackend
from deltaflow.state.checkpoint import Checkpointer
from deltaflow.state.inspect import inspect_cli


def make_state(path) -> None:
    with StateBackend(path) as backend:
        backend.check_plan("abc123", "sink orders_by_customer")
        orders = backend.indexed("orders", [0], {"by_customer": [1]})
        orders.apply([INSERT] * 3, [(1, "a"), (2, "b"), (3, "a")])
        backend.table("agg").put(("a",), 2)
        Checkpointer(backend).commit(7, {"orders:0": 3, "customers:1": 12})


def test_inspect_prints_tables_and_last_checkpoint(tmp_path) -> None:
    make_state(tmp_path / "s")
    out = io.StringIO()
    assert inspect_cli(str(tmp_path / "s"), out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == f"state directory {tmp_path / 's'}"
    assert lines[1] == "plan: sink orders_by_customer (fingerprint abc123)"
    assert lines[2].startswith("last checkpoint: epoch 7 at ")
    assert lines[3:5] == ["  offsets customers:1: 12", "  offsets orders:0: 3"]
    table = {line.split()[0]: line.split()[1:] for line in lines[5:]}
    assert table["table"] == ["entries", "bytes"]
    assert table["agg"][0] == "1"
    assert table["orders"][0] == "3"
    assert table["orders#by_customer"][0] == "3"
    assert table["total"][0] == "7"
    assert int(table["orders"][1].replace(",", "")) > 0


def test_inspect_fresh_directory_has_no_checkpoint(tmp_path) -> None:
    StateBackend(tmp_path / "s").close()
    out = io.StringIO()
    inspect_cli(str(tmp_path / "s"), out)
    assert "last checkpoint: none" in out.getvalue()


def test_inspect_missing_directory_is_a_state_error(tmp_path) -> None:
    with pytest.raises(StateError, match="does not exist"):
        inspect_cli(str(tmp_path / "nope"))


def test_inspect_foreign_lmdb_is_a_state_error(tmp_path) -> None:
    env = lmdb.open(str(tmp_path / "other"))
    with env.begin(write=True) as txn:
        txn.put(b"k", b"v")
    env.close()
    with pytest.raises(StateError, match="not a deltaflow state directory"):
        inspect_cli(str(tmp_path / "other"))


def test_cli_state_inspect(tmp_path, capsys) -> None:
    make_state(tmp_path / "s")
    assert main(["state", "inspect", "--state-dir", str(tmp_path / "s")]) == 0
    assert "last checkpoint: epoch 7" in capsys.readouterr().out
    assert main(["state", "inspect", "--state-dir", str(tmp_path / "none")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_inspect_shows_a_pending_epoch(tmp_path) -> None:
    with StateBackend(tmp_path / "s") as backend:
        backend.table("t").put((1,), 1)
        # the job dies after step 2 of a checkpoint with a Kafka transaction
        Checkpointer(backend).commit(3, {"src": 1}, pending=True)
    out = io.StringIO()
    inspect_cli(str(tmp_path / "s"), out)
    assert "epoch 3 waits for its sink transaction" in out.getvalue()
    assert "__undo__" not in out.getvalue()
