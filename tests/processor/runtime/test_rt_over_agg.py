"""OverAggregate on event time: rows wait for the watermark, then go through their frame in
time order. Expected values are the frame's aggregates worked out by hand."""

from __future__ import annotations

from rt_helpers import INSERT_ONLY, fields, parse_changelog, scan, show, types

from deltaflow.formats.types import parse_type
from deltaflow.processor.plan import AggCall, OverAggregate, OverWindow
from deltaflow.processor.runtime.base import MAX_WATERMARK, epoch_ms
from deltaflow.processor.runtime.over_agg import OverAggOperator

T = types("INT", "STRING", "INT", "TIMESTAMP(3)")
OUT = T + types("BIGINT", "INT")
SEC = 1000


def node(kind="ROWS", preceding=1):
    return OverAggregate(
        node_id=2, inputs=(scan(1, T, INSERT_ONLY),), fields=fields(OUT), changelog_mode=INSERT_ONLY,
        window=OverWindow((1,), 3, kind, preceding), time_kind="ROWTIME",
        aggs=(AggCall("COUNT", (), parse_type("BIGINT"), "w0$o0"),
              AggCall("MAX", (2,), parse_type("INT"), "w0$o1")),
    )  # fmt: skip


def rows(text):
    return parse_changelog(text, T)


def at(text):
    return epoch_ms(rows(f"+I[0, x, 0, {text}]").rows[0][3])


BATCH = """
+I[1, a, 5, 2024-01-01T00:00:00]
+I[2, a, 3, 2024-01-01T00:00:05]
+I[3, b, 7, 2024-01-01T00:00:05]
+I[4, a, 1, 2024-01-01T00:00:05]
+I[5, a, 9, 2024-01-01T00:00:03]
"""


def test_rows_frames_wait_for_the_watermark_and_follow_time_order(backend, ctx):
    op = OverAggOperator(node("ROWS", 1), backend, ctx)  # the row and the one before it
    assert not op.process(rows(BATCH))
    out = show(op.on_watermark(at("2024-01-01T00:00:04")), OUT)
    assert out == ["+I[1, a, 5, 2024-01-01T00:00, 1, 5]", "+I[5, a, 9, 2024-01-01T00:00:03, 2, 9]"]
    out = show(op.on_watermark(at("2024-01-01T00:00:05")), OUT)
    assert out == [  # equal times in arrival order: 2 then 4
        "+I[2, a, 3, 2024-01-01T00:00:05, 2, 9]",
        "+I[4, a, 1, 2024-01-01T00:00:05, 2, 3]",
        "+I[3, b, 7, 2024-01-01T00:00:05, 1, 7]",
    ]
    # late for partition a (not after its last time), on time for a new partition c
    assert not op.process(
        rows("+I[6, a, 8, 2024-01-01T00:00:04]\n+I[7, c, 2, 2024-01-01T00:00:01]")
    )
    assert op.late_rows == 1
    assert show(op.on_watermark(MAX_WATERMARK), OUT) == ["+I[7, c, 2, 2024-01-01T00:00:01, 1, 2]"]


def test_range_frames_hold_peers_and_drop_rows_older_than_the_interval(backend, ctx):
    op = OverAggOperator(node("RANGE", 4 * SEC), backend, ctx)  # rows within 4 s before
    op.process(rows(BATCH + "+I[6, a, 2, 2024-01-01T00:00:09]"))
    out = show(op.on_watermark(MAX_WATERMARK), OUT)
    assert out == [
        "+I[1, a, 5, 2024-01-01T00:00, 1, 5]",
        "+I[5, a, 9, 2024-01-01T00:00:03, 2, 9]",
        "+I[2, a, 3, 2024-01-01T00:00:05, 3, 9]",  # 00:00 is 5 s before: out; peers 2 and 4 in
        "+I[4, a, 1, 2024-01-01T00:00:05, 3, 9]",
        "+I[6, a, 2, 2024-01-01T00:00:09, 3, 3]",  # 5, 5, 9 s: 00:00:03 is out
        "+I[3, b, 7, 2024-01-01T00:00:05, 1, 7]",
    ]


def test_unbounded_frames_and_a_restart(backend, ctx):
    op = OverAggOperator(node("RANGE", None), backend, ctx)
    op.process(rows(BATCH))
    op.on_watermark(at("2024-01-01T00:00:04"))
    backend.commit()
    again = OverAggOperator(node("RANGE", None), backend, ctx)
    out = show(again.on_watermark(MAX_WATERMARK), OUT)
    assert out == [
        "+I[2, a, 3, 2024-01-01T00:00:05, 4, 9]",
        "+I[4, a, 1, 2024-01-01T00:00:05, 4, 9]",
        "+I[3, b, 7, 2024-01-01T00:00:05, 1, 7]",
    ]


def test_processing_time_windows_emit_as_rows_arrive(backend):
    from deltaflow.processor.runtime.base import RuntimeContext

    spec = node("ROWS", 1)
    proctime = OverAggregate(
        node_id=2, inputs=spec.inputs, fields=spec.fields, changelog_mode=INSERT_ONLY,
        window=spec.window, aggs=spec.aggs, time_kind="PROCTIME",
    )  # fmt: skip
    op = OverAggOperator(proctime, backend, RuntimeContext(clock=lambda: 0))
    out = show(op.process(rows(BATCH)), OUT)
    assert out == [  # arrival order, the time column plays no part
        "+I[1, a, 5, 2024-01-01T00:00, 1, 5]",
        "+I[2, a, 3, 2024-01-01T00:00:05, 2, 5]",
        "+I[4, a, 1, 2024-01-01T00:00:05, 2, 3]",
        "+I[5, a, 9, 2024-01-01T00:00:03, 2, 9]",
        "+I[3, b, 7, 2024-01-01T00:00:05, 1, 7]",
    ]
    assert not op.on_watermark(MAX_WATERMARK) and op.late_rows == 0
