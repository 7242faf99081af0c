"""DATE_FORMAT with a constant pattern compiled once (issue 19): the same text as the
per-call formatter for every pattern letter, and the texts kept per day stay exact."""

from __future__ import annotations

import datetime as dt

from ex_helpers import call, col, ev, unit
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.nanos import NanoDatetime
from deltaflow.processor.exprs import lib_temporal as lt
from deltaflow.processor.exprs.lib_date_format import DAYS_KEPT, compile_pattern, timestamp_text

LETTERS = ["y", "yy", "yyyy", "M", "MM", "MMM", "MMMM", "d", "dd", "H", "HH", "h", "hh",
           "m", "mm", "s", "ss", "S", "SSS", "SSSSSSSSS", "E", "EEEE", "a", "D", "DDD", "G"]  # fmt: skip
LITERALS = ["-", ":", " ", "'T'", "''", "'o''clock'", "%", "100%d", "/"]

patterns = st.lists(st.sampled_from(LETTERS + LITERALS), min_size=1, max_size=8).map("".join)
stamps = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31))


@settings(max_examples=300, deadline=None)
@given(pattern=patterns, values=st.lists(stamps, min_size=1, max_size=5))
def test_compiled_pattern_gives_the_per_call_text(pattern, values):
    fmt = compile_pattern(pattern)
    for value in values + values:  # the second time from the texts kept per day
        assert fmt(value) == lt.format_pattern(value, pattern)


def test_known_texts_and_the_day_cache_across_times_of_one_day():
    """Flink's texts for the Nexmark q10/q16 patterns; values of one day share a text and
    a day past ``DAYS_KEPT`` other days is still formatted right."""
    day, minute = compile_pattern("yyyy-MM-dd"), compile_pattern("HH:mm")
    at = dt.datetime(2015, 7, 15, 10, 5, 3, 123000)
    assert (day(at), minute(at)) == ("2015-07-15", "10:05")
    assert day(at.replace(hour=23, minute=59)) == "2015-07-15"
    assert minute(at.replace(hour=23, minute=59)) == "23:59"
    start = dt.datetime(2000, 1, 1, 12)
    for n in range(DAYS_KEPT + 10):
        value = start + dt.timedelta(days=n, hours=n % 7)
        assert day(value) == value.strftime("%Y-%m-%d")
    assert compile_pattern("'at' h a, EEEE")(at) == "at 10 AM, Wednesday"


@settings(max_examples=300, deadline=None)
@given(value=stamps, precision=st.integers(0, 9), nanos=st.integers(0, 999))
def test_cast_timestamp_to_string_gives_the_strftime_text(value, precision, nanos):
    """CAST(TIMESTAMP(p) AS STRING): the same text as ``format_timestamp`` (years before
    1000 included), with and without nanoseconds."""
    text = timestamp_text(precision)
    assert text(value) == lt.format_timestamp(value, precision)
    nano = NanoDatetime(*value.timetuple()[:6], value.microsecond, nanos=nanos)
    assert text(nano) == lt.format_timestamp(nano, precision)
    assert (
        timestamp_text(3)(dt.datetime(2015, 7, 15, 10, 5, 3, 123456)) == "2015-07-15 10:05:03.123"
    )


@settings(max_examples=200, deadline=None)
@given(value=stamps, name=st.sampled_from(
    ["YEAR", "MONTH", "DAY", "DAYOFMONTH", "HOUR", "MINUTE", "SECOND", "QUARTER"]))  # fmt: skip
def test_extract_of_a_timestamp_reads_the_field_as_extract_does(value, name):
    """EXTRACT of a TIMESTAMP and of a TIMESTAMP_LTZ (in a session zone) read the field in
    place: the numbers ``lib_temporal.extract`` gives."""
    assert ev(call("EXTRACT", unit(name), col(0, "TIMESTAMP(3)")), (value,)) == lt.extract(
        name, value
    )
    aware = value.replace(tzinfo=dt.UTC)
    local = lt.to_local(aware, lt.zone("Asia/Kolkata"))
    got = ev(call("EXTRACT", unit(name), col(0, "TIMESTAMP_LTZ(3)")), (aware,), "Asia/Kolkata")
    assert got == lt.extract(name, local)
