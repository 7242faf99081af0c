"""WindowJoin: the rows of one window join when the watermark reaches its end - 1; outer
sides are padded; rows of a joined window are late. Expected rows worked out by hand."""

from __future__ import annotations

from rt_helpers import INSERT_ONLY, fields, parse_changelog, scan, show, types

from deltaflow.processor.plan import WindowJoin
from deltaflow.processor.runtime.base import epoch_ms
from deltaflow.processor.runtime.window_join import WindowJoinOperator

T = types("INT", "TIMESTAMP(3)", "TIMESTAMP(3)", "BIGINT")  # key, window_start, window_end, value
OUT = T + T


def node(join_type):
    return WindowJoin(
        node_id=3, inputs=(scan(1, T, INSERT_ONLY), scan(2, T, INSERT_ONLY)), fields=fields(OUT),
        changelog_mode=INSERT_ONLY, join_type=join_type, left_keys=(0,), right_keys=(0,),
        condition=None, left_bounds=(1, 2), right_bounds=(1, 2),
    )  # fmt: skip


W1 = "2024-01-01T00:00:00, 2024-01-01T00:00:10"
W2 = "2024-01-01T00:00:10, 2024-01-01T00:00:20"


def rows(text):
    return parse_changelog(text, T)


def test_windows_join_when_they_end_and_outer_sides_are_padded(backend, ctx):
    op = WindowJoinOperator(node("FULL"), backend, ctx)
    op.process(rows(f"+I[1, {W1}, 10]\n+I[2, {W1}, 20]\n+I[1, {W2}, 30]"), 0)
    op.process(rows(f"+I[1, {W1}, 5]\n+I[3, {W1}, 6]\n+I[1, {W2}, 7]"), 1)
    end = epoch_ms(rows(f"+I[0, {W1}, 0]").rows[0][2])
    assert not op.on_watermark(end - 2)
    out = show(op.on_watermark(end - 1), OUT)  # only the first window: same key 1 pairs
    assert sorted(out) == sorted([
        "+I[1, 2024-01-01T00:00, 2024-01-01T00:00:10, 10, 1, 2024-01-01T00:00, 2024-01-01T00:00:10, 5]",
        "+I[2, 2024-01-01T00:00, 2024-01-01T00:00:10, 20, null, null, null, null]",
        "+I[null, null, null, null, 3, 2024-01-01T00:00, 2024-01-01T00:00:10, 6]",
    ])  # fmt: skip
    assert not op.process(rows(f"+I[4, {W1}, 1]"), 0)  # its window has been joined
    assert op.late_rows == 1
    assert backend.table("3:WindowJoin:rows").items()  # the second window waits
