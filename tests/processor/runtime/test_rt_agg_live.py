"""GroupAggregate's DISTINCT counts, FILTERs and MIN/MAX with live accumulators (issue 19).

The expected results come from the definitions: per group, the multiset of the rows it
holds, from which COUNT(DISTINCT x) FILTER (WHERE f), MIN and MAX are computed directly.
The operator is driven through commits and a reopen of the LMDB state, so the results
also show that the accumulators written at a checkpoint are the ones kept in memory.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import ALL, INSERT_ONLY, fields, scan, types
from test_rt_group_agg import group_agg

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.plan import AggCall, WindowAggregate, WindowSpec
from deltaflow.processor.runtime.agg_functions import MinMax
from deltaflow.processor.runtime.base import RuntimeContext, epoch_ms
from deltaflow.processor.runtime.group_agg import GroupAggOperator
from deltaflow.processor.runtime.window import WindowAggOperator
from deltaflow.state.backend import StateBackend

BIGINT = parse_type("BIGINT")
INPUT = types("INT", "BIGINT", "STRING", "BOOLEAN")  # group, x, s, f
AGGS = (
    AggCall("COUNT", (1,), BIGINT, "dx", distinct=True),
    AggCall("COUNT", (1,), BIGINT, "dxf", distinct=True, filter_arg=3),
    AggCall("COUNT", (), BIGINT, "nf", filter_arg=3),
    AggCall("MAX", (2,), parse_type("STRING"), "hi"),
    AggCall("MIN", (1,), BIGINT, "lo"),
    AggCall("MAX", (1,), BIGINT, "dhi", distinct=True),
)


def _expected(rows: Counter) -> dict[int, tuple]:
    """Each group's results, computed from the rows it holds."""
    out: dict[int, tuple] = {}
    for g in {row[0] for row in rows}:
        held = [row for row, n in rows.items() if row[0] == g for _ in range(n)]
        xs = [r[1] for r in held if r[1] is not None]
        xf = [r[1] for r in held if r[1] is not None and r[3] is True]
        ss = [r[2] for r in held if r[2] is not None]
        out[g] = (
            g,
            len(set(xs)),
            len(set(xf)),
            sum(1 for r in held if r[3] is True),
            max(ss) if ss else None,
            min(xs) if xs else None,
            max(xs) if xs else None,
        )
    return out


def _changes(rnd: random.Random, n: int) -> list[tuple[int, tuple]]:
    live: list[tuple] = []
    out = []
    for _ in range(n):
        if live and rnd.random() < 0.35:
            old = live.pop(rnd.randrange(len(live)))
            if rnd.random() < 0.5:
                out.append((DELETE, old))
                continue
            new = (old[0], rnd.choice([None, *range(8)]), old[2], rnd.choice([True, False, None]))
            out += [(UPDATE_BEFORE, old), (UPDATE_AFTER, new)]
            live.append(new)
            continue
        row = (
            rnd.randrange(3),
            rnd.choice([None, *range(8)]),
            rnd.choice([None, "a", "b", "c", "zz"]),
            rnd.choice([True, False, None]),
        )
        out.append((INSERT, row))
        live.append(row)
    return out


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), batch=st.sampled_from([1, 3, 17]))
def test_distinct_filter_min_max_through_commits_and_a_reopen(tmp_path_factory, seed, batch):
    """After every batch, the last result emitted per group is the one computed from the
    group's rows; state is committed every few batches and reopened halfway."""
    rnd = random.Random(seed)
    changes = _changes(rnd, 120)
    node = group_agg(INPUT, (0,), AGGS, mode=ALL)
    path = tmp_path_factory.mktemp("state")
    held: Counter = Counter()
    shown: dict[int, tuple] = {}
    backend = StateBackend(path)
    op = GroupAggOperator(node, backend, RuntimeContext())
    try:
        i = step = 0
        while i < len(changes):
            end = min(i + batch, len(changes))
            if changes[end - 1][0] == UPDATE_BEFORE:
                end += 1  # never split a -U/+U pair
            part = changes[i:end]
            i, step = end, step + 1
            out = op.process(Batch([k for k, _ in part], [r for _, r in part]))
            for kind, row in part:
                held[row] += 1 if kind in (INSERT, UPDATE_AFTER) else -1
            held = +held
            for kind, row in zip(out.kinds, out.rows, strict=True):
                if kind in (INSERT, UPDATE_AFTER):
                    shown[row[0]] = row
                elif kind == DELETE:
                    shown.pop(row[0])
            assert shown == _expected(held)
            if step % 3 == 2:
                backend.commit({"at": i})
            if step == len(changes) // (2 * batch):
                backend.commit({"at": i})
                backend.close()
                backend = StateBackend(path)
                op = GroupAggOperator(node, backend, RuntimeContext())
    finally:
        backend.close()


