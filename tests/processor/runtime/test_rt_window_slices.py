"""HOP and CUMULATE windows kept per slice (window_slices) against the same operator keeping each
window (the path every other window takes): the same rows in the same order, through
late rows, retractions, watermarks that fire several windows, commits, discards and a
reopen of the state."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import INSERT_ONLY, fields, scan, types

from deltaflow.formats.changelog import DELETE, INSERT, Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.plan import AggCall, WindowAggregate, WindowSpec
from deltaflow.processor.runtime import window as window_module
from deltaflow.processor.runtime.base import RuntimeContext, epoch_ms
from deltaflow.processor.runtime.window import WindowAggOperator
from deltaflow.state.backend import StateBackend

IN = types("INT", "INT", "DECIMAL(10, 2)", "BOOLEAN", "TIMESTAMP(3)")
BIGINT, INT = parse_type("BIGINT"), parse_type("INT")
DEC_SUM, DEC_AVG = parse_type("DECIMAL(38, 2)"), parse_type("DECIMAL(38, 6)")
ADDING = (
    AggCall("COUNT", (), BIGINT, "n"),
    AggCall("COUNT", (1,), BIGINT, "c"),
    AggCall("SUM", (1,), INT, "s"),
    AggCall("SUM", (2,), DEC_SUM, "d", filter_arg=3),
    AggCall("AVG", (2,), DEC_AVG, "a"),
    AggCall("COUNT", (), BIGINT, "f", filter_arg=3),
)
START = dt.datetime(2024, 1, 1)


def node(aggs=ADDING, spec=None, t=IN):
    spec = spec or WindowSpec("HOP", 4, 4_000, slide_ms=1_000)
    out = types("INT", *(str(a.type) for a in aggs), "TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)")
    return WindowAggregate(
        node_id=2, inputs=(scan(1, t),), fields=fields(out), changelog_mode=INSERT_ONLY,
        window=spec, group_keys=(0,), aggs=aggs,
    )  # fmt: skip


def decimal(cents: int):
    from decimal import Decimal

    return Decimal(cents).scaleb(-2)


def steps():
    """Batches of rows (key, int or NULL, cents or NULL, flag, ms after START; some deletes
    of rows sent before), watermarks, commits, discards and reopens, in any order."""
    row = st.tuples(
        st.integers(0, 3),
        st.one_of(st.none(), st.integers(-5, 5)),
        st.one_of(st.none(), st.integers(-500, 500)),
        st.booleans(),
        st.integers(0, 20_000),
    )
    batch = st.tuples(st.just("batch"), st.lists(st.tuples(st.booleans(), row), max_size=12))
    # watermarks anywhere, and on a window's last millisecond (end - 1) or its end
    at = st.one_of(st.integers(-2_000, 22_000), st.integers(-2, 22).map(lambda k: k * 1_000 - 1),
                   st.integers(-2, 22).map(lambda k: k * 1_000))  # fmt: skip
    mark = st.tuples(st.just("watermark"), at)
    other = st.tuples(st.sampled_from(["commit", "discard", "reopen"]), st.just(None))
    return st.lists(st.one_of(batch, batch, mark, other), max_size=25)


def run(tmp_path, plan, sliced: bool, aggs=ADDING, spec=None) -> list[tuple]:
    """The rows the operator fires over ``plan``, the bounded input's end included."""
    backend = StateBackend(tmp_path)
    make = lambda: WindowAggOperator(node(aggs, spec), backend, RuntimeContext())  # noqa: E731
    op = make()
    assert (op.sliced is not None) == sliced
    fired: list[tuple] = []
    sent: list[tuple] = []
    base = epoch_ms(START)
    for what, arg in plan:
        if what == "batch":
            kinds, rows = [], []
            for retract, (k, i, cents, flag, at) in arg:
                if retract and sent:
                    kinds.append(DELETE)
                    rows.append(sent.pop(0))
                    continue
                r = (k, i, None if cents is None else decimal(cents), flag,
                     START + dt.timedelta(milliseconds=at))  # fmt: skip
                kinds.append(INSERT)
                rows.append(r)
                sent.append(r)
            fired += op.process(Batch(kinds, rows)).rows
        elif what == "watermark":
            fired += op.on_watermark(base + arg).rows
            if op.sliced is not None and op.sliced.slices is not None:  # none kept past its use
                assert all(s[1] + op.spec.size_ms - 1 > op.watermark for s in op.sliced.slices)
        elif what == "commit":
            backend.commit({})
        elif what == "discard":
            backend.discard()
            op = make()
        else:
            backend.commit({})
            backend.close()
            backend = StateBackend(tmp_path)
            op = make()
    fired += op.on_watermark(base + 1_000_000).rows
    left = op.sliced.state if op.sliced is not None else op.state
    assert next(iter(left.scan_prefix(())), None) is None  # every window fired, forgotten
    backend.close()
    return fired


SLICED = [
    WindowSpec("HOP", 4, 4_000, slide_ms=1_000),
    WindowSpec("HOP", 4, 6_000, slide_ms=2_000, offset_ms=500),
    WindowSpec("CUMULATE", 4, 4_000, step_ms=1_000),
    WindowSpec("CUMULATE", 4, 6_000, step_ms=2_000, offset_ms=1_000),
]


