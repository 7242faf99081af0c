"""INNER join with a condition: the batch loop against the rule-by-rule path, and the
ON TRUE join of a one-row side (TPC-H Q11 and Q22's scalar subquery)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import inner_join_node, types

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.nodes import Call, InputRef
from deltaflow.processor.plan import Join
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.join import JoinOperator

# left (id, k, v), right (k, w); the condition v <= w
L = types("INT", "INT", "INT")
R = types("INT", "INT")
OUT = L + R


def less_or_equal(left_col: int, right_col: int) -> Call:
    i = parse_type("INT")
    return Call(parse_type("BOOLEAN"), "<=", (InputRef(i, left_col), InputRef(i, right_col)))


def join_node(keys: bool, left_unique=(), right_unique=()) -> Join:
    unique = {"left_unique_keys": left_unique, "right_unique_keys": right_unique}
    return inner_join_node(L, R, keys, less_or_equal(2, 4), **unique)


change_st = st.tuples(
    st.integers(0, 1),  # port
    st.sampled_from([0, 1, 2, 3]),  # any kind, retractions of rows never added included
    st.integers(0, 3),  # left: id; right: unused
    st.one_of(st.none(), st.integers(0, 1)),  # join key, NULL included
    st.integers(0, 3),  # the compared value
)

SHAPES = {
    "no unique keys": {},
    "left unique": {"left_unique": ((0,),)},
    "right unique": {"right_unique": ((0,),)},
    "both unique": {"left_unique": ((0,),), "right_unique": ((0,),)},
}


@pytest.mark.parametrize("keys", [True, False], ids=["equi", "keyless"])
@pytest.mark.parametrize("shape", list(SHAPES))
@settings(max_examples=40, deadline=None)
@given(changes=st.lists(change_st, min_size=4, max_size=30), size=st.integers(1, 6))
def test_condition_batch_loop_equals_the_rule_by_rule_path(
    tmp_path_factory, keys, shape, changes, size
):
    """Same changelog, in the same order, and the same state as the general per-change
    rules, over restarts (a commit and a new operator every batch pair)."""
    from deltaflow.state.backend import StateBackend

    node = join_node(keys, **SHAPES[shape])
    outputs, states = [], []
    for batched in (True, False):
        backend = StateBackend(tmp_path_factory.mktemp("s"))
        try:
            out = Batch()
            for start in range(0, len(changes), size):
                op = JoinOperator(node, backend, RuntimeContext())
                assert op.inner_condition
                op.inner_condition = batched
                for port in (0, 1):
                    batch = Batch()
                    for p, kind, ident, key, value in changes[start : start + size]:
                        if p == port:
                            batch.append(kind, (ident, key, value) if p == 0 else (key, value))
                    out.extend(op.process(batch, port))
                backend.commit({})
            outputs.append(list(zip(out.kinds, out.rows, strict=True)))
            states.append([backend.table(f"3:Join:{s}").items() for s in ("left", "right")])
        finally:
            backend.close()
    assert outputs[0] == outputs[1]
    assert states[0] == states[1]


def test_a_change_of_the_one_row_side_rejoins_every_row_it_holds_for_in_order(backend, ctx):
    """ON TRUE against a scalar subquery's one row: its -U/+U retracts the rows the old
    value held for and adds those the new one holds for, in the order they were added,
    each pair once (Flink's changelog: one joined row per matching pair and change)."""
    op = JoinOperator(join_node(False, left_unique=((0,),)), backend, ctx)
    customers = [(i, 0, v) for i, v in enumerate([5, 1, 7, 3, 9, 2])]
    assert op.process(Batch([INSERT] * 6, customers), 0).rows == []
    out = op.process(Batch([INSERT], [(0, 4)]), 1)
    assert out.kinds == [INSERT] * 3
    assert out.rows == [(1, 0, 1, 0, 4), (3, 0, 3, 0, 4), (5, 0, 2, 0, 4)]
    out = op.process(Batch([UPDATE_BEFORE, UPDATE_AFTER], [(0, 4), (0, 8)]), 1)
    low = [r + (0, 4) for r in customers if r[2] <= 4]
    high = [r + (0, 8) for r in customers if r[2] <= 8]
    assert out.kinds == [UPDATE_BEFORE] * len(low) + [UPDATE_AFTER] * len(high)
    assert out.rows == low + high
    backend.commit({})
    op = JoinOperator(join_node(False, left_unique=((0,),)), backend, ctx)
    out = op.process(Batch([DELETE], [(2, 0, 7)]), 0)
    assert out.kinds == [DELETE]
    assert out.rows == [(2, 0, 7, 0, 8)]
    out = op.process(Batch([DELETE], [(0, 8)]), 1)
    assert out.kinds == [DELETE] * 4
    assert out.rows == [(0, 0, 5, 0, 8), (1, 0, 1, 0, 8), (3, 0, 3, 0, 8), (5, 0, 2, 0, 8)]
