"""A hot join key: one item joined with thousands of orders (both sides with a unique key,
the one-comprehension path of ``join._compile_inner_unique``), before and after a
restart from the committed state."""

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


def join_node() -> Join:
    return Join(
        node_id=3,
        inputs=(scan(1, L), scan(2, R)),
        fields=fields(OUT),
        changelog_mode=ALL,
        join_type="INNER",
        left_keys=(1,),
        right_keys=(0,),
        left_unique_keys=((0,),),
        right_unique_keys=((0,),),
    )


def feed(op: JoinOperator, port: int, text: str) -> list[str]:
    return show(op.process(parse_changelog(text, L if port == 0 else R), port), OUT)


def test_a_hot_items_update_joins_every_order_in_order_across_a_restart(tmp_path):
    """Each order of item 7 once per change of the item, in the order the orders were
    added, and the same after a restart, which reads the key's rows back in that order."""
    path = tmp_path / "state"
    backend = StateBackend(path)
    op = JoinOperator(join_node(), backend, RuntimeContext())
    assert feed(op, 1, "+I[7, x]") == []
    feed(op, 0, "\n".join(f"+I[{i}, 7, o{i}]" for i in range(HOT)) + "\n+I[9000, 8, other]")
    assert feed(op, 0, "-U[5, 7, o5]\n+U[5, 7, changed]") == [
        "-U[5, 7, o5, 7, x]",
        "+U[5, 7, changed, 7, x]",
    ]
    backend.commit({})
    # order 5's -U removed it, its +U added it again: it now comes last
    orders = [f"{i}, 7, o{i}" for i in range(HOT) if i != 5] + ["5, 7, changed"]
    expected = [f"-U[{o}, 7, x]" for o in orders] + [f"+U[{o}, 7, y]" for o in orders]
    assert feed(op, 1, "-U[7, x]\n+U[7, y]") == expected
    backend.close()  # a crash: the item's update was not committed

    backend = StateBackend(path)
    try:
        op = JoinOperator(join_node(), backend, RuntimeContext())
        assert feed(op, 1, "-U[7, x]\n+U[7, y]") == expected
        assert feed(op, 1, "+I[8, z]") == ["+I[9000, 8, other, 8, z]"]
    finally:
        backend.close()
