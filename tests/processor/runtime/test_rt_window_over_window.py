"""A window aggregate over an earlier one's window bounds: each row is in the one window its
window_start / window_end columns name, fired when the watermark reaches its end - 1."""

from __future__ import annotations

from rt_helpers import INSERT_ONLY, fields, parse_changelog, scan, show, types

from deltaflow.formats.types import parse_type
from deltaflow.processor.plan import AggCall, WindowAggregate, WindowSpec
from deltaflow.processor.runtime.base import epoch_ms
from deltaflow.processor.runtime.session_window import window_operator

T = types("BIGINT", "TIMESTAMP(3)", "TIMESTAMP(3)")  # n, window_start, window_end
OUT = types("BIGINT", "TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)")
SEC = 1000


def test_rows_fold_into_the_window_their_bounds_name(backend, ctx):
    node = WindowAggregate(
        node_id=2, inputs=(scan(1, T, INSERT_ONLY),), fields=fields(OUT), changelog_mode=INSERT_ONLY,
        window=WindowSpec("HOP", 1, 10 * SEC, slide_ms=5 * SEC, start_column=1, end_column=2),
        group_keys=(), aggs=(AggCall("MAX", (0,), parse_type("BIGINT"), "m"),),
    )  # fmt: skip
    op = window_operator(node, backend, ctx)
    batch = parse_changelog(
        "+I[3, 2024-01-01T00:00:00, 2024-01-01T00:00:10]\n"
        "+I[7, 2024-01-01T00:00:05, 2024-01-01T00:00:15]\n"
        "+I[5, 2024-01-01T00:00:00, 2024-01-01T00:00:10]",
        T,
    )
    assert not op.process(batch)
    end = epoch_ms(batch.rows[0][2])
    fired = show(op.on_watermark(end - 1), OUT)
    # only the [0 s, 10 s) window, and only its two rows (a HOP row is not re-assigned)
    assert fired == ["+I[5, 2024-01-01T00:00, 2024-01-01T00:00:10, 2024-01-01T00:00:09.999]"]
