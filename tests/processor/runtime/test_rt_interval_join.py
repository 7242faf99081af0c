"""IntervalJoin on event time: pairs within the bounds, expiry by watermark, late rows,
outer padding. Expected rows follow from the bounds ``tr + lower <= tl <= tr + upper``
and Flink's expiration times (left rows at or before ``W + lower - 1``, right rows at or
before ``W - upper - 1`` are forgotten on watermark ``W``)."""

from __future__ import annotations

from rt_helpers import INSERT_ONLY, fields, parse_changelog, scan, show, types

from deltaflow.processor.plan import IntervalJoin
from deltaflow.processor.runtime.base import MAX_WATERMARK, epoch_ms
from deltaflow.processor.runtime.interval_join import IntervalJoinOperator

T = types("INT", "STRING", "TIMESTAMP(3)")
OUT = T + T
SEC = 1000


def node(join_type="INNER", lower=-60 * SEC, upper=0):
    return IntervalJoin(
        node_id=3, inputs=(scan(1, T, INSERT_ONLY), scan(2, T, INSERT_ONLY)), fields=fields(OUT),
        changelog_mode=INSERT_ONLY, join_type=join_type, left_keys=(1,), right_keys=(1,),
        condition=None, lower_ms=lower, upper_ms=upper, left_time=2, right_time=2,
    )  # fmt: skip


def rows(text):
    return parse_changelog(text, T)


def at(text):
    return epoch_ms(rows(f"+I[0, x, {text}]").rows[0][2])


def test_pairs_only_within_the_bounds_in_both_arrival_orders(backend, ctx):
    op = IntervalJoinOperator(node(), backend, ctx)  # left.ts in [right.ts - 60 s, right.ts]
    assert not op.process(rows("+I[1, a, 2024-01-01T00:00:00]\n+I[2, a, 2024-01-01T00:00:30]"), 0)
    out = op.process(rows("+I[10, a, 2024-01-01T00:00:40]\n+I[11, b, 2024-01-01T00:00:40]"), 1)
    assert show(out, OUT) == [
        "+I[1, a, 2024-01-01T00:00, 10, a, 2024-01-01T00:00:40]",
        "+I[2, a, 2024-01-01T00:00:30, 10, a, 2024-01-01T00:00:40]",
    ]
    # a left row after the right one: 00:00:40 is within [00:00:40 - 60 s, 00:00:40]
    out = op.process(rows("+I[3, a, 2024-01-01T00:00:40]\n+I[4, a, 2024-01-01T00:00:41]"), 0)
    assert show(out, OUT) == ["+I[3, a, 2024-01-01T00:00:40, 10, a, 2024-01-01T00:00:40]"]


def test_the_watermark_expires_state_and_late_rows_are_counted(backend, ctx):
    op = IntervalJoinOperator(node(upper=10 * SEC), backend, ctx)  # [tr - 60 s, tr + 10 s]
    op.process(rows("+I[1, a, 2024-01-01T00:00:00]"), 0)
    out = op.process(rows("+I[10, a, 2024-01-01T00:01:00]"), 1)  # exactly 60 s apart
    assert len(out) == 1
    left, right = backend.table("3:IntervalJoin:left"), backend.table("3:IntervalJoin:right")
    # W: left rows at or before W - 60 s - 1 ms go, right rows at or before W - 10 s - 1 ms
    op.on_watermark(at("2024-01-01T00:01:00"))
    assert len(left.items()) == 1 and len(right.items()) == 1
    op.on_watermark(at("2024-01-01T00:01:00.001"))
    assert left.items() == [] and len(right.items()) == 1
    op.on_watermark(at("2024-01-01T00:01:10"))
    assert len(right.items()) == 1
    op.on_watermark(at("2024-01-01T00:01:10.001"))
    assert right.items() == []
    assert op.late_rows == 0
    # late: a right row at 00:00:30 pairs with left rows up to 00:00:40, behind the watermark
    assert not op.process(rows("+I[11, a, 2024-01-01T00:00:30]"), 1)
    assert op.late_rows == 1 and right.items() == []
    # not late: a left row at 00:01:10.5 may still pair with right rows after 00:01:10.5
    op.process(rows("+I[2, a, 2024-01-01T00:01:10.500]"), 0)
    assert op.late_rows == 1 and len(left.items()) == 1


def test_outer_sides_are_padded_when_their_rows_expire_unmatched(backend, ctx):
    op = IntervalJoinOperator(node("FULL", lower=-2 * SEC, upper=2 * SEC), backend, ctx)
    op.process(rows("+I[1, a, 2024-01-01T00:00:00]\n+I[2, b, 2024-01-01T00:00:10]"), 0)
    out = op.process(rows("+I[10, a, 2024-01-01T00:00:01]\n+I[11, a, 2024-01-01T00:00:05]"), 1)
    assert show(out, OUT) == ["+I[1, a, 2024-01-01T00:00, 10, a, 2024-01-01T00:00:01]"]
    out = op.on_watermark(at("2024-01-01T00:00:08"))  # right rows up to 00:00:05.999 expire
    assert show(out, OUT) == ["+I[null, null, null, 11, a, 2024-01-01T00:00:05]"]
    out = op.on_watermark(MAX_WATERMARK)
    assert show(out, OUT) == ["+I[2, b, 2024-01-01T00:00:10, null, null, null]"]


def test_a_late_unmatched_outer_row_is_padded_at_once(backend, ctx):
    op = IntervalJoinOperator(node("LEFT", lower=-2 * SEC, upper=2 * SEC), backend, ctx)
    op.on_watermark(at("2024-01-01T00:01:00"))
    out = op.process(rows("+I[1, a, 2024-01-01T00:00:00]"), 0)
    assert show(out, OUT) == ["+I[1, a, 2024-01-01T00:00, null, null, null]"]
    assert op.late_rows == 1


def test_state_survives_a_restart(backend, ctx):
    op = IntervalJoinOperator(node(), backend, ctx)
    op.process(rows("+I[1, a, 2024-01-01T00:00:00]"), 0)
    op.on_watermark(at("2024-01-01T00:00:30"))
    backend.commit()
    again = IntervalJoinOperator(node(), backend, ctx)
    assert again.watermark == at("2024-01-01T00:00:30")
    out = again.process(rows("+I[10, a, 2024-01-01T00:00:45]"), 1)
    assert show(out, OUT) == ["+I[1, a, 2024-01-01T00:00, 10, a, 2024-01-01T00:00:45]"]
