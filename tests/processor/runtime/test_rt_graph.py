"""The operator graph: topological runs, fan-out, watermarks, finish, sinks."""

from __future__ import annotations

import pytest
from rt_helpers import (
    ALL,
    INSERT_ONLY,
    NO_UB,
    fields,
    parse_changelog,
    print_sink,
    scan,
    show,
    types,
)

from deltaflow.formats.errors import PlanError
from deltaflow.formats.types import parse_type
from deltaflow.processor.plan import (
    AggCall,
    GroupAggregate,
    JobPlan,
    Join,
    LookupJoin,
    Union,
    WindowAggregate,
    WindowSpec,
)
from deltaflow.processor.runtime.base import epoch_ms
from deltaflow.processor.runtime.graph import Graph, RuntimeContext

T = types("STRING", "INT")


def count_by_name(src, node_id=2, mode=ALL):
    out = [T[0], parse_type("BIGINT")]
    return GroupAggregate(
        node_id=node_id,
        inputs=(src,),
        fields=fields(out),
        changelog_mode=mode,
        group_keys=(0,),
        aggs=(AggCall("COUNT", (), parse_type("BIGINT"), "n"),),
    )


def test_shared_scan_fans_out_to_two_inserts(backend):
    src = scan(1, T)
    agg = count_by_name(src)
    plan = JobPlan(sinks=(print_sink(3, agg), print_sink(4, src)))
    graph = Graph(plan, backend, RuntimeContext())
    out = graph.push(1, parse_changelog("+I[a, 1]\n+I[a, 2]", T))
    assert show(out[3], types("STRING", "BIGINT")) == ["+I[a, 1]", "-U[a, 1]", "+U[a, 2]"]
    assert show(out[4], T) == ["+I[a, 1]", "+I[a, 2]"]
    assert graph.flush() == {}


def test_join_of_two_scans_and_union(backend):
    left, right = scan(1, T), scan(2, T)
    join = Join(
        node_id=3,
        inputs=(left, right),
        fields=fields(T + T),
        changelog_mode=ALL,
        join_type="INNER",
        left_keys=(0,),
        right_keys=(0,),
    )
    union = Union(node_id=4, inputs=(left, right), fields=fields(T), changelog_mode=ALL)
    graph = Graph(
        JobPlan(sinks=(print_sink(5, join), print_sink(6, union))), backend, RuntimeContext()
    )
    first = graph.push(1, parse_changelog("+I[k, 1]", T))
    assert 5 not in first and show(first[6], T) == ["+I[k, 1]"]
    second = graph.push(2, parse_changelog("+I[k, 2]", T))
    assert show(second[5], T + T) == ["+I[k, 1, k, 2]"]
    assert show(second[6], T) == ["+I[k, 2]"]


def test_upsert_materialize_on_the_sink(backend):
    src = scan(1, T)
    graph = Graph(
        JobPlan(sinks=(print_sink(2, src, upsert=True, pk=("c0",)),)), backend, RuntimeContext()
    )
    out = graph.push(1, parse_changelog("+I[a, 1]\n+I[a, 2]\n-D[a, 2]", T))
    assert show(out[2], T) == ["+I[a, 1]", "+U[a, 2]", "+U[a, 1]"]


def window_plan():
    t = types("STRING", "TIMESTAMP(3)")
    src = scan(1, t, mode=INSERT_ONLY)
    out = types("STRING", "BIGINT", "TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)")
    win = WindowAggregate(
        node_id=2,
        inputs=(src,),
        fields=fields(out),
        changelog_mode=INSERT_ONLY,
        window=WindowSpec("TUMBLE", 1, 60_000),
        group_keys=(0,),
        aggs=(AggCall("COUNT", (), parse_type("BIGINT"), "n"),),
    )
    # a GROUP BY over the window output: fired rows travel on downstream
    agg = GroupAggregate(
        node_id=3,
        inputs=(win,),
        fields=fields(types("STRING", "BIGINT")),
        changelog_mode=NO_UB,
        group_keys=(0,),
        aggs=(AggCall("SUM", (1,), parse_type("BIGINT"), "total"),),
    )
    return JobPlan(sinks=(print_sink(4, win), print_sink(5, agg))), t, out


