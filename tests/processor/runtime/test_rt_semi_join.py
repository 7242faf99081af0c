"""Semi / anti join: Flink's StreamingSemiAntiJoinOperator changelog, SQL's NOT IN rules, and
the property that the applied output is the left multiset filtered by "a right row matches"
(semi) or "none does" (anti)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import ALL, feed_in_batches, fields, parse_changelog, scan, show, types
from test_rt_join import build_steps, steps_st, string_le

from deltaflow.formats.changelog import apply_changelog
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.nodes import Call, InputRef
from deltaflow.processor.plan import SemiJoin
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.semi_join import SemiJoinOperator

L = types("INT", "STRING")
R = types("INT", "STRING")


def semi_node(anti, condition=None, keys=((0,), (0,)), null_safe=None):
    return SemiJoin(
        node_id=3,
        inputs=(scan(1, L), scan(2, R)),
        fields=fields(L),
        changelog_mode=ALL,
        anti=anti,
        left_keys=keys[0],
        right_keys=keys[1],
        condition=condition,
        null_safe=null_safe if null_safe is not None else (False,) * len(keys[0]),
    )


def feed(op, steps):
    out = []
    for port, text in steps:
        out += show(op.process(parse_changelog(text, L if port == 0 else R), port), L)
    return out


def test_semi_join_passes_left_rows_while_a_right_row_matches(backend, ctx):
    op = SemiJoinOperator(semi_node(False), backend, ctx)
    out = feed(
        op,
        [
            (0, "+I[1, a]\n+I[1, a]\n+I[2, b]"),  # nothing on the right yet
            (1, "+I[1, x]"),  # both copies of [1, a] come in, with the addition's kind
            (1, "+I[1, y]"),  # a second match changes nothing
            (1, "-D[1, x]"),  # one match left
            (1, "-U[1, y]\n+U[2, y]"),  # [1, a] goes with -U, [2, b] comes with +U
            (0, "-U[2, b]\n+U[2, c]"),
        ],
    )
    assert out == [
        "+I[1, a]", "+I[1, a]", "-U[1, a]", "-U[1, a]", "+U[2, b]", "-U[2, b]", "+U[2, c]",
    ]  # fmt: skip


def test_anti_join_retracts_left_rows_when_a_match_arrives_and_restores_them(backend, ctx):
    op = SemiJoinOperator(semi_node(True), backend, ctx)
    out = feed(
        op,
        [
            (0, "+I[1, a]\n+I[null, n]"),
            (1, "+I[1, x]\n+I[1, y]"),
            (1, "-D[1, x]"),
            (1, "-D[1, y]"),
            (1, "+I[null, z]"),  # a NULL key matches nothing, not even the NULL left row
            (0, "-D[null, n]"),
        ],
    )
    assert out == ["+I[1, a]", "+I[null, n]", "-D[1, a]", "+I[1, a]", "-D[null, n]"]


def not_in_node():
    """``c0 NOT IN (SELECT c0 FROM right)``: no keys, OR(IS NULL(l), IS NULL(r), =(l, r))."""
    i, b = parse_type("INT"), parse_type("BOOLEAN")
    left, right = InputRef(i, 0), InputRef(i, 2)
    cond = Call(
        b,
        "OR",
        (
            Call(b, "OR", (Call(b, "IS NULL", (left,)), Call(b, "IS NULL", (right,)))),
            Call(b, "=", (left, right)),
        ),
    )
    return semi_node(True, cond, keys=((), ()))


def test_not_in_yields_nothing_once_the_subquery_holds_a_null(backend, ctx):
    op = SemiJoinOperator(not_in_node(), backend, ctx)
    out = feed(
        op,
        [
            (0, "+I[1, a]\n+I[2, b]\n+I[null, n]"),  # empty subquery: every row, NULL too
            (1, "+I[2, x]"),  # 2 goes; NULL NOT IN (2) is unknown: it goes too
            (1, "+I[null, y]"),  # 1 NOT IN (2, NULL) is unknown: 1 goes
            (1, "-D[null, y]"),
            (0, "+I[3, c]"),
        ],
    )
    assert out == [
        "+I[1, a]", "+I[2, b]", "+I[null, n]", "-D[2, b]", "-D[null, n]", "-D[1, a]",
        "+I[1, a]", "+I[3, c]",
    ]  # fmt: skip


def test_null_safe_keys_match_null_to_null(backend, ctx):
    op = SemiJoinOperator(semi_node(False, null_safe=(True,)), backend, ctx)
    out = feed(op, [(0, "+I[null, a]"), (1, "+I[null, x]"), (1, "-D[null, x]")])
    assert out == ["+I[null, a]", "-D[null, a]"]


def test_state_survives_a_commit_and_a_reopened_operator(backend, ctx):
    node = semi_node(False)
    feed(SemiJoinOperator(node, backend, ctx), [(0, "+I[1, a]"), (1, "+I[1, x]")])
    backend.commit({"epoch": 1})
    out = feed(SemiJoinOperator(node, backend, ctx), [(1, "-D[1, x]"), (0, "-D[1, a]")])
    assert out == ["-D[1, a]"]  # retracted by the right side; the left -D then matches nothing


def expected(anti, left, right, with_condition, null_safe):
    def match(lrow, r):
        if lrow[0] is None or r[0] is None:
            if not (null_safe and lrow[0] is None and r[0] is None):
                return False
        elif lrow[0] != r[0]:
            return False
        return not with_condition or lrow[1] <= r[1]

    return sorted((lrow for lrow in left if any(match(lrow, r) for r in right) != anti), key=repr)


@pytest.mark.parametrize("null_safe", [False, True])
@pytest.mark.parametrize("with_condition", [False, True])
@pytest.mark.parametrize("anti", [False, True])
@settings(max_examples=30, deadline=None)
@given(raw=steps_st, size=st.integers(1, 5))
def test_output_changelog_equals_the_filtered_left_multiset(
    tmp_path_factory, anti, with_condition, null_safe, raw, size
):
    from deltaflow.state.backend import StateBackend

    steps, (left, right) = build_steps(raw)
    backend = StateBackend(tmp_path_factory.mktemp("s"))
    try:
        condition = string_le() if with_condition else None
        node = semi_node(anti, condition, null_safe=(null_safe,))
        op = SemiJoinOperator(node, backend, RuntimeContext())
        out = feed_in_batches(op, backend, steps, size)
        table = apply_changelog(out.kinds, out.rows)
        assert sorted(table, key=repr) == expected(anti, left, right, with_condition, null_safe)
    finally:
        backend.close()
