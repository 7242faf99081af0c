"""Regular join: Flink's StreamingJoinOperator changelog, and the multiset property."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import ALL, feed_in_batches, fields, parse_changelog, scan, show, types

from deltaflow.formats.changelog import Batch, apply_changelog
from deltaflow.processor.plan import Join
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.join import JoinOperator

L = types("INT", "STRING")
R = types("INT", "STRING")
OUT = L + R


def join_node(join_type, condition=None):
    left, right = scan(1, L), scan(2, R)
    return Join(
        node_id=3,
        inputs=(left, right),
        fields=fields(OUT),
        changelog_mode=ALL,
        join_type=join_type,
        left_keys=(0,),
        right_keys=(0,),
        condition=condition,
    )


def feed(op, steps):
    """``steps``: (port, changelog text); returns the printed output, in order."""
    out = []
    for port, text in steps:
        out += show(op.process(parse_changelog(text, L if port == 0 else R), port), OUT)
    return out


def test_inner_join_keeps_the_input_kind(backend, ctx):
    op = JoinOperator(join_node("INNER"), backend, ctx)
    out = feed(
        op,
        [
            (0, "+I[1, a]"),
            (1, "+I[1, x]\n+I[2, y]"),
            (0, "-U[1, a]\n+U[1, b]"),
            (1, "-D[1, x]"),
        ],
    )
    assert out == ["+I[1, a, 1, x]", "-U[1, a, 1, x]", "+U[1, b, 1, x]", "-D[1, b, 1, x]"]


def test_left_join_retracts_null_padding_when_a_match_arrives_and_restores_it(backend, ctx):
    op = JoinOperator(join_node("LEFT"), backend, ctx)
    out = feed(
        op,
        [
            (0, "+I[1, a]"),
            (1, "+I[1, x]"),
            (1, "+I[1, y]"),
            (1, "-D[1, x]"),
            (1, "-D[1, y]"),
            (0, "-D[1, a]"),
        ],
    )
    assert out == [
        "+I[1, a, null, null]",
        "-D[1, a, null, null]",
        "+I[1, a, 1, x]",
        "+I[1, a, 1, y]",
        "-D[1, a, 1, x]",
        "-D[1, a, 1, y]",
        "+I[1, a, null, null]",
        "-D[1, a, null, null]",
    ]


def test_outer_side_update_is_delete_then_insert(backend, ctx):
    op = JoinOperator(join_node("LEFT"), backend, ctx)
    out = feed(op, [(1, "+I[1, x]"), (0, "+I[1, a]\n-U[1, a]\n+U[1, b]")])
    assert out == ["+I[1, a, 1, x]", "-D[1, a, 1, x]", "+I[1, b, 1, x]"]


def test_right_and_full_join_pad_the_other_side(backend, ctx):
    op = JoinOperator(join_node("FULL"), backend, ctx)
    out = feed(op, [(1, "+I[2, y]"), (0, "+I[1, a]"), (0, "+I[2, b]")])
    assert out == [
        "+I[null, null, 2, y]",
        "+I[1, a, null, null]",
        "-D[null, null, 2, y]",
        "+I[2, b, 2, y]",
    ]


def test_null_join_key_matches_nothing(backend, ctx):
    op = JoinOperator(join_node("LEFT"), backend, ctx)
    out = feed(op, [(1, "+I[null, x]"), (0, "+I[null, a]")])
    assert out == ["+I[null, a, null, null]"]


def test_state_survives_a_commit_and_a_reopened_operator(backend, ctx):
    node = join_node("INNER")
    feed(JoinOperator(node, backend, ctx), [(0, "+I[1, a]\n+I[1, a]")])
    backend.commit({"epoch": 1})
    out = feed(JoinOperator(node, backend, ctx), [(1, "+I[1, x]")])
    assert out == ["+I[1, a, 1, x]", "+I[1, a, 1, x]"]


# -- property: applying the output equals joining the multisets the inputs imply --

side_rows = st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.sampled_from("pq"))
steps_st = st.lists(
    st.tuples(st.integers(0, 1), side_rows, st.one_of(st.none(), st.integers(0, 40))), max_size=30
)


def build_steps(raw):
    live = ([], [])
    steps = []
    for port, row, pick in raw:
        rows = live[port]
        if pick is not None and rows:
            old = rows.pop(pick % len(rows))
            if pick % 2:
                steps.append((port, 3, old))
            else:
                steps.append((port, 1, old))
                steps.append((port, 2, row))
                rows.append(row)
            continue
        steps.append((port, 0, row))
        rows.append(row)
    return steps, live


def matches(lrow, r, with_condition):
    if lrow[0] is None or r[0] != lrow[0]:
        return False
    return not with_condition or lrow[1] <= r[1]


def expected_join(join_type, left, right, with_condition=False):
    out = []
    for lrow in left:
        ms = [r for r in right if matches(lrow, r, with_condition)]
        out += [lrow + r for r in ms]
        if not ms and join_type in ("LEFT", "FULL"):
            out.append(lrow + (None, None))
    if join_type in ("RIGHT", "FULL"):
        for r in right:
            if not any(matches(lrow, r, with_condition) for lrow in left):
                out.append((None, None) + r)
    return sorted(out, key=repr)


def string_le():
    from deltaflow.formats.types import parse_type
    from deltaflow.processor.exprs.nodes import Call, InputRef

    s = parse_type("STRING")
    return Call(parse_type("BOOLEAN"), "<=", (InputRef(s, 1), InputRef(s, 3)))


@pytest.mark.parametrize("with_condition", [False, True])
@pytest.mark.parametrize("join_type", ["INNER", "LEFT", "RIGHT", "FULL"])
@settings(max_examples=30, deadline=None)
@given(raw=steps_st, size=st.integers(1, 5))
def test_output_changelog_equals_join_of_input_multisets(
    tmp_path_factory, join_type, with_condition, raw, size
):
    from deltaflow.state.backend import StateBackend

    steps, (left, right) = build_steps(raw)
    backend = StateBackend(tmp_path_factory.mktemp("s"))
    try:
        condition = string_le() if with_condition else None
        op = JoinOperator(join_node(join_type, condition), backend, RuntimeContext())
        out = feed_in_batches(op, backend, steps, size)
        assert sorted(apply_changelog(out.kinds, out.rows), key=repr) == expected_join(
            join_type, left, right, with_condition
        )
    finally:
        backend.close()


def test_rows_with_array_and_map_columns_join_and_survive_a_commit(backend, ctx):
    t = types("INT", "ARRAY<INT>", "MAP<STRING, INT>")
    left, right = scan(1, t), scan(2, R)
    node = Join(
        node_id=3,
        inputs=(left, right),
        fields=fields(t + R),
        changelog_mode=ALL,
        join_type="LEFT",
        left_keys=(0,),
        right_keys=(0,),
    )
    op = JoinOperator(node, backend, ctx)
    row = (1, [1, 2], {"a": 1})
    assert op.process(Batch([0, 0], [row, row]), 0).rows == [row + (None, None)] * 2
    backend.commit({})
    op = JoinOperator(node, backend, ctx)
    out = op.process(Batch([0], [(1, "x")]), 1)
    assert out.kinds == [3, 3, 0, 0]
    assert out.rows == [row + (None, None)] * 2 + [row + (1, "x")] * 2
    assert op.process(Batch([3], [(1, [1, 2], {"a": 1})]), 0).rows == [row + (1, "x")]


def test_join_without_equality_keys_pairs_every_row(backend, ctx):
    node = Join(
        node_id=3,
        inputs=(scan(1, L), scan(2, R)),
        fields=fields(OUT),
        changelog_mode=ALL,
        join_type="INNER",
        left_keys=(),
        right_keys=(),
    )
    op = JoinOperator(node, backend, ctx)
    feed(op, [(0, "+I[1, a]\n+I[2, b]")])
    backend.commit({})
    assert feed(JoinOperator(node, backend, ctx), [(1, "+I[9, x]")]) == [
        "+I[1, a, 9, x]",
        "+I[2, b, 9, x]",
    ]


change_st = st.tuples(
    st.integers(0, 1),  # port
    st.sampled_from([0, 1, 2, 3]),  # any kind, retractions of rows never added included
    st.one_of(st.none(), st.integers(0, 1)),  # join key, NULL included
    st.sampled_from(["a", "b"]),
)


@settings(max_examples=60, deadline=None)
@given(changes=st.lists(change_st, min_size=4, max_size=30), size=st.integers(1, 6))
def test_fused_inner_loop_equals_the_rule_by_rule_path(tmp_path_factory, changes, size):
    """The INNER join's fused batch loop emits the same changelog, in the same order,
    and leaves the same state as the general per-change rules (duplicate rows too)."""
    from deltaflow.state.backend import StateBackend

    outputs, states = [], []
    for fused in (True, False):
        backend = StateBackend(tmp_path_factory.mktemp("s"))
        try:
            op = JoinOperator(join_node("INNER"), backend, RuntimeContext())
            assert op.fused
            op.fused = fused
            out = Batch()
            for start in range(0, len(changes), size):
                for port in (0, 1):
                    batch = Batch()
                    for p, kind, key, text in changes[start : start + size]:
                        if p == port:
                            batch.append(kind, (key, text))
                    out.extend(op.process(batch, port))
                backend.commit({})
            outputs.append(list(zip(out.kinds, out.rows, strict=True)))
            states.append([backend.table(f"3:Join:{s}").items() for s in ("left", "right")])
        finally:
            backend.close()
    assert outputs[0] == outputs[1]
    assert states[0] == states[1]
