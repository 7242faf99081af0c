"""Window aggregation (TUMBLE, HOP, CUMULATE) on event time."""

from __future__ import annotations

from rt_helpers import INSERT_ONLY, fields, parse_changelog, scan, show, types

from deltaflow.formats.types import parse_type
from deltaflow.processor.plan import AggCall, WindowAggregate, WindowSpec
from deltaflow.processor.runtime.base import epoch_ms
from deltaflow.processor.runtime.window import WindowAggOperator, windows_of

T = types("STRING", "INT", "TIMESTAMP(3)")
OUT = types("STRING", "BIGINT", "INT", "TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)")
SEC = 1000


def window_node(spec, t=T, out=OUT):
    return WindowAggregate(
        node_id=2,
        inputs=(scan(1, t),),
        fields=fields(out),
        changelog_mode=INSERT_ONLY,
        window=spec,
        group_keys=(0,),
        aggs=(
            AggCall("COUNT", (), parse_type("BIGINT"), "n"),
            AggCall("SUM", (1,), parse_type("INT"), "s"),
        ),
    )


def ms(text):
    return epoch_ms(parse_changelog(f"+I[x, 0, {text}]", T).rows[0][2])


def test_window_assignment_for_the_three_kinds():
    assert windows_of(WindowSpec("TUMBLE", 2, 10 * SEC), 12 * SEC) == [(10 * SEC, 20 * SEC)]
    assert windows_of(WindowSpec("HOP", 2, 10 * SEC, slide_ms=5 * SEC), 12 * SEC) == [
        (10 * SEC, 20 * SEC),
        (5 * SEC, 15 * SEC),
    ]
    assert windows_of(WindowSpec("CUMULATE", 2, 10 * SEC, step_ms=5 * SEC), 12 * SEC) == [
        (10 * SEC, 15 * SEC),
        (10 * SEC, 20 * SEC),
    ]
    assert windows_of(WindowSpec("CUMULATE", 2, 10 * SEC, step_ms=5 * SEC), 3 * SEC) == [
        (0, 5 * SEC),
        (0, 10 * SEC),
    ]


def test_tumble_fires_at_window_end_minus_one_and_drops_late_rows(backend, ctx):
    op = WindowAggOperator(window_node(WindowSpec("TUMBLE", 2, 10 * SEC)), backend, ctx)
    rows = "+I[a, 1, 2024-01-01T00:00:01]\n+I[a, 2, 2024-01-01T00:00:09.999]\n+I[b, 5, 2024-01-01T00:00:12]"
    assert not op.process(parse_changelog(rows, T))
    assert not op.on_watermark(ms("2024-01-01T00:00:09.998"))
    fired = show(op.on_watermark(ms("2024-01-01T00:00:09.999")), OUT)
    assert fired == ["+I[a, 2, 3, 2024-01-01T00:00, 2024-01-01T00:00:10, 2024-01-01T00:00:09.999]"]
    op.process(parse_changelog("+I[a, 7, 2024-01-01T00:00:03]", T))  # late: its window fired
    assert op.late_rows == 1
    fired = show(op.on_watermark(ms("2024-01-01T00:01:00")), OUT)
    assert fired == [
        "+I[b, 1, 5, 2024-01-01T00:00:10, 2024-01-01T00:00:20, 2024-01-01T00:00:19.999]"
    ]


def test_hop_puts_a_row_in_every_window_that_holds_it(backend, ctx):
    op = WindowAggOperator(
        window_node(WindowSpec("HOP", 2, 10 * SEC, slide_ms=5 * SEC)), backend, ctx
    )
    op.process(parse_changelog("+I[a, 1, 2024-01-01T00:00:07]", T))
    fired = show(op.on_watermark(ms("2024-01-01T00:01:00")), OUT)
    assert fired == [
        "+I[a, 1, 1, 2024-01-01T00:00, 2024-01-01T00:00:10, 2024-01-01T00:00:09.999]",
        "+I[a, 1, 1, 2024-01-01T00:00:05, 2024-01-01T00:00:15, 2024-01-01T00:00:14.999]",
    ]


def test_cumulate_emits_growing_windows(backend, ctx):
    op = WindowAggOperator(
        window_node(WindowSpec("CUMULATE", 2, 10 * SEC, step_ms=5 * SEC)), backend, ctx
    )
    op.process(parse_changelog("+I[a, 1, 2024-01-01T00:00:01]\n+I[a, 2, 2024-01-01T00:00:06]", T))
    first = show(op.on_watermark(ms("2024-01-01T00:00:05")), OUT)
    assert first == ["+I[a, 1, 1, 2024-01-01T00:00, 2024-01-01T00:00:05, 2024-01-01T00:00:04.999]"]
    backend.commit({})
    rest = show(op.on_watermark(ms("2024-01-01T00:00:10")), OUT)
    assert rest == ["+I[a, 2, 3, 2024-01-01T00:00, 2024-01-01T00:00:10, 2024-01-01T00:00:09.999]"]


