"""A scan's watermark per batch (``scan_watermark``) against its definition, row by row.

The definition: per run of a partition's rows, the largest non-NULL value the WATERMARK
expression gives on a row, in epoch ms (None when there is none); an expression that
fails on a row fails the batch with that row's error. The batch path (the rowtime per
row, ``- INTERVAL`` once on the run's extremes) must give exactly that, NULL rowtimes,
overflowing steps and expressions that are not a step over the rowtime included.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.types import DataType, parse_type
from deltaflow.processor.exprs.compile import EvalContext, compile_scalar
from deltaflow.processor.exprs.errors import EvalError
from deltaflow.processor.exprs.functions import infer_call, literal
from deltaflow.processor.exprs.nodes import InputRef
from deltaflow.processor.runtime.base import epoch_ms
from deltaflow.processor.runtime.scan_watermark import ScanWatermark, split_monotone

TS = InputRef(parse_type("TIMESTAMP(3)"), 0)
TS2 = InputRef(parse_type("TIMESTAMP(3)"), 1)
FLAG = InputRef(parse_type("BOOLEAN"), 2)
LTZ = InputRef(parse_type("TIMESTAMP_LTZ(3)"), 3)
DAY_MS = 86_400_000


def day_time(ms: int):
    return literal(ms, DataType("INTERVAL_DAY_TIME"))


def minus(value, ms: int):
    return infer_call("-", [value, day_time(ms)])


def plus(value, ms: int, interval_first: bool = False):
    operands = [day_time(ms), value] if interval_first else [value, day_time(ms)]
    return infer_call("+", operands)


EXPRESSIONS = {
    "ts": TS,
    "ts - 4 s": minus(TS, 4000),
    "ts + 3 days": plus(TS, 3 * DAY_MS),
    "2 h + ts": plus(TS, 7_200_000, interval_first=True),
    "ts - 4 s - 1 ms": minus(minus(TS, 4000), 1),
    "ts - -5 s": minus(TS, -5000),
    "ts - 1000 years": minus(TS, 1000 * 365 * DAY_MS),
    "ts + 1000 years": plus(TS, 1000 * 365 * DAY_MS),
    "ltz - 4 s": minus(LTZ, 4000),
    "CASE flag ts ts2 - 1 s": minus(infer_call("CASE", [FLAG, TS, TS2]), 1000),
    "ts - 1 month": infer_call("-", [TS, literal(1, DataType("INTERVAL_YEAR_MONTH"))]),
    "CASE (ts - 1 s) ts2": infer_call("CASE", [FLAG, minus(TS, 1000), TS2]),
}

EDGES = [dt.datetime.min, dt.datetime.max, dt.datetime(1, 1, 1, 0, 0, 3), dt.datetime(9999, 12, 31)]
timestamps = st.one_of(
    st.none(),
    st.sampled_from(EDGES),
    st.datetimes(min_value=dt.datetime(2015, 7, 15), max_value=dt.datetime(2015, 7, 16)),
    st.datetimes(),
)
rows = st.lists(
    st.tuples(timestamps, timestamps, st.one_of(st.none(), st.booleans())).map(
        lambda r: (*r, None if r[0] is None else r[0].replace(tzinfo=dt.UTC))
    ),
    max_size=30,
)


def definition(expr, batch: list[tuple], counts: list[int]):
    """Row by row: each row's value, the largest non-NULL per run (or the row's error)."""
    fn = compile_scalar(expr, EvalContext())
    try:
        stamps = [fn(r) for r in batch]
    except EvalError as err:
        return ("error", str(err))
    out, start = [], 0
    for count in counts:
        present = [v for v in stamps[start : start + count] if v is not None]
        out.append(epoch_ms(max(present)) if present else None)
        start += count
    return out


def batched(expr, batch: list[tuple], counts: list[int]):
    try:
        return ScanWatermark(expr, EvalContext())(batch, counts)
    except EvalError as err:
        return ("error", str(err))


@st.composite
def runs(draw, batch: list[tuple]) -> list[int]:
    counts, left = [], len(batch)
    while left:
        counts.append(draw(st.integers(1, left)))
        left -= counts[-1]
    return counts or [0]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(EXPRESSIONS)), st.data())
def test_the_batch_watermark_is_the_row_by_row_one(name, data):
    batch = data.draw(rows)
    counts = data.draw(runs(batch))
    expr = EXPRESSIONS[name]
    assert batched(expr, batch, counts) == definition(expr, batch, counts)


def test_a_rowtime_minus_an_interval_reads_the_column_and_steps_once():
    inner, outer = split_monotone(minus(minus(TS, 4000), 1))
    assert inner == TS
    fn = compile_scalar(outer, EvalContext())
    assert fn((dt.datetime(2015, 7, 15, 0, 0, 5),)) == dt.datetime(2015, 7, 15, 0, 0, 0, 999000)


def test_a_year_month_step_or_a_case_is_evaluated_whole_per_row():
    for name in ("ts - 1 month", "CASE (ts - 1 s) ts2"):
        inner, outer = split_monotone(EXPRESSIONS[name])
        assert inner == EXPRESSIONS[name]
        assert isinstance(outer, InputRef)


def test_a_batch_of_nulls_gives_no_watermark_and_nulls_do_not_count():
    late, early = dt.datetime(2015, 7, 15, 0, 0, 9), dt.datetime(2015, 7, 15, 0, 0, 1)
    batch = [(None, None, None, None), (late, None, None, None), (None,) * 4, (early,) * 4]
    marks = ScanWatermark(minus(TS, 4000), EvalContext())(batch, [1, 2, 1])
    assert marks == [None, epoch_ms(late) - 4000, epoch_ms(early) - 4000]


def test_a_row_whose_step_overflows_fails_with_that_rows_error():
    batch = [(dt.datetime(2015, 7, 15),) * 4, (dt.datetime(1, 1, 1, 0, 0, 1),) * 4]
    with pytest.raises(EvalError, match=r"datetime\.datetime\(1, 1, 1, 0, 0, 1\)"):
        ScanWatermark(minus(TS, 4000), EvalContext())(batch, [2])
