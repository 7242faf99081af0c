"""SESSION window aggregation: sessions per key merge rows closer than the gap, fire at
``end - 1`` and drop rows whose session has ended. Expected sessions worked out by hand."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import INSERT_ONLY, fields, parse_changelog, scan, show, types

from deltaflow.formats.changelog import Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.plan import AggCall, WindowAggregate, WindowSpec
from deltaflow.processor.runtime.base import MAX_WATERMARK, RuntimeContext, epoch_ms
from deltaflow.processor.runtime.session_window import SessionWindowOperator, window_operator
from deltaflow.state.backend import StateBackend

T = types("STRING", "INT", "TIMESTAMP(3)")
OUT = types("STRING", "BIGINT", "INT", "TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)")
SEC = 1000


def session_node(gap=5 * SEC):
    return WindowAggregate(
        node_id=2, inputs=(scan(1, T, INSERT_ONLY),), fields=fields(OUT), changelog_mode=INSERT_ONLY,
        window=WindowSpec("SESSION", 2, gap, partition_keys=(0,)), group_keys=(0,),
        aggs=(AggCall("COUNT", (), parse_type("BIGINT"), "n"),
              AggCall("MAX", (1,), parse_type("INT"), "m")),
    )  # fmt: skip


def rows(text):
    return parse_changelog(text, T)


def at(text):
    return epoch_ms(rows(f"+I[x, 0, {text}]").rows[0][2])


def test_rows_within_the_gap_merge_and_a_bridging_row_joins_two_sessions(backend, ctx):
    op = window_operator(session_node(), backend, ctx)
    assert isinstance(op, SessionWindowOperator)
    op.process(rows("+I[a, 1, 2024-01-01T00:00:00]\n+I[a, 2, 2024-01-01T00:00:08]"))
    op.process(rows("+I[b, 9, 2024-01-01T00:00:01]\n+I[a, 3, 2024-01-01T00:00:04]"))
    # a: [0, 5) and [8, 13) are bridged by 4 s ([4, 9)) into [0, 13)
    assert show(op.on_watermark(at("2024-01-01T00:00:05.999")), OUT) == [
        "+I[b, 1, 9, 2024-01-01T00:00:01, 2024-01-01T00:00:06, 2024-01-01T00:00:05.999]"
    ]
    assert not op.on_watermark(at("2024-01-01T00:00:12.998"))
    assert show(op.on_watermark(at("2024-01-01T00:00:12.999")), OUT) == [
        "+I[a, 3, 3, 2024-01-01T00:00, 2024-01-01T00:00:13, 2024-01-01T00:00:12.999]"
    ]


def test_late_rows_are_dropped_unless_an_open_session_takes_them(backend, ctx):
    op = window_operator(session_node(), backend, ctx)
    op.process(rows("+I[a, 1, 2024-01-01T00:00:10]"))
    op.on_watermark(at("2024-01-01T00:00:12"))
    # 00:00:06 ends at 00:00:11 (passed) but overlaps the open [10, 15): it joins it
    op.process(rows("+I[a, 4, 2024-01-01T00:00:06]"))
    # 00:00:01 ends at 00:00:06 and touches no open session: late
    op.process(rows("+I[a, 7, 2024-01-01T00:00:01]"))
    assert op.late_rows == 1
    assert show(op.on_watermark(MAX_WATERMARK), OUT) == [
        "+I[a, 2, 4, 2024-01-01T00:00:06, 2024-01-01T00:00:15, 2024-01-01T00:00:14.999]"
    ]


def test_open_sessions_survive_a_restart(backend, ctx):
    op = window_operator(session_node(), backend, ctx)
    op.process(rows("+I[a, 1, 2024-01-01T00:00:00]"))
    backend.commit()
    again = window_operator(session_node(), backend, ctx)
    again.process(rows("+I[a, 5, 2024-01-01T00:00:03]"))
    assert show(again.on_watermark(MAX_WATERMARK), OUT) == [
        "+I[a, 2, 5, 2024-01-01T00:00, 2024-01-01T00:00:08, 2024-01-01T00:00:07.999]"
    ]


def _sessions(events: list[tuple[str, int, int]], gap: int) -> list[tuple]:
    """Each key's sessions: its rows' [ts, ts + gap) intervals, overlapping ones merged."""
    out = []
    for key in sorted({k for k, _, _ in events}):
        mine = sorted((ts, v) for k, v, ts in events if k == key)
        start, end, values = mine[0][0], mine[0][0] + gap, []
        for ts, v in mine:
            if ts >= end:
                out.append((key, len(values), max(values), start, end))
                start, values = ts, []
            end = max(end, ts + gap)
            values.append(v)
        out.append((key, len(values), max(values), start, end))
    return sorted(out)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 9), st.integers(0, 40)), min_size=1, max_size=30),
    st.integers(1, 6),
)  # fmt: skip
def test_sessions_of_rows_in_any_order_and_batches_are_the_merged_intervals(
    tmp_path_factory, events, size
):
    """Rows in any order and batching, the watermark at the end: per key, the sessions
    are the unions of overlapping [ts, ts + gap) (the one-session path and the merging
    path give the same sessions)."""
    gap = 5 * SEC
    timed = [(k, v, ts * SEC) for k, v, ts in events]
    backend = StateBackend(tmp_path_factory.mktemp("state"))
    try:
        op = window_operator(session_node(gap), backend, RuntimeContext())
        for i in range(0, len(timed), size):
            part = timed[i : i + size]
            op.process(rows("\n".join(f"+I[{k}, {v}, {_stamp(ts)}]" for k, v, ts in part)))
        fired = op.on_watermark(MAX_WATERMARK)
        base = epoch_ms(datetime(2024, 1, 1))
        got = sorted(
            (r[0], r[1], r[2], epoch_ms(r[3]) - base, epoch_ms(r[4]) - base) for r in fired.rows
        )
        assert got == _sessions(timed, gap)
    finally:
        backend.close()


def _stamp(ms: int) -> str:
    return (datetime(2024, 1, 1) + timedelta(milliseconds=ms)).isoformat()


SUM_OUT = types(
    "STRING", "BIGINT", "INT", "INT", "BIGINT", "TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)"
)


def sum_node(gap=5 * SEC, mode=INSERT_ONLY):
    """COUNT(*), SUM, AVG and COUNT of a column: merged as accumulators over insert-only input."""
    return WindowAggregate(
        node_id=2, inputs=(scan(1, T, mode),), fields=fields(SUM_OUT), changelog_mode=INSERT_ONLY,
        window=WindowSpec("SESSION", 2, gap, partition_keys=(0,)), group_keys=(0,),
        aggs=(AggCall("COUNT", (), parse_type("BIGINT"), "n"),
              AggCall("SUM", (1,), parse_type("INT"), "s"),
              AggCall("AVG", (1,), parse_type("INT"), "a"),
              AggCall("COUNT", (1,), parse_type("BIGINT"), "c")),
    )  # fmt: skip


def test_sessions_keep_an_accumulator_only_for_merging_aggregates_over_insert_only_input(
    backend, ctx
):
    assert window_operator(sum_node(), backend, ctx).accs is not None
    assert window_operator(session_node(), backend, ctx).accs is None  # MAX keeps the rows
    assert window_operator(sum_node(mode=frozenset({0, 1, 2, 3})), backend, ctx).accs is None


def _sums(events: list[tuple[str, int, int]], gap: int) -> list[tuple]:
    """Each key's sessions as (key, count, sum, avg, start, end), by the definition."""
    out = []
    for key in sorted({k for k, _, _ in events}):
        mine = sorted((ts, v) for k, v, ts in events if k == key)
        start, end, values = mine[0][0], mine[0][0] + gap, []
        for ts, v in mine:
            if ts >= end:
                out.append((key, len(values), sum(values), sum(values) // len(values), start, end))
                start, values = ts, []
            end = max(end, ts + gap)
            values.append(v)
        out.append((key, len(values), sum(values), sum(values) // len(values), start, end))
    return sorted(out)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 9), st.integers(0, 60)), min_size=1, max_size=40),
    st.integers(1, 6),
)  # fmt: skip
def test_session_accumulators_give_the_merged_intervals_sums(tmp_path_factory, events, size):
    """Rows in any order and batching, the watermark at the end: COUNT, SUM and AVG of each
    union of overlapping [ts, ts + gap), the accumulators merged where a row bridges two."""
    gap = 5 * SEC
    timed = [(k, v, ts * SEC) for k, v, ts in events]
    backend = StateBackend(tmp_path_factory.mktemp("state"))
    try:
        op = window_operator(sum_node(gap), backend, RuntimeContext())
        for i in range(0, len(timed), size):
            part = timed[i : i + size]
            op.process(rows("\n".join(f"+I[{k}, {v}, {_stamp(ts)}]" for k, v, ts in part)))
        fired = op.on_watermark(MAX_WATERMARK)
        base = epoch_ms(datetime(2024, 1, 1))
        got = sorted((*r[:4], epoch_ms(r[5]) - base, epoch_ms(r[6]) - base) for r in fired.rows)
        assert got == _sums(timed, gap)
        assert all(r[1] == r[4] for r in fired.rows)  # COUNT(v) of non-null values
    finally:
        backend.close()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 9), st.integers(0, 60)), max_size=8),
            st.one_of(st.none(), st.integers(0, 70)),  # the watermark after the batch (s)
            st.booleans(),  # a checkpoint and a restart after it
        ),
        min_size=1, max_size=8,
    )
)  # fmt: skip
def test_session_accumulators_emit_what_the_session_rows_do(tmp_path_factory, steps):
    """Late rows, firing between batches and restarts: the accumulator path emits exactly
    what folding each session's rows at firing (the rows path) emits."""
    outputs = []
    for keep_rows in (False, True):
        backend = StateBackend(tmp_path_factory.mktemp("state"))
        try:
            op = _sum_operator(backend, keep_rows)
            out, base = [], epoch_ms(datetime(2024, 1, 1))
            for events, mark, restart in steps:
                if events:
                    op.process(
                        rows("\n".join(f"+I[{k}, {v}, {_stamp(ts * SEC)}]" for k, v, ts in events))
                    )
                if mark is not None:
                    out.append(show(op.on_watermark(base + mark * SEC), SUM_OUT))
                if restart:
                    backend.commit()
                    op = _sum_operator(backend, keep_rows)
            out.append(show(op.on_watermark(MAX_WATERMARK), SUM_OUT))
            outputs.append((out, op.late_rows))
        finally:
            backend.close()
    assert outputs[0] == outputs[1]