def test_watermark_fires_windows_and_fired_rows_flow_downstream(backend):
    plan, t, out = window_plan()
    graph = Graph(plan, backend, RuntimeContext())
    rows = "+I[a, 2024-01-01T00:00:10]\n+I[a, 2024-01-01T00:01:10]\n+I[b, 2024-01-01T00:00:20]"
    assert graph.push(1, parse_changelog(rows, t)) == {}
    fired = graph.advance_watermark(
        1, epoch_ms(parse_changelog("+I[x, 2024-01-01T00:00:59.999]", t).rows[0][1])
    )
    assert show(fired[4], out) == [
        "+I[a, 1, 2024-01-01T00:00, 2024-01-01T00:01, 2024-01-01T00:00:59.999]",
        "+I[b, 1, 2024-01-01T00:00, 2024-01-01T00:01, 2024-01-01T00:00:59.999]",
    ]
    assert show(fired[5], types("STRING", "BIGINT")) == ["+I[a, 1]", "+I[b, 1]"]
    assert graph.advance_watermark(1, 0) == {}  # watermarks never go back
    final = graph.finish()
    assert show(final[4], out) == [
        "+I[a, 1, 2024-01-01T00:01, 2024-01-01T00:02, 2024-01-01T00:01:59.999]"
    ]
    assert show(final[5], types("STRING", "BIGINT")) == ["+U[a, 2]"]


def test_a_join_watermark_is_the_minimum_of_its_inputs(backend):
    t = types("STRING", "TIMESTAMP(3)")
    left, right = scan(1, t, mode=INSERT_ONLY), scan(2, t, mode=INSERT_ONLY)
    union = Union(node_id=3, inputs=(left, right), fields=fields(t), changelog_mode=INSERT_ONLY)
    out = types("STRING", "BIGINT", "TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)")
    win = WindowAggregate(
        node_id=4,
        inputs=(union,),
        fields=fields(out),
        changelog_mode=INSERT_ONLY,
        window=WindowSpec("TUMBLE", 1, 1000),
        group_keys=(0,),
        aggs=(AggCall("COUNT", (), parse_type("BIGINT"), "n"),),
    )
    graph = Graph(JobPlan(sinks=(print_sink(5, win),)), backend, RuntimeContext())
    graph.push(1, parse_changelog("+I[a, 1970-01-01T00:00:00.500]", t))
    assert graph.advance_watermark(1, 5000) == {}  # the other input holds it back
    fired = graph.advance_watermark(2, 999)
    assert show(fired[5], out) == [
        "+I[a, 1, 1970-01-01T00:00, 1970-01-01T00:00:01, 1970-01-01T00:00:00.999]"
    ]


def test_state_outlives_the_graph_after_a_commit(tmp_path):
    from deltaflow.state.backend import StateBackend

    src = scan(1, T)
    plan = JobPlan(sinks=(print_sink(3, count_by_name(src, mode=NO_UB)),))
    with StateBackend(tmp_path / "s") as backend:
        Graph(plan, backend).push(1, parse_changelog("+I[a, 1]", T))
        backend.commit({"epoch": 1})
    with StateBackend(tmp_path / "s") as backend:
        out = Graph(plan, backend).push(1, parse_changelog("+I[a, 1]", T))
    assert show(out[3], types("STRING", "BIGINT")) == ["+U[a, 2]"]


def test_unsupported_node_is_a_plan_error(backend):
    from deltaflow.processor.plan import Node

    odd = Node(node_id=2, inputs=(scan(1, T),), fields=fields(T), changelog_mode=ALL)
    with pytest.raises(PlanError, match="cannot run Node"):
        Graph(JobPlan(sinks=(print_sink(3, odd),)), backend, RuntimeContext())


