"""The order-preserving key encoding: byte order is tuple order, and it round-trips."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaflow.state.keys import decode_key, encode_key

# One strategy per column type; tuples in a test share the types position by position.
SCALARS = {
    "int": st.integers(min_value=-(2**80), max_value=2**80),
    "small_int": st.integers(min_value=-300, max_value=300),
    "float": st.floats(allow_nan=False),
    "str": st.text(max_size=8),
    "bytes": st.binary(max_size=8),
    "bool": st.booleans(),
    "decimal": st.decimals(allow_nan=False, allow_infinity=False, places=2),
    "date": st.dates(),
    "time": st.times(),
    "datetime": st.datetimes(),
    "datetime_utc": st.datetimes(timezones=st.just(UTC)),
    # ROW<a INT, b STRING> and ARRAY<INT> columns, NULLs inside
    "row": st.tuples(
        st.one_of(st.none(), st.integers(-300, 300)), st.one_of(st.none(), st.text(max_size=4))
    ),
    "array": st.lists(st.one_of(st.none(), st.integers(-300, 300)), max_size=4),
}


def nullable(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.none(), strategy)


@st.composite
def same_typed_pair(draw: st.DrawFn) -> tuple[tuple, tuple]:
    kinds = draw(st.lists(st.sampled_from(sorted(SCALARS)), min_size=1, max_size=4))
    a = tuple(draw(nullable(SCALARS[k])) for k in kinds)
    b = tuple(draw(nullable(SCALARS[k])) for k in kinds)
    return a, b


def null_first(key: tuple | list) -> tuple:
    """Python tuple order with NULL before every value (SQL NULLS FIRST), nested too."""
    return tuple(
        (False, 0) if v is None else (True, null_first(v) if isinstance(v, (tuple, list)) else v)
        for v in key
    )


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(same_typed_pair())
def test_byte_order_is_tuple_order(pair: tuple[tuple, tuple]) -> None:
    a, b = pair
    ea, eb = encode_key(a), encode_key(b)
    assert (ea < eb) == (null_first(a) < null_first(b))
    assert (ea == eb) == (a == b)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(same_typed_pair())
def test_round_trip(pair: tuple[tuple, tuple]) -> None:
    a, _ = pair
    decoded = decode_key(encode_key(a))
    assert decoded == a
    assert [type(v) for v in decoded] == [type(v) for v in a]
    for value, back in zip(a, decoded, strict=True):
        if isinstance(value, Decimal):
            assert back.as_tuple().exponent == value.as_tuple().exponent
        if isinstance(value, datetime):
            assert back.tzinfo == value.tzinfo


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(same_typed_pair(), st.integers(min_value=0, max_value=4))
def test_prefix_of_tuple_is_prefix_of_bytes(pair: tuple[tuple, tuple], cut: int) -> None:
    a, _ = pair
    assert encode_key(a).startswith(encode_key(a[:cut]))


def test_string_prefix_does_not_match_longer_string() -> None:
    assert not encode_key(("ab", 1)).startswith(encode_key(("a",)))
    assert encode_key(("a\x00",)) > encode_key(("a", 5))


def test_integers_of_any_size_and_sign() -> None:
    values = [-(2**200), -(2**64), -(2**63), -256, -255, -1, 0, 1, 255, 256, 2**63, 2**64, 2**200]
    encoded = [encode_key((v,)) for v in values]
    assert encoded == sorted(encoded)
    assert [decode_key(e)[0] for e in encoded] == values


def test_float_specials() -> None:
    values = [float("-inf"), -1e308, -1.0, -5e-324, 0.0, 5e-324, 1.0, float("inf")]
    encoded = [encode_key((v,)) for v in values]
    assert encoded == sorted(encoded)
    assert encode_key((-0.0,)) == encode_key((0.0,))
    assert encode_key((float("nan"),)) > encode_key((float("inf"),))


def test_decimals_order_by_value_and_keep_scale() -> None:
    values = [
        Decimal("-100.5"),
        Decimal("-2"),
        Decimal("-1.51"),
        Decimal("-1.5"),
        Decimal("-0.001"),
        Decimal("0.00"),
        Decimal("0.001"),
        Decimal("1.5"),
        Decimal("1.51"),
        Decimal("2"),
        Decimal("100.5"),
        Decimal("12345678901234567890123456789012345.5"),
    ]
    encoded = [encode_key((v,)) for v in values]
    assert encoded == sorted(encoded)
    assert [str(decode_key(e)[0]) for e in encoded] == [str(v) for v in values]


def test_temporal_values() -> None:
    key = (
        date(2024, 2, 29),
        time(23, 59, 59, 999999),
        datetime(1, 1, 1),
        datetime(9999, 12, 31, 23, 59),
    )
    assert decode_key(encode_key(key)) == key
    aware = datetime(2024, 1, 1, 12, tzinfo=UTC)
    assert decode_key(encode_key((aware,))) == (aware,)


def test_null_sorts_first() -> None:
    assert encode_key((None,)) < encode_key((-(2**100),)) < encode_key((0,))
    assert encode_key((None,)) < encode_key(("",))


def test_nested_row_and_array_keys() -> None:
    key = ((1, "a\x00", None), [None, 2], ())
    assert decode_key(encode_key(key)) == key
    assert type(decode_key(encode_key(key))[1]) is list
    assert (
        encode_key(((1,),)) < encode_key(((1, None),)) < encode_key(((1, 0),)) < encode_key(((2,),))
    )


def test_unsupported_type_is_refused() -> None:
    with pytest.raises(TypeError, match="cannot hold a dict"):
        encode_key(({1: 2},))
