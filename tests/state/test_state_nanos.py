"""TIMESTAMP(7..9) values: NanoDatetime counts its nanoseconds in equality, order,
hashing and state keys and values, and is made only when there are some."""

from __future__ import annotations

import datetime as dt
import pickle

from hypothesis import given
from hypothesis import strategies as st

from deltaflow.formats.nanos import NanoDatetime, nano_fraction, nanos_of, truncate, with_nanos
from deltaflow.state.keys import decode_key, encode_key
from deltaflow.state.values import TypedValues, decode_value, encode_value

BASE = dt.datetime(2024, 2, 29, 23, 59, 59, 999999)


def test_no_nanoseconds_is_a_plain_datetime() -> None:
    assert type(with_nanos(BASE, 0)) is dt.datetime
    value = with_nanos(BASE, 1)
    assert type(value) is NanoDatetime
    assert nano_fraction(value) == 999_999_001
    assert (value.year, value.microsecond, nanos_of(value), nanos_of(BASE)) == (2024, 999999, 1, 0)


def test_equality_order_and_hash_count_the_nanoseconds() -> None:
    a, b = with_nanos(BASE, 1), with_nanos(BASE, 2)
    assert a != BASE and BASE != a and not (a == BASE)
    assert BASE < a < b and b > a > BASE and BASE <= a and a >= BASE
    assert a < BASE + dt.timedelta(microseconds=1)
    assert sorted([b, BASE, a]) == [BASE, a, b]
    assert max([a, BASE, b]) is b
    assert len({a, b, BASE, with_nanos(BASE, 1)}) == 3
    assert with_nanos(BASE, 1) == a and hash(with_nanos(BASE, 1)) == hash(a)


def test_arithmetic_and_conversions_keep_the_nanoseconds() -> None:
    a = with_nanos(BASE, 7)
    assert (a + dt.timedelta(days=1)) == with_nanos(dt.datetime(2024, 3, 1, 23, 59, 59, 999999), 7)
    assert (a - dt.timedelta(seconds=1)).nanos == 7
    aware = with_nanos(BASE.replace(tzinfo=dt.UTC), 7)
    assert aware.replace(tzinfo=None) == a
    assert aware.astimezone(dt.timezone(dt.timedelta(hours=2))).nanos == 7
    assert type(a.replace(microsecond=0)) is dt.datetime  # a new fraction: truncation
    assert a.isoformat() == "2024-02-29T23:59:59.999999007"
    assert pickle.loads(pickle.dumps(a, 5)) == a


def test_truncate_to_a_precision() -> None:
    a = with_nanos(BASE, 789)
    assert truncate(a, 9) is a
    assert truncate(a, 8) == with_nanos(BASE, 780)
    assert truncate(a, 7) == with_nanos(BASE, 700)
    assert type(truncate(a, 6)) is dt.datetime and truncate(a, 6) == BASE
    assert truncate(a, 3) == BASE.replace(microsecond=999000)


moments = st.builds(
    with_nanos,
    st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)),
    st.integers(0, 999),
)


@given(st.lists(st.tuples(moments, st.integers(-3, 3)), min_size=2, max_size=8))
def test_state_keys_keep_the_order_and_decode_to_the_same_value(keys: list[tuple]) -> None:
    encoded = sorted(keys, key=encode_key)
    assert [decode_key(encode_key(k)) for k in encoded] == encoded
    assert encoded == sorted(keys)
    for k in keys:
        assert type(decode_key(encode_key(k))[0]) is type(k[0])


@given(moments, moments)
def test_a_key_prefix_is_a_byte_prefix(a: dt.datetime, b: dt.datetime) -> None:
    assert encode_key((a, b)).startswith(encode_key((a,)))
    assert decode_key(encode_key(((a, 1), b))) == ((a, 1), b)


def test_state_values_keep_the_nanoseconds() -> None:
    row = (1, with_nanos(BASE, 5), "x", BASE)
    assert decode_value(encode_value(row)) == row
    assert type(decode_value(encode_value(row))[1]) is NanoDatetime
    typed = TypedValues(list[tuple[tuple[int, dt.datetime], int, int]])
    entries = [((1, with_nanos(BASE, 5)), 1, 0), ((2, BASE), 1, 0)]
    assert typed.decode(typed.encode(entries)) == entries
    assert typed.encode_many([entries])[0] == typed.encode(entries)


def test_text_of_a_timestamp_with_nanoseconds() -> None:
    from deltaflow.formats.printing import format_instant, format_timestamp
    from deltaflow.processor.exprs.lib_temporal import format_timestamp as cast_text
    from deltaflow.processor.exprs.lib_temporal import truncate_micros

    a = with_nanos(BASE, 7)
    assert format_timestamp(a) == "2024-02-29T23:59:59.999999007"  # LocalDateTime.toString
    assert format_instant(with_nanos(BASE.replace(tzinfo=dt.UTC), 7)).endswith(".999999007Z")
    assert cast_text(a, 9) == "2024-02-29 23:59:59.999999007"  # CAST(.. AS STRING)
    assert cast_text(a, 7) == "2024-02-29 23:59:59.9999990"
    assert truncate_micros(a, 6) == BASE and type(truncate_micros(a, 6)) is dt.datetime
    assert truncate_micros(a, 9) is a