def test_ltz_time_column_aligns_windows_in_the_session_time_zone(backend):
    from deltaflow.processor.runtime.base import RuntimeContext

    t = types("STRING", "INT", "TIMESTAMP_LTZ(3)")
    out = types("STRING", "BIGINT", "INT", "TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP_LTZ(3)")
    node = window_node(WindowSpec("TUMBLE", 2, 24 * 3600 * SEC), t, out)
    op = WindowAggOperator(node, backend, RuntimeContext(time_zone="Asia/Shanghai"))
    op.process(parse_changelog("+I[a, 1, 2024-01-01T20:00:00Z]", t))  # 2024-01-02 04:00 in Shanghai
    fired = show(op.on_watermark(ms("2024-01-03T00:00:00")), out)
    assert fired == ["+I[a, 1, 1, 2024-01-02T00:00, 2024-01-03T00:00, 2024-01-02T15:59:59.999Z]"]


def test_hop_row_late_for_its_first_window_still_counts_in_the_next(backend, ctx):
    op = WindowAggOperator(
        window_node(WindowSpec("HOP", 2, 10 * SEC, slide_ms=5 * SEC)), backend, ctx
    )
    assert not op.on_watermark(ms("2024-01-01T00:00:10"))  # [0, 10) has fired (empty)
    op.process(parse_changelog("+I[a, 1, 2024-01-01T00:00:07]", T))  # in [0, 10) and [5, 15)
    assert op.late_rows == 0
    fired = show(op.on_watermark(ms("2024-01-01T00:01:00")), OUT)
    assert fired == [
        "+I[a, 1, 1, 2024-01-01T00:00:05, 2024-01-01T00:00:15, 2024-01-01T00:00:14.999]"
    ]
    op.process(parse_changelog("+I[a, 1, 2024-01-01T00:00:07]", T))  # every window fired: dropped
    assert op.late_rows == 1


# Flink's window aggregation doc example: the Bid table and SUM(price) per window.
BID = types("TIMESTAMP(3)", "DECIMAL(10, 2)", "STRING")
BIDS = """
+I[2020-04-15T08:05, 4.00, C]
+I[2020-04-15T08:07, 2.00, A]
+I[2020-04-15T08:09, 5.00, D]
+I[2020-04-15T08:11, 3.00, B]
+I[2020-04-15T08:13, 1.00, E]
+I[2020-04-15T08:17, 6.00, F]
"""
BID_OUT = types("DECIMAL(38, 2)", "TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)")
MIN = 60 * SEC


def bid_totals(backend, spec):
    from deltaflow.processor.plan import JobPlan, Sink
    from deltaflow.processor.runtime.graph import Graph

    win = WindowAggregate(
        node_id=2,
        inputs=(scan(1, BID, mode=INSERT_ONLY),),
        fields=fields(BID_OUT),
        changelog_mode=INSERT_ONLY,
        window=spec,
        group_keys=(),
        aggs=(AggCall("SUM", (1,), parse_type("DECIMAL(38, 2)"), "total_price"),),
    )
    sink = Sink(
        node_id=3,
        inputs=(win,),
        fields=win.fields,
        changelog_mode=INSERT_ONLY,
        table="out",
        options={},
        physical=win.fields,
    )
    graph = Graph(JobPlan(sinks=(sink,)), backend)
    assert graph.push(1, parse_changelog(BIDS, BID)) == {}
    return [ln.rsplit(", ", 1)[0] + "]" for ln in show(graph.finish()[3], BID_OUT)]


def test_docs_example_tumble(backend):
    assert bid_totals(backend, WindowSpec("TUMBLE", 0, 10 * MIN)) == [
        "+I[11.00, 2020-04-15T08:00, 2020-04-15T08:10]",
        "+I[10.00, 2020-04-15T08:10, 2020-04-15T08:20]",
    ]


def test_docs_example_hop(backend):
    assert bid_totals(backend, WindowSpec("HOP", 0, 10 * MIN, slide_ms=5 * MIN)) == [
        "+I[11.00, 2020-04-15T08:00, 2020-04-15T08:10]",
        "+I[15.00, 2020-04-15T08:05, 2020-04-15T08:15]",
        "+I[10.00, 2020-04-15T08:10, 2020-04-15T08:20]",
        "+I[6.00, 2020-04-15T08:15, 2020-04-15T08:25]",
    ]


def test_docs_example_cumulate(backend):
    assert bid_totals(backend, WindowSpec("CUMULATE", 0, 10 * MIN, step_ms=2 * MIN)) == [
        "+I[4.00, 2020-04-15T08:00, 2020-04-15T08:06]",
        "+I[6.00, 2020-04-15T08:00, 2020-04-15T08:08]",
        "+I[11.00, 2020-04-15T08:00, 2020-04-15T08:10]",
        "+I[3.00, 2020-04-15T08:10, 2020-04-15T08:12]",
        "+I[4.00, 2020-04-15T08:10, 2020-04-15T08:14]",
        "+I[4.00, 2020-04-15T08:10, 2020-04-15T08:16]",
        "+I[10.00, 2020-04-15T08:10, 2020-04-15T08:18]",
        "+I[10.00, 2020-04-15T08:10, 2020-04-15T08:20]",
    ]
