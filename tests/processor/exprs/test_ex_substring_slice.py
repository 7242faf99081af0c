"""SUBSTRING with a constant start from 1 on and a constant length: generated as a slice."""

from __future__ import annotations

import linecache

from ex_helpers import call, col, ev, i
from hypothesis import given
from hypothesis import strategies as st

from deltaflow.processor.exprs.compile import compile_scalar


@given(
    text=st.one_of(st.none(), st.text(max_size=12)),
    start=st.integers(1, 15),
    length=st.one_of(st.none(), st.integers(0, 15)),
)
def test_constant_bounds_give_the_sql_substring(text, start, length):
    """SQL: the characters from position ``start`` (1-based), ``length`` of them (or to
    the end), fewer when the string ends first; NULL in, NULL out."""
    bounds = (i(start),) if length is None else (i(start), i(length))
    got = ev(call("SUBSTRING", col(0, "STRING"), *bounds), (text,))
    if text is None:
        assert got is None
    else:
        chars = list(text)[start - 1 :] if length is None else list(text)[start - 1 :][:length]
        assert got == "".join(chars)


def test_the_slice_is_inline_and_other_bounds_keep_the_rules():
    fn = compile_scalar(call("SUBSTRING", col(0, "STRING"), i(1), i(2)))
    assert "[0:2]" in "".join(linecache.getlines(fn.__code__.co_filename))
    assert ev(call("SUBSTRING", col(0, "STRING"), i(1), i(2)), ("13-555",)) == "13"
    assert ev(call("SUBSTRING", col(0, "STRING"), i(0), i(2)), ("abc",)) == "ab"  # 0 counts as 1
    assert ev(call("SUBSTRING", col(0, "STRING"), i(-2)), ("abc",)) == "bc"
    assert ev(call("SUBSTRING", col(0, "STRING"), i(2), i(-1)), ("abc",)) is None
    assert ev(call("SUBSTRING", col(0, "STRING"), col(1, "INT"), i(1)), ("abc", 3)) == "c"
