"""WindowJoin: the rows of one window join when the watermark reaches its end - 1; outer
sides are padded; rows of a joined window are late. Expected rows worked out by hand."""

from __future__ import annotations

import datetime as dt
import random

from rt_helpers import INSERT_ONLY, fields, parse_changelog, scan, show, types

from deltaflow.formats.changelog import INSERT, Batch
from deltaflow.processor.plan import WindowJoin
from deltaflow.processor.runtime.base import epoch_ms
from deltaflow.processor.runtime.graph import RuntimeContext
from deltaflow.processor.runtime.window_join import WindowJoinOperator
from deltaflow.state.backend import StateBackend

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


def test_windows_held_across_a_commit_and_a_reopen_join_once_each_in_window_order(tmp_path):
    """Rows of seven 10 s windows come in batches of 6 (row i in window i // 10 or the
    next), the watermark after the batch ending at row j is 0.7 j s, so no row is late; the
    state is committed after each batch and reopened in the middle (the windows stored
    before it must still join). Every window joins once, all of it, in window order: the
    pairs are the definition's (equal keys, same window)."""
    rnd, base = random.Random(5), dt.datetime(2024, 1, 1)
    sent = []
    for i in range(60):
        w = i // 10 + rnd.randrange(2)
        bounds = (base + dt.timedelta(seconds=10 * w), base + dt.timedelta(seconds=10 * w + 10))
        sent.append((rnd.randrange(2), (rnd.randrange(3), *bounds, i)))
    backend = StateBackend(tmp_path / "wj")
    op = WindowJoinOperator(node("INNER"), backend, RuntimeContext())
    out, start = [], epoch_ms(base)
    for i in range(0, 60, 6):
        for port in (0, 1):
            mine = [row for p, row in sent[i : i + 6] if p == port]
            op.process(Batch([INSERT] * len(mine), mine), port)
        out += op.on_watermark(start + 700 * (i + 6) - 1).rows
        backend.commit({"at": i})
        if i == 24:
            backend.close()
            backend = StateBackend(tmp_path / "wj")
            op = WindowJoinOperator(node("INNER"), backend, RuntimeContext())
    out += op.on_watermark(start + 10**6).rows
    backend.close()
    assert op.late_rows == 0
    got = [(epoch_ms(r[2]), r[3], r[7]) for r in out]
    lefts = [row for p, row in sent if p == 0]
    rights = [row for p, row in sent if p == 1]
    expected = [
        (epoch_ms(a[2]), a[3], b[3])
        for a in lefts for b in rights if a[0] == b[0] and a[2] == b[2]
    ]  # fmt: skip
    assert sorted(got) == sorted(expected) and len(got) > 20
    ends = [end for end, _, _ in got]
    assert ends == sorted(ends)  # window by window, in order