def lookup_plan(join_type="INNER", condition=None):
    src = scan(1, T)
    lookup = LookupJoin(
        node_id=2,
        inputs=(src,),
        fields=fields(T + T),
        changelog_mode=ALL,
        join_type=join_type,
        table="default_catalog.default_database.dim",
        options={},
        table_fields=fields(T),
        probe_keys=(0,),
        lookup_keys=(0,),
        condition=condition,
    )
    return JobPlan(sinks=(print_sink(3, lookup),))


def test_lookup_join_probes_the_table_as_it_is_now(backend):
    graph = Graph(lookup_plan("LEFT"), backend, RuntimeContext())
    assert list(graph.lookup_tables()) == ["default_catalog.default_database.dim"]
    graph.push_lookup(
        "default_catalog.default_database.dim", parse_changelog("+I[a, 1]\n+I[b, 2]", T)
    )
    out = graph.push(1, parse_changelog("+I[a, 10]\n+I[c, 30]\n-D[a, 10]", T))
    assert show(out[3], T + T) == ["+I[a, 10, a, 1]", "+I[c, 30, null, null]", "-D[a, 10, a, 1]"]
    # a later change of the table does not revise joined rows; new probes see it
    graph.push_lookup(
        "default_catalog.default_database.dim", parse_changelog("-D[a, 1]\n+I[a, 5]", T)
    )
    backend.commit({})
    out = graph.push(1, parse_changelog("+I[a, 11]", T))
    assert show(out[3], T + T) == ["+I[a, 11, a, 5]"]


def test_lookup_join_inner_drops_unmatched_and_filters_by_condition(backend):
    from deltaflow.processor.exprs.nodes import Call, InputRef

    i, b = parse_type("INT"), parse_type("BOOLEAN")
    graph = Graph(
        lookup_plan(condition=Call(b, "<", (InputRef(i, 3), InputRef(i, 1)))),
        backend,
        RuntimeContext(),
    )
    graph.push_lookup(
        "default_catalog.default_database.dim", parse_changelog("+I[a, 1]\n+I[a, 50]", T)
    )
    out = graph.push(1, parse_changelog("+I[a, 10]\n+I[z, 1]\n+I[null, 1]", T))
    assert show(out[3], T + T) == ["+I[a, 10, a, 1]"]
    with pytest.raises(PlanError, match="no lookup join"):
        graph.push_lookup("other", parse_changelog("+I[a, 1]", T))


def test_push_to_an_unknown_scan_is_a_plan_error(backend):
    graph = Graph(JobPlan(sinks=(print_sink(2, scan(1, T)),)), backend, RuntimeContext())
    with pytest.raises(PlanError, match="not a source scan"):
        graph.push(7, parse_changelog("+I[a, 1]", T))


def test_runtime_context_reads_mini_batch_and_time_zone():
    ctx = RuntimeContext.from_settings(
        {"table.exec.mini-batch.enabled": "true", "table.local-time-zone": "Europe/Berlin"}
    )
    assert ctx.mini_batch and ctx.time_zone == "Europe/Berlin"
    assert not RuntimeContext.from_settings({}).mini_batch


def test_calc_filters_each_change_on_its_own_and_keeps_its_kind(backend):
    from deltaflow.processor.exprs.nodes import Call, InputRef, Literal
    from deltaflow.processor.plan import Calc

    i, b = parse_type("INT"), parse_type("BOOLEAN")
    src = scan(1, T)
    calc = Calc(
        node_id=2,
        inputs=(src,),
        fields=fields([T[0], i]),
        changelog_mode=ALL,
        projection=(InputRef(T[0], 0), Call(i, "*", (InputRef(i, 1), Literal(i, 10)))),
        condition=Call(b, ">", (InputRef(i, 1), Literal(i, 1))),
    )
    graph = Graph(JobPlan(sinks=(print_sink(3, calc),)), backend)
    out = graph.push(1, parse_changelog("+I[a, 1]\n+I[b, 2]\n-U[b, 2]\n+U[b, 1]", T))
    # the +U fails the filter: only its -U passes, as Flink's Calc does
    assert show(out[3], T) == ["+I[b, 20]", "-U[b, 20]"]


