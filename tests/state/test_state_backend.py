"""StateBackend and StateTable over real LMDB in tmp_path."""

from __future__ import annotations

import os
import stat
from datetime import datetime
from decimal import Decimal

import pytest

from deltaflow.formats.errors import StateError
from deltaflow.state.backend import StateBackend

ROW = (7, "Alice", Decimal("12.50"), datetime(2024, 1, 2, 3, 4, 5), True, None)


@pytest.fixture
def backend(tmp_path):
    with StateBackend(tmp_path / "state") as b:
        yield b


def test_directory_is_owner_only(tmp_path) -> None:
    with StateBackend(tmp_path / "job" / "state"):
        pass
    mode = stat.S_IMODE(os.stat(tmp_path / "job" / "state").st_mode)
    assert mode == 0o700


def test_buffered_writes_are_visible_before_commit_and_gone_after_discard(backend) -> None:
    table = backend.table("agg")
    table.put((1,), ROW)
    assert table.get((1,)) == ROW
    assert len(table) == 1
    backend.discard()
    assert table.get((1,)) is None
    assert len(table) == 0


def test_commit_persists_values_and_meta_across_reopen(tmp_path) -> None:
    with StateBackend(tmp_path / "s") as b:
        b.table("agg").put(("k", 1), ROW)
        b.table("other").put((None,), [1, {"a": (1, 2)}])
        b.commit({"epoch": 3, "offsets": {"orders:0": 41}})
    with StateBackend(tmp_path / "s", create=False) as b:
        assert b.table("agg").get(("k", 1)) == ROW
        assert b.table("other").get((None,)) == [1, {"a": (1, 2)}]
        assert b.meta("epoch") == 3
        assert b.meta("offsets") == {"orders:0": 41}
        assert b.meta("missing") is None


def test_uncommitted_writes_are_lost_on_close(tmp_path) -> None:
    with StateBackend(tmp_path / "s") as b:
        b.table("agg").put((1,), "committed")
        b.commit({"epoch": 1})
        b.table("agg").put((1,), "not committed")
        b.table("agg").put((2,), "not committed")
    with StateBackend(tmp_path / "s") as b:
        assert b.table("agg").items() == [((1,), "committed")]
        assert b.meta("epoch") == 1


def test_delete_hides_committed_value_and_commits(backend) -> None:
    table = backend.table("t")
    table.put((1,), "a")
    table.put((2,), "b")
    backend.commit()
    table.delete((1,))
    assert table.get((1,)) is None
    assert len(table) == 1
    backend.commit()
    assert table.items() == [((2,), "b")]


def test_scan_prefix_merges_buffer_in_key_order(backend) -> None:
    table = backend.table("t")
    for i in (5, 1, 9):
        table.put(("a", i), i)
    table.put(("b", 0), 0)
    table.put(("", 0), 0)
    backend.commit()
    table.put(("a", 3), 3)  # new key between committed ones
    table.delete(("a", 5))  # committed key hidden
    table.put(("a", 9), 90)  # committed key overwritten
    table.put(("ab", 1), 1)  # a longer string is not in the prefix ("a",)
    assert list(table.scan_prefix(("a",))) == [(("a", 1), 1), (("a", 3), 3), (("a", 9), 90)]
    assert [k for k, _ in table.scan_prefix(())] == [
        ("", 0),
        ("a", 1),
        ("a", 3),
        ("a", 9),
        ("ab", 1),
        ("b", 0),
    ]


def test_scan_prefix_with_many_buffered_keys(backend) -> None:
    table = backend.table("t")
    for i in range(0, 3000, 2):
        table.put((i % 3, i), i)
    backend.commit()
    for i in range(1, 3000, 2):  # new keys, merged into the sorted buffer by the scan
        table.put((i % 3, i), i)
    got = [k for k, _ in table.scan_prefix((1,))]
    assert got == [(1, i) for i in range(3000) if i % 3 == 1]


def test_get_many_in_input_order_with_buffer_and_duplicates(backend) -> None:
    table = backend.table("t")
    for i in range(100):
        table.put((i,), i * 10)
    backend.commit()
    table.put((500,), "new")
    table.delete((3,))
    assert table.get_many([(50,), (3,), (500,), (7,), (50,), (1000,)]) == [
        500,
        None,
        "new",
        70,
        500,
        None,
    ]


def test_tables_are_separate(backend) -> None:
    backend.table("a").put((1,), "a")
    backend.table("b").put((1,), "b")
    backend.commit()
    assert backend.table("a").get((1,)) == "a"
    assert backend.table("b").get((1,)) == "b"
    assert sorted(name for name, _, _ in backend.stats()) == ["a", "b"]


def test_map_grows_on_demand(tmp_path) -> None:
    with StateBackend(tmp_path / "s", map_size=64 * 1024) as b:
        table = b.table("big")
        for batch in range(10):
            for i in range(2000):
                table.put((batch, i), (i, "x" * 100))
            b.commit({"epoch": batch})
        assert len(table) == 20_000
        assert b.meta("epoch") == 9
        ((name, entries, size),) = b.stats()
        assert (name, entries) == ("big", 20_000)
        assert size > 64 * 1024


