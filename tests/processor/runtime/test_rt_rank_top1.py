"""Rank over an insert-only input. ``rn = 1`` keeps one row per partition
(``_process_first``): the same changelog and state as the general sorted-list path, batch
by batch, for every order, tie rule (keep-first, keep-last), rank number and update mode.
A top N with rank numbers emits from the new row's rank down only: its changes still
leave each partition's top rows at their ranks."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import ALL, INSERT_ONLY, fields, scan, types

from deltaflow.formats.changelog import INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor.plan import Rank
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.rank import RankOperator
from deltaflow.state.backend import StateBackend

T = types("STRING", "INT", "DOUBLE")  # k, id, v
UPSERT = frozenset({0, 2, 3})  # +I, +U, -D: no -U


def rank(asc: bool, nulls_first: bool, number: bool, later_first: bool, mode) -> Rank:
    return Rank(
        node_id=2,
        inputs=(scan(1, T, mode=INSERT_ONLY),),
        fields=fields(T + types("BIGINT") if number else T),
        changelog_mode=mode,
        partition_keys=(0,),
        order_keys=((2, asc, nulls_first),),
        rank_start=1,
        rank_end=1,
        output_rank_number=number,
        later_first=later_first,
    )


values = st.none() | st.sampled_from([0.0, 1.0, 2.0, -1.5, math.nan])
rows = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), values), min_size=1, max_size=40)


def _shown(batch: Batch) -> list:
    return [(k, repr(r)) for k, r in zip(batch.kinds, batch.rows, strict=True)]


@settings(max_examples=150, deadline=None)
@given(
    rows=rows,
    size=st.integers(1, 7),
    asc=st.booleans(),
    nulls_first=st.booleans(),
    number=st.booleans(),
    later_first=st.booleans(),
    ub=st.booleans(),
)
def test_top1_path_equals_the_sorted_list_path(
    tmp_path_factory, rows, size, asc, nulls_first, number, later_first, ub
):
    node = rank(asc, nulls_first, number, later_first, ALL if ub else UPSERT)
    data = [(k, i, v) for i, (k, v) in enumerate(rows)]
    backends = [StateBackend(tmp_path_factory.mktemp("state")) for _ in range(2)]
    try:
        fast, slow = (RankOperator(node, b, RuntimeContext()) for b in backends)
        assert fast.single and fast.start == 1
        for at in range(0, len(data), size):
            part = data[at : at + size]
            batch = Batch([INSERT] * len(part), part)
            assert _shown(fast.process(batch)) == _shown(slow._process_rows(batch))
            for b in backends:
                b.commit({"at": at})
        assert repr(fast.state.items()) == repr(slow.state.items())
    finally:
        for b in backends:
            b.close()


@settings(max_examples=100, deadline=None)
@given(
    rows=rows,
    size=st.integers(1, 7),
    top=st.integers(2, 4),
    start=st.integers(1, 2),
    asc=st.booleans(),
)
def test_top_n_with_rank_numbers_over_inserts_ends_at_each_partitions_top_rows(
    tmp_path_factory, rows, size, top, start, asc
):
    """ROW_NUMBER() BETWEEN start AND top over an insert-only input: the changes, applied
    per (partition, rank) after every batch, leave each partition's rows at those ranks
    in sort order (NULLs last, equal values in arrival order)."""
    node = replace(rank(asc, False, True, False, ALL), rank_start=start, rank_end=top)
    data = [(k, i, v) for i, (k, v) in enumerate(rows) if v is None or not math.isnan(v)]
    backend = StateBackend(tmp_path_factory.mktemp("state"))
    shown: dict[tuple, tuple] = {}
    try:
        op = RankOperator(node, backend, RuntimeContext())
        for at in range(0, len(data), size):
            part = data[at : at + size]
            out = op.process(Batch([INSERT] * len(part), part))
            for kind, row in zip(out.kinds, out.rows, strict=True):
                if kind in (INSERT, UPDATE_AFTER):
                    shown[(row[0], row[3])] = row[:3]
                else:
                    assert shown.pop((row[0], row[3]), None) is not None or kind == UPDATE_BEFORE
            seen = data[: at + size]
            expected = {}
            for key in {k for k, _, _ in seen}:
                mine = [r for r in seen if r[0] == key]
                mine.sort(key=lambda r: (r[2] is None, 0 if r[2] is None else (r[2] if asc else -r[2])))
                for n, r in enumerate(mine[start - 1 : top], start):
                    expected[(key, n)] = r
            assert shown == expected
    finally:
        backend.close()