def test_scan_watermark_is_the_batch_maximum_of_its_expression(backend):
    from deltaflow.formats.types import DataType
    from deltaflow.processor.exprs.nodes import Call, InputRef, Literal
    from deltaflow.processor.plan import TableSourceScan, Watermark

    plan, t, out = window_plan()
    ts = t[1]
    delay = Call(ts, "-", (InputRef(ts, 1), Literal(DataType("INTERVAL_DAY_TIME"), 5000)))
    win = plan.sinks[0].inputs[0]
    old = win.inputs[0]
    src = TableSourceScan(
        node_id=1,
        fields=old.fields,
        changelog_mode=INSERT_ONLY,
        table="t1",
        options={},
        physical=old.fields,
        watermark=Watermark(rowtime=1, expr=delay),
    )
    import dataclasses

    win = dataclasses.replace(win, inputs=(src,))
    graph = Graph(JobPlan(sinks=(print_sink(4, win),)), backend)
    assert (
        graph.push(
            1, parse_changelog("+I[a, 2024-01-01T00:00:30]\n+I[a, 2024-01-01T00:01:04.998]", t)
        )
        == {}
    )
    fired = graph.push(1, parse_changelog("+I[b, 2024-01-01T00:01:04.999]", t))
    assert show(fired[4], out) == [
        "+I[a, 1, 2024-01-01T00:00, 2024-01-01T00:01, 2024-01-01T00:00:59.999]"
    ]


def test_join_condition_filters_pairs(backend):
    from deltaflow.processor.exprs.nodes import Call, InputRef

    i, b = parse_type("INT"), parse_type("BOOLEAN")
    left, right = scan(1, T), scan(2, T)
    join = Join(
        node_id=3,
        inputs=(left, right),
        fields=fields(T + T),
        changelog_mode=ALL,
        join_type="LEFT",
        left_keys=(0,),
        right_keys=(0,),
        condition=Call(b, "<", (InputRef(i, 1), InputRef(i, 3))),
    )
    graph = Graph(JobPlan(sinks=(print_sink(4, join),)), backend)
    graph.push(2, parse_changelog("+I[k, 5]", T))
    out = graph.push(1, parse_changelog("+I[k, 1]\n+I[k, 9]", T))
    assert show(out[4], T + T) == ["+I[k, 1, k, 5]", "+I[k, 9, null, null]"]


def test_scan_watermark_is_the_minimum_over_source_partitions(backend):
    from deltaflow.processor.exprs.nodes import InputRef
    from deltaflow.processor.plan import TableSourceScan, Watermark

    plan, t, out = window_plan()
    win = plan.sinks[0].inputs[0]
    old = win.inputs[0]
    src = TableSourceScan(
        node_id=1,
        fields=old.fields,
        changelog_mode=INSERT_ONLY,
        table="t1",
        options={},
        physical=old.fields,
        watermark=Watermark(rowtime=1, expr=InputRef(t[1], 1)),
    )
    import dataclasses

    graph = Graph(JobPlan(sinks=(print_sink(4, dataclasses.replace(win, inputs=(src,))),)), backend)
    assert graph.push(1, parse_changelog("+I[a, 2024-01-01T00:00:10]", t), partition=0) == {}
    # partition 1 runs ahead, partition 0 still holds the watermark at 00:00:10
    assert graph.push(1, parse_changelog("+I[b, 2024-01-01T00:05:00]", t), partition=1) == {}
    fired = graph.push(1, parse_changelog("+I[c, 2024-01-01T00:02:00]", t), partition=0)
    assert show(fired[4], out) == [
        "+I[a, 1, 2024-01-01T00:00, 2024-01-01T00:01, 2024-01-01T00:00:59.999]"
    ]
