"""Semi / anti join without a condition: the per-key batch path against the per-change
path (the same join with an always-TRUE condition), change for change."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_rt_semi_join import semi_node

from deltaflow.formats.changelog import Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.nodes import Literal
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.semi_join import SemiJoinOperator

change_st = st.tuples(
    st.integers(0, 1),  # port
    st.sampled_from([0, 1, 2, 3]),  # any kind, retractions of rows never added included
    st.one_of(st.none(), st.integers(0, 2)),  # join key, NULL included
    st.sampled_from(["a", "b"]),
)


@pytest.mark.parametrize("null_safe", [False, True])
@pytest.mark.parametrize("anti", [False, True], ids=["semi", "anti"])
@settings(max_examples=50, deadline=None)
@given(changes=st.lists(change_st, min_size=4, max_size=40), size=st.integers(1, 8))
def test_per_key_path_equals_the_per_change_path(tmp_path_factory, anti, null_safe, changes, size):
    """Same changelog in the same order and the same state, over restarts (a commit and
    a new operator after every batch pair); duplicate rows and NULL keys included."""
    from deltaflow.state.backend import StateBackend

    true = Literal(parse_type("BOOLEAN NOT NULL"), True)
    outputs, states = [], []
    for condition in (None, true):
        node = semi_node(anti, condition, null_safe=(null_safe,))
        backend = StateBackend(tmp_path_factory.mktemp("s"))
        try:
            out = Batch()
            for start in range(0, len(changes), size):
                op = SemiJoinOperator(node, backend, RuntimeContext())
                for port in (0, 1):
                    batch = Batch()
                    for p, kind, key, text in changes[start : start + size]:
                        if p == port:
                            batch.append(kind, (key, text))
                    out.extend(op.process(batch, port))
                backend.commit({})
            outputs.append(list(zip(out.kinds, out.rows, strict=True)))
            states.append([backend.table(f"3:SemiJoin:{s}").items() for s in ("left", "right")])
        finally:
            backend.close()
    assert outputs[0] == outputs[1]
    assert states[0] == states[1]


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(st.tuples(st.none() | st.integers(), st.text(max_size=2), st.booleans())),
    columns=st.sampled_from([(), (0,), (1,), (2,), (0, 1), (2, 0), (1, 2, 0)]),
)
def test_batch_keys_are_the_key_getters_tuples(rows, columns):
    """The batch key function gives, per row, the tuple ``key_getter`` gives (1-tuples for
    one column, ``()`` for none), NULLs included, which the state keys and the strict
    NULL checks read."""
    from deltaflow.processor.runtime.base import key_getter
    from deltaflow.processor.runtime.semi_join import _batch_keys

    got = _batch_keys(columns)(rows)
    want = [key_getter(columns)(r) for r in rows]
    assert got == want
    assert all(type(k) is tuple and len(k) == len(columns) for k in got)
