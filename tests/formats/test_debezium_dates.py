"""DATE values of debezium-json through the memo of date texts (debezium_values._DATES):
the same date as the text's own reading every time, a refused text refused every time,
days since the epoch as before, across the memo starting over."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats import debezium_values as dv

TEXTS = st.one_of(
    st.dates().map(dt.date.isoformat),
    st.dates(dt.date(2024, 1, 1), dt.date(2024, 2, 29)).map(dt.date.isoformat),  # meet again
    st.from_regex(r"\A\d{4}-\d\d-\d\d\Z"),  # in shape, maybe not a day (2021-02-30)
    st.text(max_size=12),
)


def reading(v):
    """The date ``v`` stands for, or the error class: read without the memo."""
    if type(v) is int:
        return dv.EPOCH_DATE + dt.timedelta(days=v)
    try:
        if not dv._DATE_TEXT.fullmatch(v):
            return ValueError
        return dt.date.fromisoformat(v)
    except ValueError:
        return ValueError


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.one_of(TEXTS, st.integers(-700_000, 2_000_000)), max_size=30))
def test_each_value_reads_as_its_own_reading_again_and_again(values):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dv, "_KEEP_DATES", 5)  # starts over often
        mp.setattr(dv, "_DATES", {})
        for v in values + values:
            want = reading(v)
            try:
                got = dv._to_date(v)
            except (ValueError, OverflowError, TypeError):
                got = ValueError
            if want is not ValueError:
                assert type(got) is dt.date
            assert got == want
            assert len(dv._DATES) <= 5