@pytest.mark.parametrize("spec", SLICED, ids=["hop", "hop-offset", "cumulate", "cumulate-offset"])
@settings(max_examples=60, deadline=None)
@given(plan=steps())
def test_slices_fire_what_windows_fire(tmp_path_factory, spec, plan):
    sliced = run(tmp_path_factory.mktemp("sliced"), plan, True, spec=spec)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(window_module, "can_slice", lambda *_: False)
        kept = run(tmp_path_factory.mktemp("windows"), plan, False, spec=spec)
    assert sliced == kept


def test_a_cumulate_window_fires_at_every_step_without_new_rows(tmp_path):
    """Rows in the first step only: every step's window to the last holds them, fired one
    watermark at a time (the running total alone, no slice left, makes them due)."""
    spec = WindowSpec("CUMULATE", 4, 4_000, step_ms=1_000)
    plan = [("batch", [(False, (1, 1, 100, True, 200)), (False, (2, 1, 100, True, 300))])]
    plan += [("watermark", end - 1) for end in (1_000, 2_000, 3_000)]
    plan += [("commit", None), ("reopen", None), ("watermark", 3_999)]
    fired = run(tmp_path, plan, True, spec=spec)
    got = [(r[0], r[1], epoch_ms(r[-2]) - epoch_ms(START)) for r in fired]
    assert got == [(k, 1, end) for end in (1_000, 2_000, 3_000, 4_000) for k in (1, 2)]


def test_a_watermark_on_a_windows_last_millisecond_fires_it_once(tmp_path):
    """Windows end every second; a watermark at 2,999 ms fires the window ending at 3 s,
    and the next watermark does not fire it again (its later slices are still kept)."""
    plan = [
        ("batch", [(False, (1, 1, 100, True, 500)), (False, (1, 2, 200, False, 2_500))]),
        ("watermark", 2_999),
        ("batch", [(False, (1, 3, 300, True, 3_200))]),
        ("watermark", 4_999),
    ]
    fired = run(tmp_path / "s", plan, True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(window_module, "can_slice", lambda *_: False)
        assert fired == run(tmp_path / "w", plan, False)
    ends = [epoch_ms(r[-2]) - epoch_ms(START) for r in fired]
    assert ends == sorted(set(ends)) == [1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000]


@pytest.mark.parametrize(
    ("aggs", "spec", "t"),
    [
        ((AggCall("MAX", (1,), INT, "m"),), None, IN),  # MAX does not add up
        ((AggCall("COUNT", (1,), BIGINT, "c", distinct=True),), None, IN),  # nor DISTINCT
        # a float sum depends on how its values are grouped
        ((AggCall("SUM", (1,), parse_type("DOUBLE"), "s"),), None,
         types("INT", "DOUBLE", "DECIMAL(10, 2)", "BOOLEAN", "TIMESTAMP(3)")),
        (ADDING, WindowSpec("HOP", 4, 3_500, slide_ms=1_000), IN),  # not whole slides
        (ADDING, WindowSpec("TUMBLE", 4, 4_000), IN),
        (ADDING, WindowSpec("CUMULATE", 4, 3_500, step_ms=1_000), IN),  # not whole steps
    ],
)  # fmt: skip
def test_other_windows_and_aggregates_are_kept_per_window(tmp_path, aggs, spec, t):
    op = WindowAggOperator(node(aggs, spec, t), StateBackend(tmp_path), RuntimeContext())
    assert op.sliced is None


def test_a_state_directory_with_windows_goes_on_with_windows(tmp_path):
    """Window state written without slices (an older deltaflow) is fired as it was kept:
    the reopened operator keeps windows, and fires the rows folded before and after."""
    plan_rows = [(False, (1, 2, 300, True, 1_500)), (False, (1, 3, 100, False, 2_500))]
    backend = StateBackend(tmp_path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(window_module, "can_slice", lambda *_: False)
        old = WindowAggOperator(node(), backend, RuntimeContext())
    rows = [(k, i, decimal(c), f, START + dt.timedelta(milliseconds=at))
            for _, (k, i, c, f, at) in plan_rows]  # fmt: skip
    old.process(Batch([INSERT], rows[:1]))
    backend.commit({})
    again = WindowAggOperator(node(), backend, RuntimeContext())
    assert again.sliced is None
    again.process(Batch([INSERT], rows[1:]))
    fired = again.on_watermark(epoch_ms(START) + 1_000_000).rows
    backend.close()
    # [-2 s, 2 s) and [-1 s, 3 s) ... : row 1 is in windows ending 2..5 s, row 2 in 3..6 s
    counts = {epoch_ms(r[-2]) - epoch_ms(START): r[1] for r in fired}
    assert counts == {2_000: 1, 3_000: 2, 4_000: 2, 5_000: 2, 6_000: 1}


def test_the_bench_fires_the_same_rows_kept_either_way(capsys):
    """``bench.windows`` at a small size: for each of its shapes (HOP of 5 and of 12
    slices, CUMULATE of 60 and of 24 steps) the rows fired per slice are the ones fired per
    window (it exits 1 otherwise), over hundreds of watermarks and a commit every 20 batches."""
    from bench import windows

    assert windows.main(["--rows", "30000", "--keys", "50", "--repeat", "1"]) == 0
    table = capsys.readouterr().out
    assert table.count("| per slice |") == table.count("| per window |") == len(windows.SHAPES)
