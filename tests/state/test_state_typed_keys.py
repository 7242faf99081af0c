"""Compiled key encoders: the same bytes as ``encode_key``, whatever the values."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.types import parse_type
from deltaflow.state.keys import encode_key
from deltaflow.state.typed_keys import encode_sorted_ints, key_encoder

INT_KEY = [parse_type("INT"), parse_type("BIGINT")]
MIXED_KEY = [parse_type("STRING"), parse_type("BIGINT"), parse_type("DECIMAL(10, 2)")]

ints = st.one_of(st.none(), st.integers(min_value=-(2**70), max_value=2**70))
texts = st.one_of(st.none(), st.text(max_size=6))
decimals = st.one_of(st.none(), st.decimals(allow_nan=False, allow_infinity=False, places=2))


@settings(max_examples=300, deadline=None)
@given(st.tuples(ints, ints))
def test_integer_key_bytes_are_encode_keys(key: tuple) -> None:
    assert key_encoder(INT_KEY)(key) == encode_key(key)


@settings(max_examples=300, deadline=None)
@given(st.tuples(texts, ints, decimals))
def test_mixed_key_bytes_are_encode_keys(key: tuple) -> None:
    assert key_encoder(MIXED_KEY)(key) == encode_key(key)


def test_values_of_other_types_than_declared_keep_encode_keys_bytes() -> None:
    # a bool is an int to Python but has a tag of its own; bytes in a STRING column
    encode = key_encoder([parse_type("INT"), parse_type("STRING")])
    for key in [(True, b"a\x00"), (False, "x"), (Decimal("1.50"), None), (0, "a\x00b")]:
        assert encode(key) == encode_key(key)


def test_no_types_and_wide_keys() -> None:
    assert key_encoder([])(()) == encode_key(()) == b""
    wide = [parse_type("INT")] * 3 + [None]
    assert key_encoder(wide)((1, -2, 2**64, "z")) == encode_key((1, -2, 2**64, "z"))


def test_key_cache_gives_the_encoders_bytes_and_stays_bounded() -> None:
    from deltaflow.state.typed_keys import KeyCache

    encode = key_encoder(INT_KEY)
    cache = KeyCache(encode, limit=4)
    keys = [(1, 2), (3, -4), (1, 2), (2**70, None)]
    assert cache.encode_many(keys) == [encode_key(k) for k in keys]
    assert cache.encode_many([(5, 6), (7, 8)]) == [encode_key((5, 6)), encode_key((7, 8))]
    assert len(cache.known) <= 4  # full: it started over


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=2**56 - 1), max_size=40))
def test_sorted_ints_by_runs_are_encode_keys_bytes_in_order(values: list) -> None:
    values = sorted(values)
    got = encode_sorted_ints(values)
    if not values:
        assert got is None
        return
    assert got == [encode_key((v,)) for v in values]
    assert got == sorted(got)


def test_sorted_ints_at_each_length_boundary() -> None:
    values = sorted({1, *(2 ** (8 * n) + d for n in range(1, 7) for d in (-1, 0, 1))})
    assert encode_sorted_ints(values) == [encode_key((v,)) for v in values]


def test_sorted_ints_leave_other_values_to_the_encoder() -> None:
    # zero, negatives, 8-byte values and bools have other tags: not by runs
    for values in ([0, 1], [-5, 3], [1, 2**56], [True, 2], [1, 2.0], [None, 1], []):
        assert encode_sorted_ints(values) is None
