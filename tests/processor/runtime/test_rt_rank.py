"""Rank (ROW_NUMBER Top-N) with retraction."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import ALL, NO_UB, fields, parse_changelog, scan, show, types

from deltaflow.formats.changelog import Batch, apply_changelog
from deltaflow.processor.plan import Rank
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.rank import RankOperator

T = types("STRING", "INT")


def rank(start=1, end=2, number=False, asc=True, mode=ALL, nulls_first=False):
    out_types = T + types("BIGINT") if number else T
    return Rank(
        node_id=2,
        inputs=(scan(1, T),),
        fields=fields(out_types),
        changelog_mode=mode,
        partition_keys=(0,),
        order_keys=((1, asc, nulls_first),),
        rank_start=start,
        rank_end=end,
        output_rank_number=number,
    )


def test_top_2_without_rank_number_retracts_the_row_pushed_out(backend, ctx):
    op = RankOperator(rank(asc=False), backend, ctx)
    out = show(
        op.process(parse_changelog("+I[a, 1]\n+I[a, 5]\n+I[a, 3]\n-D[a, 5]\n+I[b, 9]", T)), T
    )
    assert out == [
        "+I[a, 1]",
        "+I[a, 5]",
        "-D[a, 1]",  # Flink 2.3 prints the row pushed out first, then the addition
        "+I[a, 3]",
        "-D[a, 5]",
        "+I[a, 1]",
        "+I[b, 9]",
    ]


def test_top_2_with_rank_number_updates_each_rank(backend, ctx):
    op = RankOperator(rank(number=True, mode=NO_UB), backend, ctx)
    out_t = T + types("BIGINT")
    out = show(op.process(parse_changelog("+I[a, 4]\n+I[a, 2]\n+I[a, 9]\n+I[a, 1]", T)), out_t)
    assert out == ["+I[a, 4, 1]", "+U[a, 2, 1]", "+I[a, 4, 2]", "+U[a, 1, 1]", "+U[a, 2, 2]"]


def test_nulls_last_by_default_and_rank_start_above_one(backend, ctx):
    op = RankOperator(rank(start=2, end=3), backend, ctx)
    out = show(op.process(parse_changelog("+I[a, null]\n+I[a, 1]\n+I[a, 2]", T)), T)
    # ranks 2..3: the NULL only enters once 1 takes rank 1; 2 then enters before it
    assert out == ["+I[a, null]", "+I[a, 2]"]


@pytest.mark.parametrize("start", [1, 2])  # 2: ORDER BY ... LIMIT 2 OFFSET 1
@pytest.mark.parametrize("number", [False, True])
@settings(max_examples=50, deadline=None)
@given(
    raw=st.lists(
        st.tuples(
            st.sampled_from("ab"),
            st.one_of(st.none(), st.integers(0, 6)),
            st.one_of(st.none(), st.integers(0, 30)),
        ),
        max_size=30,
    ),
    asc=st.booleans(),
    nulls_first=st.booleans(),
)
def test_output_changelog_equals_top_n_of_input_multiset(
    tmp_path_factory, start, number, raw, asc, nulls_first
):
    from deltaflow.state.backend import StateBackend

    kinds, rows, live = [], [], []
    for part, v, pick in raw:
        if pick is not None and live:
            kinds.append(3)
            rows.append(live.pop(pick % len(live)))
        else:
            kinds.append(0)
            rows.append((part, v))
            live.append((part, v))
    backend = StateBackend(tmp_path_factory.mktemp("s"))
    try:
        op = RankOperator(
            rank(start=start, end=3, number=number, asc=asc, nulls_first=nulls_first),
            backend,
            RuntimeContext(),
        )
        out = Batch()
        for i in range(0, len(kinds), 4):
            out.extend(op.process(Batch(kinds[i : i + 4], rows[i : i + 4])))
            backend.commit({})
        expected = []
        for part in "ab":
            vals = [v for p, v in live if p == part]
            nn = sorted((v for v in vals if v is not None), reverse=not asc)
            nulls = [None] * (len(vals) - len(nn))
            ordered = nulls + nn if nulls_first else nn + nulls
            for i, v in enumerate(ordered[start - 1 : 3], start=start):
                expected.append((part, v, i) if number else (part, v))
        assert sorted(apply_changelog(out.kinds, out.rows), key=repr) == sorted(expected, key=repr)
    finally:
        backend.close()


def test_rank_over_rows_with_an_array_column(backend, ctx):
    t = types("STRING", "INT", "ARRAY<STRING>")
    node = Rank(
        node_id=2,
        inputs=(scan(1, t),),
        fields=fields(t),
        changelog_mode=ALL,
        partition_keys=(0,),
        order_keys=((1, True, False),),
        rank_start=1,
        rank_end=1,
        output_rank_number=False,
    )
    op = RankOperator(node, backend, ctx)
    out = op.process(Batch([0, 0], [("a", 2, ["x"]), ("a", 1, ["y"])]))
    assert out.pairs() == [(0, ("a", 2, ["x"])), (3, ("a", 2, ["x"])), (0, ("a", 1, ["y"]))]


def test_append_only_input_keeps_only_the_top_rows_in_state(backend, ctx):
    node = rank(end=2)
    node = Rank(
        node_id=2,
        inputs=(scan(1, T, mode=frozenset({0})),),
        fields=node.fields,
        changelog_mode=ALL,
        partition_keys=(0,),
        order_keys=((1, True, False),),
        rank_start=1,
        rank_end=2,
        output_rank_number=False,
    )
    op = RankOperator(node, backend, ctx)
    out = show(op.process(parse_changelog("+I[a, 5]\n+I[a, 4]\n+I[a, 3]\n+I[a, 9]", T)), T)
    assert out == ["+I[a, 5]", "+I[a, 4]", "-D[a, 5]", "+I[a, 3]"]  # Flink 2.3: -D first
    assert op.state.get(("a",)) == [("a", 3), ("a", 4)]


@pytest.mark.parametrize("start,end", [(1, 3), (2, 3), (3, 4), (1, 1), (2, None)])
@settings(max_examples=60, deadline=None)
@given(
    raw=st.lists(
        st.tuples(st.one_of(st.none(), st.integers(0, 5)), st.one_of(st.none(), st.integers(0, 30))),
        max_size=30,
    ),
    asc=st.booleans(),
)
def test_each_change_emits_the_rows_that_left_and_entered_the_ranks(
    tmp_path_factory, start, end, raw, asc
):
    """Without the rank number, one change at a time: the -D of the row that left ranks
    start..end, then the +I of the one that entered (nothing when they are equal rows),
    from the ranks' definition: the live rows in sort order, equal keys by arrival."""
    from deltaflow.state.backend import StateBackend

    node = rank(start=start, end=end, asc=asc)
    backend = StateBackend(tmp_path_factory.mktemp("s"))
    live: list[tuple] = []  # arrival order

    def ranks() -> list[tuple]:
        nulls = [r for r in live if r[1] is None]
        # equal keys by arrival: a stable sort, by the negated key for DESC
        sign = 1 if asc else -1
        values = sorted((r for r in live if r[1] is not None), key=lambda r: sign * r[1])
        return (values + nulls)[start - 1 : end]

    try:
        op = RankOperator(node, backend, RuntimeContext())
        for v, pick in raw:
            before = ranks()
            if pick is not None and live:
                row = live.pop(pick % len(live))
                batch = Batch([3], [row])
            else:
                row = ("a", v)
                live.append(row)
                batch = Batch([0], [row])
            after = ranks()
            out = op.process(batch)
            left = list((Counter(before) - Counter(after)).elements())
            entered = list((Counter(after) - Counter(before)).elements())
            expected = [(3, r) for r in left[:1]] + [(0, r) for r in entered[:1]]
            assert len(left) <= 1 and len(entered) <= 1
            assert list(zip(out.kinds, out.rows, strict=True)) == expected
            backend.commit({})
    finally:
        backend.close()
