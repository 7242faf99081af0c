"""The regular join's state holds one entry per row (``join_state``): a hot join key's
checkpoint writes the rows that changed, not all of the key's rows, and what a
restarted job reads back joins as the rows written."""

from __future__ import annotations

from rt_helpers import ALL, fields, parse_changelog, scan, show, types

from deltaflow.processor.plan import Join
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.join import JoinOperator
from deltaflow.state.backend import StateBackend

# orders (id, item, s) unique on id, joined on item with items (item, name) unique on item
L = types("INT", "INT", "STRING")
R = types("INT", "STRING")
OUT = L + R
HOT = 2000  # orders of item 7


def join_node(join_type: str = "INNER", unique: bool = True) -> Join:
    return Join(
        node_id=3,
        inputs=(scan(1, L), scan(2, R)),
        fields=fields(OUT),
        changelog_mode=ALL,
        join_type=join_type,
        left_keys=(1,),
        right_keys=(0,),
        left_unique_keys=((0,),) if unique else (),
        right_unique_keys=((0,),) if unique else (),
    )


def feed(op: JoinOperator, port: int, text: str) -> list[str]:
    return show(op.process(parse_changelog(text, L if port == 0 else R), port), OUT)


def hot_orders() -> str:
    return "\n".join(f"+I[{i}, 7, o{i}]" for i in range(HOT))


def pending(backend: StateBackend, side: str) -> list:
    return backend.table(f"3:Join:{side}").pending()


def test_changing_one_row_of_a_hot_key_writes_one_entry(tmp_path):
    for unique in (True, False):
        backend = StateBackend(tmp_path / f"state-{unique}")
        try:
            op = JoinOperator(join_node(unique=unique), backend, RuntimeContext())
            feed(op, 1, "+I[7, x]")
            feed(op, 0, hot_orders())
            assert len(pending(backend, "left")) == HOT
            backend.commit({})
            out = feed(op, 0, "-U[5, 7, o5]\n+U[5, 7, changed]")
            assert out == ["-U[5, 7, o5, 7, x]", "+U[5, 7, changed, 7, x]"]
            written = pending(backend, "left")
            # a unique side replaces the entry of id 5; otherwise one row goes, one comes
            assert len(written) == (1 if unique else 2)
            assert pending(backend, "right") == []
            out = feed(op, 1, "-U[7, x]\n+U[7, y]")  # the hot item changes: as few entries
            orders = [f"{i}, 7, {'changed' if i == 5 else f'o{i}'}" for i in range(HOT)]
            assert sorted(out[:HOT]) == sorted(f"-U[{o}, 7, x]" for o in orders)
            assert sorted(out[HOT:]) == sorted(f"+U[{o}, 7, y]" for o in orders)
            assert len(pending(backend, "right")) == len(written)
            assert len(pending(backend, "left")) == len(written)
        finally:
            backend.close()


def test_a_restarted_join_reads_back_the_rows_of_a_hot_key(tmp_path):
    """A crash after a checkpoint: the batches since are lost and processed again by a new
    operator on the reopened state, with the same output as before the crash."""
    path = tmp_path / "state"
    backend = StateBackend(path)
    op = JoinOperator(join_node("LEFT"), backend, RuntimeContext())
    feed(op, 1, "+I[7, x]")
    feed(op, 0, hot_orders() + "\n+I[9000, 8, lonely]")
    feed(op, 0, "-D[3, 7, o3]")
    backend.commit({})
    replay = [(0, "-U[5, 7, o5]\n+U[5, 7, changed]"), (1, "-D[7, x]"), (0, "+I[9001, 8, b]")]
    before = [feed(op, port, text) for port, text in replay]
    backend.close()  # the crash: nothing since the commit is written

    backend = StateBackend(path)
    try:
        op = JoinOperator(join_node("LEFT"), backend, RuntimeContext())
        after = [feed(op, port, text) for port, text in replay]
    finally:
        backend.close()
    assert after == before
    # an outer side's changes are -D and +I (Flink's rules, module docstring of join.py)
    assert before[0] == ["-D[5, 7, o5, 7, x]", "+I[5, 7, changed, 7, x]"]
    # the item's deletion: every order but the deleted id 3 loses its match, once each
    orders = {f"{i}, 7, {'changed' if i == 5 else f'o{i}'}" for i in range(HOT) if i != 3}
    assert sorted(before[1]) == sorted(
        [f"-D[{o}, 7, x]" for o in orders] + [f"+I[{o}, null, null]" for o in orders]
    )
    assert before[2] == ["+I[9001, 8, b, null, null]"]


def test_a_row_too_long_for_an_lmdb_key_is_stored_under_a_digest(tmp_path):
    """Without a unique key a row is its entry's key; a row of 600 characters is over
    LMDB's 511 bytes, so it is kept under a digest, found again after a restart."""
    path = tmp_path / "state"
    long_text = "z" * 600
    backend = StateBackend(path)
    op = JoinOperator(join_node(unique=False), backend, RuntimeContext())
    feed(op, 1, "+I[7, x]")
    assert (
        feed(op, 0, f"+I[1, 7, {long_text}]\n+I[1, 7, {long_text}]")
        == [f"+I[1, 7, {long_text}, 7, x]"] * 2
    )
    backend.commit({})
    backend.close()

    backend = StateBackend(path)
    try:
        op = JoinOperator(join_node(unique=False), backend, RuntimeContext())
        assert feed(op, 0, f"-D[1, 7, {long_text}]") == [f"-D[1, 7, {long_text}, 7, x]"]
        backend.commit({})
        assert feed(op, 1, "-D[7, x]") == [f"-D[1, 7, {long_text}, 7, x]"]  # one copy left
        backend.commit({})
        assert feed(op, 0, f"-D[1, 7, {long_text}]") == []
        backend.commit({})
        assert backend.table("3:Join:left").items() == []
    finally:
        backend.close()
