"""How Rank breaks ties between equal sort keys over an insert-only input (issue 18 item 7).

Every expected changelog is what Flink 2.3 printed for the same rows: a partition ``a``
gets ids 1..6 with times 1, 1, 0, 1, 2, 2 (the ``ts`` column), read by
``ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts ...)`` from an insert-only 'json' table.
The conformance templates ``topn_ties_*`` compare the same rules with Flink on seeded
histories.
"""

from __future__ import annotations

from dataclasses import replace

from rt_helpers import ALL, INSERT_ONLY, fields, parse_changelog, scan, show, types

from deltaflow.processor.plan import Rank
from deltaflow.processor.runtime.rank import RankOperator, rank_operator
from deltaflow.processor.runtime.ttl import TtlBackend

T = types("STRING", "INT", "INT")  # k, id, ts
ROWS = "+I[a, 1, 1]\n+I[a, 2, 1]\n+I[a, 3, 0]\n+I[a, 4, 1]\n+I[a, 5, 2]\n+I[a, 6, 2]"


def rank(asc: bool, start=1, end=1, number=False, later_first=False, mode=ALL) -> Rank:
    return Rank(
        node_id=2,
        inputs=(scan(1, T, mode=INSERT_ONLY),),
        fields=fields(T + types("BIGINT") if number else T),
        changelog_mode=mode,
        partition_keys=(0,),
        order_keys=((2, asc, asc),),
        rank_start=start,
        rank_end=end,
        output_rank_number=number,
        later_first=later_first,
    )


def run(node: Rank, backend, ctx, text: str = ROWS) -> list[str]:
    out = RankOperator(node, backend, ctx).process(parse_changelog(text, T))
    return show(out, T + types("BIGINT") if node.output_rank_number else T)


def test_deduplicate_keep_last_on_a_time_attribute_keeps_the_last_of_equal_times(backend, ctx):
    """ORDER BY rowtime DESC, rn = 1: each row whose time is >= the kept one's replaces it
    (ids 2 and 4 replace rows of the same time; 3, earlier, does not)."""
    out = run(rank(asc=False, later_first=True), backend, ctx)
    assert out == [
        "+I[a, 1, 1]",
        "-U[a, 1, 1]", "+U[a, 2, 1]",
        "-U[a, 2, 1]", "+U[a, 4, 1]",
        "-U[a, 4, 1]", "+U[a, 5, 2]",
        "-U[a, 5, 2]", "+U[a, 6, 2]",
    ]  # fmt: skip


def test_deduplicate_keep_last_replaces_an_equal_row_too(backend, ctx):
    out = run(rank(asc=False, number=True, later_first=True), backend, ctx, "+I[a, 1, 1]\n" * 2)
    assert out == ["+I[a, 1, 1, 1]", "-U[a, 1, 1, 1]", "+U[a, 1, 1, 1]"]


def test_rank_1_without_a_time_attribute_keeps_the_first_of_equal_keys(backend, ctx):
    """ORDER BY ts DESC (a plain column), rn = 1: the first arrival wins; a change of the
    one rank is printed as an update."""
    out = run(rank(asc=False), backend, ctx)
    assert out == ["+I[a, 1, 1]", "-U[a, 1, 1]", "+U[a, 5, 2]"]


def test_rank_1_ascending_is_insert_only_and_prints_a_better_row_as_an_update(backend, ctx):
    """ORDER BY ts ASC, rn = 1 over an insert-only input: Flink plans changelogMode=[I] and
    prints the later, smaller row 3 as +U without -U."""
    out = run(rank(asc=True, mode=INSERT_ONLY), backend, ctx)
    assert out == ["+I[a, 1, 1]", "+U[a, 3, 0]"]


def test_a_range_shifts_equal_rows_down_and_prints_each_shift(backend, ctx):
    """ROW_NUMBER ranks 2..3 by ts DESC: rows of equal times in arrival order, and a row
    that moves to the place of an equal one is still printed (-U/+U of equal rows)."""
    rows = "+I[a, 4, 0]\n+I[a, 4, 0]\n+I[a, 6, 20]"
    out = run(rank(asc=False, start=2, end=3, number=True), backend, ctx, rows)
    assert out == ["+I[a, 4, 0, 2]", "-U[a, 4, 0, 2]", "+U[a, 4, 0, 2]", "+I[a, 4, 0, 3]"]


def test_top_2_keeps_the_first_arrivals_of_equal_keys(backend, ctx):
    out = run(rank(asc=False, end=2), backend, ctx)
    assert out == [
        "+I[a, 1, 1]", "+I[a, 2, 1]",
        "-D[a, 2, 1]", "+I[a, 5, 2]",
        "-D[a, 1, 1]", "+I[a, 6, 2]",
    ]  # fmt: skip


def first_on_watermark(backend, ctx, number=False):
    node = rank(asc=True, number=number, mode=INSERT_ONLY)
    return rank_operator(replace(node, first_on_watermark=True), backend, ctx)


def test_keep_first_on_event_time_waits_for_the_watermark(backend, ctx):
    """ORDER BY rowtime ASC, rn = 1 (Flink's Deduplicate keep-first on event time): nothing
    until the watermark passes; then the row of the smallest time (row 3), once."""
    op = first_on_watermark(backend, ctx)
    assert show(op.process(parse_changelog(ROWS, T)), T) == []
    assert show(op.on_watermark(1 << 62), T) == ["+I[a, 3, 0]"]


def test_keep_first_on_event_time_keeps_the_first_of_equal_times_and_drops_late_rows(backend, ctx):
    """Watermark 1 after ids 1 and 2 (time 1): id 1 is emitted, the first of the tie; id 3
    (time 0) is then late and dropped, ids 5 and 6 come after the key was emitted."""
    op = first_on_watermark(backend, ctx, number=True)
    head, tail = ROWS.split("\n")[:2], ROWS.split("\n")[2:]
    out = op.process(parse_changelog("\n".join(head), T))
    out.extend(op.on_watermark(1))
    out.extend(op.process(parse_changelog("\n".join(tail), T)))
    out.extend(op.on_watermark(1 << 62))
    assert show(out, T + types("BIGINT")) == ["+I[a, 1, 1, 1]"]
    assert op.late_rows == 1


def test_keep_first_on_event_time_waiting_rows_outlive_the_state_ttl(backend, ctx):
    """With table.exec.state.ttl only the marks of emitted keys expire, as in Flink: a row
    that waits longer than the TTL for its watermark is still emitted."""
    now = [0]
    ttl = TtlBackend(backend, ttl_ms=10, clock=lambda: now[0])
    node = replace(rank(asc=True, mode=INSERT_ONLY), first_on_watermark=True)
    op = rank_operator(node, ttl, ctx)
    op.process(parse_changelog("+I[a, 1, 5]", T))
    now[0] = 1000
    assert show(op.on_watermark(5), T) == ["+I[a, 1, 5]"]
    assert show(op.process(parse_changelog("+I[a, 2, 6]", T)), T) == []  # a is done
    now[0] = 2000  # the mark of a expired: a later row of a starts over, as in Flink
    op.process(parse_changelog("+I[a, 3, 7]", T))
    assert show(op.on_watermark(7), T) == ["+I[a, 3, 7]"]
