"""WindowRank: a window's rows ranked once it has ended; later rows of it are late."""

from __future__ import annotations

from rt_helpers import INSERT_ONLY, fields, parse_changelog, scan, show, types

from deltaflow.processor.plan import WindowRank
from deltaflow.processor.runtime.base import epoch_ms
from deltaflow.processor.runtime.window_rank import WindowRankOperator

T = types("STRING", "TIMESTAMP(3)", "TIMESTAMP(3)", "BIGINT")  # key, window_start, window_end, n
OUT = T + types("BIGINT")
W1 = "2024-01-01T00:00:00, 2024-01-01T00:00:10"
W2 = "2024-01-01T00:00:10, 2024-01-01T00:00:20"


def test_each_window_is_ranked_once_when_it_ends(backend, ctx):
    node = WindowRank(
        node_id=2, inputs=(scan(1, T, INSERT_ONLY),), fields=fields(OUT), changelog_mode=INSERT_ONLY,
        partition_keys=(1, 2), order_keys=((3, False, False),), rank_start=1, rank_end=2,
        output_rank_number=True, bounds=(1, 2),
    )  # fmt: skip
    op = WindowRankOperator(node, backend, ctx)
    batch = parse_changelog(f"+I[a, {W1}, 3]\n+I[b, {W1}, 9]\n+I[c, {W1}, 3]\n+I[d, {W2}, 1]", T)
    assert not op.process(batch)
    end = epoch_ms(batch.rows[0][2])
    out = show(op.on_watermark(end - 1), OUT)
    assert out == [  # 9 first, then the earlier of the two 3s
        "+I[b, 2024-01-01T00:00, 2024-01-01T00:00:10, 9, 1]",
        "+I[a, 2024-01-01T00:00, 2024-01-01T00:00:10, 3, 2]",
    ]
    assert not op.process(parse_changelog(f"+I[e, {W1}, 99]", T))
    assert op.late_rows == 1


def test_over_a_window_tvf_rows_get_their_windows_first(backend, ctx):
    from deltaflow.processor.plan import WindowSpec
    from deltaflow.processor.runtime.base import MAX_WATERMARK

    base = types("STRING", "BIGINT", "TIMESTAMP(3)")  # key, n, ts
    out_types = base + types("TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)", "BIGINT")
    node = WindowRank(
        node_id=2, inputs=(scan(1, base, INSERT_ONLY),), fields=fields(out_types),
        changelog_mode=INSERT_ONLY, partition_keys=(3, 4), order_keys=((1, False, False),),
        rank_start=1, rank_end=1, output_rank_number=True, bounds=(3, 4),
        assign=WindowSpec("HOP", 2, 10_000, slide_ms=5_000),
    )  # fmt: skip
    op = WindowRankOperator(node, backend, ctx)
    op.process(
        parse_changelog("+I[a, 3, 2024-01-01T00:00:06]\n+I[b, 9, 2024-01-01T00:00:01]", base)
    )
    # 00:00:06 is in [0, 10) and [5, 15); 00:00:01 in [-5, 5) and [0, 10)
    assert sorted(show(op.on_watermark(MAX_WATERMARK), out_types)) == [
        "+I[a, 3, 2024-01-01T00:00:06, 2024-01-01T00:00:05, 2024-01-01T00:00:15, 2024-01-01T00:00:14.999, 1]",
        "+I[b, 9, 2024-01-01T00:00:01, 2023-12-31T23:59:55, 2024-01-01T00:00:05, 2024-01-01T00:00:04.999, 1]",
        "+I[b, 9, 2024-01-01T00:00:01, 2024-01-01T00:00, 2024-01-01T00:00:10, 2024-01-01T00:00:09.999, 1]",
    ]


def _deduplicate(backend, ctx, keep_last: bool, asc: bool) -> WindowRankOperator:
    from deltaflow.processor.plan import WindowSpec

    base = types("STRING", "TIMESTAMP(3)")  # key, ts
    out_types = base + types("TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)")
    node = WindowRank(
        node_id=3 + keep_last, inputs=(scan(1, base, INSERT_ONLY),), fields=fields(out_types),
        changelog_mode=INSERT_ONLY, partition_keys=(2, 3), order_keys=((1, asc, asc),),
        rank_start=1, rank_end=1, output_rank_number=False, bounds=(2, 3),
        assign=WindowSpec("TUMBLE", 1, 10_000), keep_last=keep_last,
    )  # fmt: skip
    return WindowRankOperator(node, backend, ctx)


def test_window_deduplication_of_equal_times_keeps_first_or_last_arrival(backend, ctx):
    """Flink's WindowDeduplicate: FirstRow keeps the earliest time, of equal times the first
    to arrive; LastRow the latest time, of equal times the last to arrive."""
    from deltaflow.processor.runtime.base import MAX_WATERMARK

    base = types("STRING", "TIMESTAMP(3)")
    out_types = base + types("TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)")
    rows = ("+I[a, 2024-01-01T00:00:05]\n+I[b, 2024-01-01T00:00:02]\n+I[c, 2024-01-01T00:00:05]\n"
            "+I[d, 2024-01-01T00:00:02]")  # fmt: skip
    kept = {}
    for keep_last, asc in ((False, True), (True, False)):
        op = _deduplicate(backend, ctx, keep_last, asc)
        op.process(parse_changelog(rows, base))
        kept[keep_last] = [r.split(",")[0] for r in show(op.on_watermark(MAX_WATERMARK), out_types)]
    assert kept == {False: ["+I[b"], True: ["+I[c"]}