@settings(max_examples=50, deadline=None)
@given(steps=st.lists(st.tuples(st.booleans(), st.integers(0, 6)), max_size=60))
def test_min_max_kept_result_is_the_scan_of_the_values(steps):
    """MIN/MAX's kept result equals min()/max() over the values held, step by step."""
    for pick in (min, max):
        fn = MinMax(pick)
        acc = fn.init()
        held: Counter = Counter()
        for add, v in steps:
            if add:
                acc = fn.add(acc, v)
                held[v] += 1
            elif held[v]:
                acc = fn.retract(acc, v)
                held[v] -= 1
            held = +held
            assert fn.value(acc) == (pick(held) if held else None)
            assert dict(acc) == dict(held)
        again = fn.load(fn.dump(acc))
        assert fn.value(again) == (pick(held) if held else None)


@pytest.mark.parametrize("plain", [False, True])
def test_window_aggregates_through_a_commit_and_a_reopen(tmp_path, plain):
    """TUMBLE windows of 10 s with MAX and COUNT(DISTINCT), or (``plain``) COUNT(*) and SUM:
    the fired rows are the ones the definitions give for each window's rows, with the live
    accumulators (folded in place, plain ones too) committed, the state reopened and the
    windows fired by the reopened operator."""
    t = types("INT", "BIGINT", "TIMESTAMP(3)")
    aggs = (AggCall("MAX", (1,), BIGINT, "hi"), AggCall("COUNT", (1,), BIGINT, "d", distinct=True))
    if plain:
        aggs = (AggCall("COUNT", (), BIGINT, "n"), AggCall("SUM", (1,), BIGINT, "s"))
    out = types("INT", "BIGINT", "BIGINT", "TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)")
    node = WindowAggregate(
        node_id=2, inputs=(scan(1, t),), fields=fields(out), changelog_mode=INSERT_ONLY,
        window=WindowSpec("TUMBLE", 2, 10_000), group_keys=(0,), aggs=aggs,
    )  # fmt: skip
    rnd = random.Random(3)
    start = dt.datetime(2020, 1, 1)
    rows = [
        (rnd.randrange(2), rnd.randrange(6), start + dt.timedelta(milliseconds=250 * i))
        for i in range(160)
    ]
    backend = StateBackend(tmp_path / "w")
    op = WindowAggOperator(node, backend, RuntimeContext())
    assert op.live
    fired: list[tuple] = []
    base = epoch_ms(start)
    for i in range(0, 160, 20):
        op.process(Batch([INSERT] * 20, rows[i : i + 20]))
        fired += op.on_watermark(base + 250 * (i + 20) - 3_000).rows
        backend.commit({"at": i})
        if i == 60:
            backend.close()
            backend = StateBackend(tmp_path / "w")
            op = WindowAggOperator(node, backend, RuntimeContext())
    fired += op.on_watermark(base + 1_000_000).rows
    backend.close()
    expected = set()
    for w in range(4):
        for k in range(2):
            xs = [
                r[1]
                for r in rows
                if r[0] == k and w * 10_000 <= epoch_ms(r[2]) - base < (w + 1) * 10_000
            ]
            if xs:
                expected.add((k, w, len(xs), sum(xs)) if plain else (k, w, max(xs), len(set(xs))))
    got = {(r[0], (epoch_ms(r[3]) - base) // 10_000, r[1], r[2]) for r in fired}
    assert len(fired) == len(got) == len(expected)
    assert got == expected
