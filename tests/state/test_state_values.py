"""State value encoding: every value shape round-trips with its exact types."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaflow.state.values import decode_value, encode_value

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=10),
    st.binary(max_size=10),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.dates(),
    st.times(),
    st.datetimes(),
    st.datetimes(timezones=st.just(UTC)),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=4), inner, max_size=3),
    ),
    max_leaves=12,
)


def same(a: object, b: object) -> bool:
    """Equal, with equal types all the way down (1.50 is not 1.5, a tuple is not a list)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, Decimal):
        return a.as_tuple() == b.as_tuple()
    if isinstance(a, datetime):
        return a == b and a.utcoffset() == b.utcoffset()
    return a == b


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES)
def test_round_trip_keeps_types(value: object) -> None:
    assert same(decode_value(encode_value(value)), value)


def test_row_with_decimal_and_temporal_values() -> None:
    row = (
        7,
        "Alice",
        Decimal("12.50"),
        datetime(2024, 1, 2, 3, 4, 5, 6),
        datetime(2024, 1, 2, tzinfo=UTC),
        date(2024, 2, 29),
        time(23, 59, 59, 1),
        True,
        None,
        b"\x00",
        1.5,
    )
    back = decode_value(encode_value(row))
    assert same(back, row)
    assert encode_value(row)[:1] == b"R"


def test_flat_accumulator_list_stays_a_list() -> None:
    acc = [3, Decimal("10.00"), None]
    assert same(decode_value(encode_value(acc)), acc)
    assert encode_value(acc)[:1] == b"L"


def test_nested_and_big_values() -> None:
    for value in ([((1, "a"), 1, 0)], {"k": (1, [2])}, (2**80, 1), 5, "s", None):
        assert same(decode_value(encode_value(value)), value)


def test_offset_timezone_keeps_the_instant() -> None:
    plus_two = datetime(2024, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    back = decode_value(encode_value((plus_two,)))[0]
    assert back == plus_two and back.utcoffset() == timedelta(hours=2)
