"""A large operator output goes down a chain of operators in slices: the same changes,
in the same order, as the whole batch at once (Q22's ON TRUE join of a one-row side)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import ALL, fields, print_sink, scan, types

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.nodes import Call, InputRef
from deltaflow.processor.plan import AggCall, GroupAggregate, JobPlan, Join
from deltaflow.processor.runtime import graph as graph_module
from deltaflow.processor.runtime.graph import Graph, RuntimeContext

L = types("INT", "INT")  # (id, v)
R = types("INT")  # the one-row side's value w
INT = parse_type("INT")


def plan(second_sink: bool = False) -> JobPlan:
    """left JOIN right ON v <= w, then COUNT(*) and SUM(id) per v, to a print sink."""
    condition = Call(parse_type("BOOLEAN"), "<=", (InputRef(INT, 1), InputRef(INT, 2)))
    join = Join(node_id=3, inputs=(scan(1, L), scan(2, R)), fields=fields(L + R),
                changelog_mode=ALL, join_type="INNER", left_keys=(), right_keys=(),
                condition=condition)  # fmt: skip
    agg = GroupAggregate(
        node_id=4,
        inputs=(join,),
        fields=fields(types("INT", "BIGINT", "INT")),
        changelog_mode=ALL,
        group_keys=(1,),
        aggs=(AggCall("COUNT", (), parse_type("BIGINT"), "n"), AggCall("SUM", (0,), INT, "s")),
    )
    sinks = (print_sink(5, agg),) + ((print_sink(6, join),) if second_sink else ())
    return JobPlan(sinks=sinks)


def run(tmp_path_factory, steps, slice_rows, deliver) -> tuple[list, dict]:
    """Every sink change in the order the job would write them, and the chains."""
    from deltaflow.state.backend import StateBackend

    backend = StateBackend(tmp_path_factory.mktemp("s"))
    written: list = []
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(graph_module, "SLICE_ROWS", slice_rows)
            graph = Graph(plan(), backend, RuntimeContext())
            if deliver:
                graph.deliver = lambda out: written.extend(
                    (sid, k, r)
                    for sid, b in out.items()
                    for k, r in zip(b.kinds, b.rows, strict=True)
                )
            for scan_id, batch in steps:
                for sid, out in graph.push(scan_id, batch).items():
                    written.extend((sid, k, r) for k, r in zip(out.kinds, out.rows, strict=True))
        return written, graph.chains
    finally:
        backend.close()


@settings(max_examples=40, deadline=None)
@given(
    lefts=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 4)), min_size=1, max_size=25),
    values=st.lists(st.integers(0, 5), min_size=1, max_size=6),
    slice_rows=st.integers(1, 7),
    deliver=st.booleans(),
)
def test_sliced_outputs_equal_the_whole_batch(tmp_path_factory, lefts, values, slice_rows,
                                              deliver) -> None:  # fmt: skip
    right = [Batch([INSERT], [(values[0],)])]
    changes = Batch()
    for old, new in zip(values, values[1:], strict=False):  # the one-row side's -U/+U, in one batch
        changes.append(UPDATE_BEFORE, (old,))
        changes.append(UPDATE_AFTER, (new,))
    steps = [(2, right[0]), (1, Batch([INSERT] * len(lefts), lefts)), (2, changes)]
    whole, _ = run(tmp_path_factory, steps, 10**9, False)
    sliced, chains = run(tmp_path_factory, steps, slice_rows, deliver)
    assert chains == {1: [(3, 0), (4, 0), (5, 0)], 2: [(3, 1), (4, 0), (5, 0)],
                      3: [(4, 0), (5, 0)], 4: [(5, 0)]}  # fmt: skip
    assert sliced == whole
    # and it is the aggregate of the join with the last value: (v, COUNT(*), SUM(id))
    final: dict = {}
    for _, kind, row in whole:
        if kind in (INSERT, UPDATE_AFTER):
            final[row[0]] = row
        elif kind == DELETE:
            del final[row[0]]
    joined = [(i, v) for i, v in lefts if v <= values[-1]]
    assert final == {
        v: (v, sum(1 for _, u in joined if u == v), sum(i for i, u in joined if u == v))
        for _, v in joined
    }


def test_fan_out_and_mini_batch_are_not_sliced(backend) -> None:
    fanned = Graph(plan(second_sink=True), backend, RuntimeContext())
    assert 1 not in fanned.chains and 2 not in fanned.chains  # the join feeds two nodes
    assert fanned.chains == {4: [(5, 0)]}
    mini = RuntimeContext.from_settings({"table.exec.mini-batch.enabled": "true"})
    assert Graph(plan(), backend, mini).chains == {}