def _sum_operator(backend, keep_rows: bool):
    op = window_operator(sum_node(), backend, RuntimeContext())
    if keep_rows:
        op.accs = None  # the rows path, folded at firing
    return op


class ExactTimers(SessionWindowOperator):
    """The reference: a fire index entry at every session's present (end, start), moved
    whenever a batch changes them, scanned in its key order at each watermark."""

    def _store(self, key, sessions, before):
        after = {(s[1], s[0]) for s in sessions}
        for end, start in self.bounds.pop(key, set()) - after:
            self.fire.delete((end, *key, start))
        for end, start in after:
            self.fire.put((end, *key, start), 1)
        self.bounds[key] = after
        if sessions:
            self.sessions.put(key, sessions)
        else:
            self.sessions.delete(key)

    def on_watermark(self, watermark):
        if watermark <= self.watermark:
            return Batch()
        self.watermark = watermark
        due = {}
        fired = []
        for fkey, _ in self.fire.scan_prefix(()):
            if fkey[0] - 1 > watermark:
                break
            fired.append(fkey)
            due.setdefault(tuple(fkey[1:-1]), set()).add((fkey[-1], fkey[0]))
        for fkey in fired:
            self.fire.delete(fkey)
        out = Batch()
        for key, stored in zip(list(due), self.sessions.get_many(list(due)), strict=True):
            kept = []
            for session in stored or ():
                if (session[0], session[1]) in due[key]:
                    self._emit(key, session, out)
                else:
                    kept.append(session)
            self.bounds[key] = {(s[1], s[0]) for s in kept}
            if kept:
                self.sessions.put(key, kept)
            else:
                self.sessions.delete(key)
        return out


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 9), st.integers(0, 80)), max_size=10),
            st.one_of(st.none(), st.integers(0, 90)),  # the watermark after the batch (s)
        ),
        min_size=1, max_size=10,
    ),
    st.booleans(),
)  # fmt: skip
def test_session_timers_fire_what_exact_timers_fire_in_the_same_order(
    tmp_path_factory, steps, sums
):
    """A session's timer is set once, when it is made, and moved only when it is reached
    while the session has grown: each watermark emits the same rows in the same order as a
    fire index kept at every session's present end."""
    outputs, out_types = [], SUM_OUT if sums else OUT
    for make in (window_operator, ExactTimers):
        backend = StateBackend(tmp_path_factory.mktemp("state"))
        try:
            node = sum_node() if sums else session_node()
            op = make(node, backend, RuntimeContext())
            op.bounds = {}
            out, base = [], epoch_ms(datetime(2024, 1, 1))
            for events, mark in steps:
                if events:
                    text = "\n".join(f"+I[{k}, {v}, {_stamp(ts * SEC)}]" for k, v, ts in events)
                    op.process(rows(text))
                if mark is not None:
                    out.append(show(op.on_watermark(base + mark * SEC), out_types))
            out.append(show(op.on_watermark(MAX_WATERMARK), out_types))
            outputs.append((out, op.late_rows))
        finally:
            backend.close()
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("make", [session_node, sum_node])
def test_a_session_grown_past_its_timer_fires_at_its_new_end(backend, ctx, make):
    op = window_operator(make(), backend, ctx)
    op.process(rows("+I[a, 1, 2024-01-01T00:00:00]"))  # [0, 5): its timer at 5
    op.process(rows("+I[a, 2, 2024-01-01T00:00:04]"))  # grown to [0, 9) in a later batch
    assert not op.on_watermark(at("2024-01-01T00:00:06"))  # the timer at 5 is reached
    fired = op.on_watermark(at("2024-01-01T00:00:08.999"))
    assert [(r[0], r[1]) for r in fired.rows] == [("a", 2)]
    assert epoch_ms(fired.rows[0][-2]) == at("2024-01-01T00:00:09")
