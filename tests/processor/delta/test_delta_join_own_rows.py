"""A delta join's own rows kept across batches (``delta_join.OwnRows``): when the other side
is outer, a side's rows of a join key are read from the mirror once and then kept as the
side's changes leave them, but only while the source's normalizer feeds the mirror (an
exact changelog). Against the regular join on the same valid CDC input, with the mirrors
fed as a Kafka source in state mode feeds them (``Mirror.apply_from_source``, one or more
calls per delivered batch, as one per partition), the changelog per batch is the same
multiset and the result is the join of the final tables; also with a memo of two keys,
which starts over all the time."""

from __future__ import annotations

import tempfile
from collections import Counter

import pytest
from dl_helpers import FORCE_JOIN, batches, final, history_st, run, scan_ids
from hypothesis import given, settings
from hypothesis import strategies as st
from test_delta_join_runs import job, joined, live_rows

from deltaflow.formats.changelog import Batch
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime import delta_join
from deltaflow.processor.runtime.delta_join import DeltaJoinOperator
from deltaflow.processor.runtime.graph import Graph
from deltaflow.processor.runtime.mirror import opened_mirror
from deltaflow.state.backend import StateBackend


def run_fed(sql: str, steps, cuts: list[int]) -> tuple[list[list[tuple]], list[int]]:
    """``dl_helpers.run`` with each batch applied to its scan's mirror by the "source" first,
    in pieces (``cuts``: where each batch is cut, modulo its length); also how many keys
    each side's ``OwnRows`` held at the end (-1: none for that side)."""
    plan = plan_job(sql).plan
    (sink,) = plan.sinks
    ids = scan_ids(sink, {})
    out = []
    with tempfile.TemporaryDirectory() as tmp, StateBackend(tmp) as backend:
        graph = Graph(plan, backend)
        (op,) = [o for o in graph.ops.values() if isinstance(o, DeltaJoinOperator)]
        scans = {node.node_id: node for node in _scans(sink)}
        for n, (table, batch) in enumerate(steps):
            scan = scans[ids[table]]
            mirror = opened_mirror(backend, f"{scan.node_id}:Mirror:{scan.table}")
            assert mirror is not None
            kinds, rows = list(batch.kinds), list(batch.rows)
            cut = cuts[n % len(cuts)] % (len(rows) + 1) if cuts else len(rows)
            for lo, hi in ((0, cut), (cut, len(rows))):
                if hi > lo:
                    mirror.apply_from_source(kinds[lo:hi], rows[lo:hi])
            got = graph.push(ids[table], Batch(kinds, rows))
            result = got.get(sink.node_id, Batch())
            out.append(list(zip(result.kinds, result.rows, strict=True)))
            backend.commit()
        held = [-1 if own is None else len(own.found) for own in op.owns]
    return out, held


def _scans(node: P.Node) -> list[P.TableSourceScan]:
    found = [node] if isinstance(node, P.TableSourceScan) else []
    for child in node.inputs:
        found += _scans(child)
    return found


@pytest.mark.parametrize("join", ["LEFT", "RIGHT", "FULL"])
@pytest.mark.parametrize("condition,filtered", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("memo_keys", [200_000, 2])
@settings(max_examples=25, deadline=None)
@given(ops=history_st, size=st.integers(1, 6), cuts=st.lists(st.integers(0, 6), max_size=4))
def test_kept_own_rows_give_the_regular_joins_changelog(
    join, condition, filtered, memo_keys, ops, size, cuts
):
    steps = batches(ops, size)
    regular = run(job(join, condition, filtered), steps)
    saved = delta_join.MEMO_KEYS
    delta_join.MEMO_KEYS = memo_keys
    try:
        delta, held = run_fed(job(join, condition, filtered, FORCE_JOIN), steps, cuts)
    finally:
        delta_join.MEMO_KEYS = saved
    for got, want in zip(delta, regular, strict=True):
        assert Counter(got) == Counter(want)
    expected = joined(live_rows(steps, "a"), live_rows(steps, "b"), join, condition, filtered)
    assert final(delta) == expected
    # a LEFT join keeps b's rows (a is outer), a RIGHT join a's, a FULL join both
    assert (held[0] >= 0, held[1] >= 0) == {
        "LEFT": (False, True), "RIGHT": (True, False), "FULL": (True, True)
    }[join]  # fmt: skip
    assert max(held) <= max(memo_keys, 2 * size)  # bounded (an update: two keys)


def test_rows_are_kept_only_for_a_mirror_the_source_feeds():
    """Batches pushed without the source feeding the mirror (``dl_helpers.run``, the
    message-mode path, where a changelog may repeat a create): nothing is kept, each batch
    reads the mirror; fed by the source: the keys of the batches are kept."""
    steps = [("a", Batch([0], [(1, 1, 5)])), ("b", Batch([0, 0], [(7, 1, 3), (8, 2, 4)]))]
    sql = job("LEFT", delta=FORCE_JOIN)
    _, held = run_fed(sql, steps, [])
    assert held == [-1, 2]  # b's keys 1 and 2
    plan = plan_job(sql).plan
    with tempfile.TemporaryDirectory() as tmp, StateBackend(tmp) as backend:
        graph = Graph(plan, backend)
        (op,) = [o for o in graph.ops.values() if isinstance(o, DeltaJoinOperator)]
        ids = scan_ids(plan.sinks[0], {})
        for table, batch in steps:
            graph.push(ids[table], batch)
        assert op.owns[1] is not None and op.owns[1].found == {}


def test_a_repeated_create_in_an_unfed_mirror_is_read_again_not_kept():
    """In message mode a create may repeat (a Debezium restart re-sends it): the mirror keeps
    one row per key, so the next batch must read one row, not a kept list of two."""
    sql = job("LEFT", delta=FORCE_JOIN)
    create = Batch([0], [(7, 1, 3)])
    steps = [("b", create), ("b", Batch([0], [(7, 1, 3)])), ("a", Batch([0], [(1, 1, 5)]))]
    delta_out = run(sql, steps)
    assert final(delta_out)[(1, 1, 5, 7, 3)] == 1  # one b row joined, as the mirror holds
    assert final(delta_out) == final(run(sql.replace(FORCE_JOIN, ""), steps))
