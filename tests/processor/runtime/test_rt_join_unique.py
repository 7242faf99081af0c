"""Regular join over inputs with a unique key: Flink's unique-key state views.

A side whose input has a unique key holds one row per key (``HasUniqueKey`` /
``JoinKeyContainsUniqueKey``): an addition replaces the row of its key, a retraction
removes the key, whatever its other columns.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import ALL, feed_in_batches, fields, parse_changelog, scan, show, types

from deltaflow.formats.changelog import Batch, apply_changelog
from deltaflow.processor.plan import Join
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.join import JoinOperator

# left: (id, k, s) unique on id; right: (k, t) unique on k, the join key
L = types("INT", "INT", "STRING")
R = types("INT", "STRING")
OUT = L + R


def join_node(join_type: str, left_unique=((0,),), right_unique=((0,),)) -> Join:
    return Join(
        node_id=3,
        inputs=(scan(1, L), scan(2, R)),
        fields=fields(OUT),
        changelog_mode=ALL,
        join_type=join_type,
        left_keys=(1,),
        right_keys=(0,),
        left_unique_keys=left_unique,
        right_unique_keys=right_unique,
    )


def feed(op: JoinOperator, steps) -> list[str]:
    out = []
    for port, text in steps:
        out += show(op.process(parse_changelog(text, L if port == 0 else R), port), OUT)
    return out


@pytest.mark.parametrize("join_type", ["INNER", "LEFT"])
def test_an_addition_replaces_the_row_of_its_unique_key(backend, ctx, join_type):
    """Flink puts a row under its unique key: a second +I of id 1 (no retraction in
    between) leaves only the second row to join a later match."""
    op = JoinOperator(join_node(join_type), backend, ctx)
    feed(op, [(0, "+I[1, 7, a]\n+I[1, 7, b]")])
    backend.commit({})
    op = JoinOperator(join_node(join_type), backend, ctx)
    out = feed(op, [(1, "+I[7, x]")])
    tail = ["+I[1, 7, b, 7, x]"]
    if join_type == "LEFT":  # the null-padded rows emitted before are retracted once
        assert out == ["-D[1, 7, b, null, null]", *tail]
    else:
        assert out == tail


def test_a_retraction_removes_its_unique_key_whatever_the_other_columns(backend, ctx):
    op = JoinOperator(join_node("INNER"), backend, ctx)
    out = feed(
        op,
        [
            (1, "+I[7, x]"),
            (0, "+I[1, 7, a]"),
            (0, "-D[1, 7, changed]"),  # the key's row goes, the emitted row is the input's
            (1, "-U[7, x]\n+U[7, y]"),
        ],
    )
    assert out == ["+I[1, 7, a, 7, x]", "-D[1, 7, changed, 7, x]"]


def test_rows_without_a_hashable_unique_key_are_held_as_a_multiset(backend, ctx):
    """An ARRAY key column cannot key the state: the side keeps whole rows (copies)."""
    t = types("ARRAY<INT>", "INT")
    node = Join(
        node_id=3,
        inputs=(scan(1, t), scan(2, R)),
        fields=fields(t + R),
        changelog_mode=ALL,
        join_type="INNER",
        left_keys=(1,),
        right_keys=(0,),
        left_unique_keys=((0,),),
    )
    op = JoinOperator(node, backend, ctx)
    assert op.sides[0].unique is None
    op.process(Batch([0, 0], [([1], 7), ([1], 7)]), 0)
    assert op.process(Batch([0], [(7, "x")]), 1).rows == [([1], 7, 7, "x")] * 2


# -- property: a well-formed changelog (each id live at most once) gives the join --

ids = st.integers(0, 5)
change = st.tuples(st.integers(0, 1), ids, st.integers(0, 2), st.sampled_from("pq"))


def history(raw):
    """(port, kind, row) steps keeping each side's unique key live at most once: a change
    of a live key is an update (-U old, +U new) or, for ``q`` on the right, a delete."""
    live: tuple[dict, dict] = ({}, {})
    steps = []
    for port, ident, k, text in raw:
        rows = live[port]
        key = ident if port == 0 else k
        new = (ident, k, text) if port == 0 else (k, text)
        old = rows.get(key)
        if old is None:
            steps.append((port, 0, new))
            rows[key] = new
        elif port == 1 and text == "q":
            steps.append((port, 3, old))
            del rows[key]
        else:
            steps += [(port, 1, old), (port, 2, new)]
            rows[key] = new
    return steps, [list(live[0].values()), list(live[1].values())]


def expected(join_type, left, right):
    out = []
    for lrow in left:
        ms = [r for r in right if r[0] == lrow[1]]
        out += [lrow + r for r in ms]
        if not ms and join_type in ("LEFT", "FULL"):
            out.append(lrow + (None, None))
    if join_type in ("RIGHT", "FULL"):
        out += [(None, None, None) + r for r in right if not any(x[1] == r[0] for x in left)]
    return sorted(out, key=repr)


@pytest.mark.parametrize("join_type", ["INNER", "LEFT", "RIGHT", "FULL"])
@settings(max_examples=40, deadline=None)
@given(raw=st.lists(change, max_size=30), size=st.integers(1, 5))
def test_output_changelog_equals_the_join_of_the_live_rows(tmp_path_factory, join_type, raw, size):
    from deltaflow.state.backend import StateBackend

    steps, (left, right) = history(raw)
    outputs = []
    for unique in (True, False):  # unique-key state and whole-row multisets agree
        backend = StateBackend(tmp_path_factory.mktemp("s"))
        try:
            keys = ((0,),) if unique else ()
            op = JoinOperator(join_node(join_type, keys, keys), backend, RuntimeContext())
            out = feed_in_batches(op, backend, steps, size)
            assert sorted(apply_changelog(out.kinds, out.rows), key=repr) == expected(
                join_type, left, right
            )
            outputs.append(list(zip(out.kinds, out.rows, strict=True)))
        finally:
            backend.close()
    assert outputs[0] == outputs[1]
