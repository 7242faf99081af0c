"""WindowTableFunction: TUMBLE/HOP rows go out at once with their windows; SESSION rows wait
for their session to end, then go out with its bounds; rows of an ended session are late."""

from __future__ import annotations

from rt_helpers import INSERT_ONLY, fields, parse_changelog, scan, show, types

from deltaflow.processor.plan import WindowSpec, WindowTableFunction
from deltaflow.processor.runtime.base import MAX_WATERMARK, epoch_ms
from deltaflow.processor.runtime.window_tvf import window_tvf_operator

IN = types("STRING", "TIMESTAMP(3)")  # key, ts
OUT = IN + types("TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)")


def _op(spec: WindowSpec, backend, ctx, node_id: int = 2):  # noqa: ANN001, ANN202
    node = WindowTableFunction(node_id=node_id, inputs=(scan(1, IN, INSERT_ONLY),), fields=fields(OUT),
                               changelog_mode=INSERT_ONLY, window=spec)  # fmt: skip
    return window_tvf_operator(node, backend, ctx)


def test_hop_rows_go_out_once_per_window_at_once(backend, ctx):
    op = _op(WindowSpec("HOP", 1, 10_000, slide_ms=5_000), backend, ctx)
    out = show(op.process(parse_changelog("+I[a, 2024-01-01T00:00:06]", IN)), OUT)
    assert out == [
        "+I[a, 2024-01-01T00:00:06, 2024-01-01T00:00:05, 2024-01-01T00:00:15, 2024-01-01T00:00:14.999]",
        "+I[a, 2024-01-01T00:00:06, 2024-01-01T00:00, 2024-01-01T00:00:10, 2024-01-01T00:00:09.999]",
    ]


def test_session_rows_wait_for_their_session_then_late_rows_are_dropped(backend, ctx):
    op = _op(WindowSpec("SESSION", 1, 3_000), backend, ctx)  # no PARTITION BY: one session for all
    rows = "+I[a, 2024-01-01T00:00:01]\n+I[b, 2024-01-01T00:00:03]\n+I[c, 2024-01-01T00:00:09]"
    batch = parse_changelog(rows, IN)
    assert not op.process(batch)
    first_end = epoch_ms(batch.rows[1][1]) + 3_000  # a and b merge: [1 s, 6 s)
    assert not op.on_watermark(first_end - 2)
    assert show(op.on_watermark(first_end - 1), OUT) == [
        "+I[a, 2024-01-01T00:00:01, 2024-01-01T00:00:01, 2024-01-01T00:00:06, 2024-01-01T00:00:05.999]",
        "+I[b, 2024-01-01T00:00:03, 2024-01-01T00:00:01, 2024-01-01T00:00:06, 2024-01-01T00:00:05.999]",
    ]
    assert not op.process(parse_changelog("+I[d, 2024-01-01T00:00:02]", IN))  # its session ended
    assert op.late_rows == 1
    assert show(op.on_watermark(MAX_WATERMARK), OUT) == [
        "+I[c, 2024-01-01T00:00:09, 2024-01-01T00:00:09, 2024-01-01T00:00:12, 2024-01-01T00:00:11.999]",
    ]