def test_plan_fingerprint_refuses_other_plan(tmp_path) -> None:
    with StateBackend(tmp_path / "s") as b:
        b.check_plan("f1", "job orders.sql")
        b.check_plan("f1", "job orders.sql")
    with StateBackend(tmp_path / "s") as b:
        with pytest.raises(StateError) as err:
            b.check_plan("f2", "job other.sql")
    text = str(err.value)
    assert "different job or plan" in text and "job orders.sql" in text
    assert "--state-dir" in text and str(tmp_path / "s") in text


def test_missing_or_foreign_directory_is_a_state_error(tmp_path) -> None:
    with pytest.raises(StateError, match="does not exist"):
        StateBackend(tmp_path / "nope", create=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(StateError, match="not a deltaflow state directory"):
        StateBackend(tmp_path / "empty", create=False)
    (tmp_path / "file").write_text("x")
    with pytest.raises(StateError, match="not a directory"):
        StateBackend(tmp_path / "file")


def test_reserved_table_name_is_refused(backend) -> None:
    with pytest.raises(StateError, match="invalid state table name"):
        backend.table("__deltaflow__")


def test_commit_renews_the_read_transaction(backend) -> None:
    table = backend.table("t")
    table.put((1,), 1)
    backend.commit()
    first = backend.read_txn()
    assert table.get((1,)) == 1
    table.put((1,), 2)
    backend.commit()
    assert backend.read_txn() is not first
    assert table.get((1,)) == 2


def test_use_after_fork_is_refused(tmp_path) -> None:
    backend = StateBackend(tmp_path / "s")
    pid = os.fork()
    if pid == 0:  # child: the inherited environment must not be used
        try:
            backend.table("t").get((1,))
        except StateError:
            os._exit(0)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    backend.close()
    assert os.WEXITSTATUS(status) == 0


def test_empty_key_for_a_global_aggregate(backend) -> None:
    table = backend.table("global")
    table.put((), 5)
    table.put((None,), 6)
    backend.commit()
    assert table.get(()) == 5
    assert table.items() == [((), 5), ((None,), 6)]
    assert table.get_many([(), (None,)]) == [5, 6]


def test_key_over_lmdb_limit_is_a_state_error_and_commits_nothing(backend) -> None:
    table = backend.table("by_url")
    table.put(("short",), 1)
    table.put(("x" * 600,), 2)
    with pytest.raises(StateError, match="'by_url': a key of 60[0-9] bytes is over LMDB's limit"):
        backend.commit({"epoch": 1})
    backend.discard()
    assert table.items() == []
    assert backend.meta("epoch") is None


def test_stats_from_another_thread_while_the_job_commits(backend) -> None:
    import threading

    errors: list[BaseException] = []
    done = threading.Event()

    def poll() -> None:
        try:
            while not done.is_set():
                for name, entries, size in backend.stats():
                    assert entries >= 0 and size >= 0 and name
        except BaseException as err:  # reported to the test thread below
            errors.append(err)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        for epoch in range(30):
            table = backend.table(f"t{epoch % 5}")
            for i in range(200):
                table.put((epoch, i), i)
            assert table.get((epoch, 0)) == 0
            backend.commit({"epoch": epoch})
            assert len(table.items()) == 200 * (epoch // 5 + 1)
    finally:
        done.set()
        poller.join()
    assert errors == []
    assert sorted(name for name, _, _ in backend.stats()) == [f"t{i}" for i in range(5)]


def test_opening_one_directory_twice_in_a_process_is_refused(tmp_path) -> None:
    first = StateBackend(tmp_path / "s")
    with pytest.raises(StateError, match="already open in this process"):
        StateBackend(tmp_path / "s")
    first.close()
    StateBackend(tmp_path / "s").close()


def test_stats_read_each_tables_descriptor_as_lmdb_counts_it(tmp_path) -> None:
    """stats() reads the tables' records in the main database; LMDB's own mdb_stat of the
    same tables, through handles opened in a separate environment, must agree."""
    import lmdb

    with StateBackend(tmp_path / "s") as b:
        for n, name in enumerate(("small", "wide")):
            table = b.table(name)
            for i in range(300 * (n + 1)):
                table.put((i,), "v" * (40 + 3000 * n))  # 'wide' values overflow a page
        b.commit()
        got = {name: (entries, size) for name, entries, size in b.stats()}
    env = lmdb.open(str(tmp_path / "s"), max_dbs=16, readonly=True, lock=False)
    try:
        want = {}
        for name in ("small", "wide"):
            db = env.open_db(name.encode(), create=False)
            with env.begin() as txn:
                s = txn.stat(db)
            pages = s["branch_pages"] + s["leaf_pages"] + s["overflow_pages"]
            want[name] = (s["entries"], pages * s["psize"])
    finally:
        env.close()
    assert got == want
    assert want["wide"][1] > 600 * 3000
