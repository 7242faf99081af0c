"""The Rank's generated sort key (``rank.sort_key`` with column types: DESC numbers
negated) orders every pair of rows as the key of ``_Desc`` wrappers does, NULLs first or
last, NaN and signed zeros included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.types import parse_type
from deltaflow.processor.runtime.rank import _Desc, sort_key

TYPES = [parse_type(t) for t in ("BIGINT", "DOUBLE", "STRING", "INT", "FLOAT")]
ROW = st.tuples(
    st.none() | st.integers(-(2**63), 2**63 - 1),
    st.none() | st.floats() | st.sampled_from([0.0, -0.0]),
    st.none() | st.text(max_size=3),
    st.none() | st.integers(-3, 3),
    st.none() | st.floats(width=32),
)
ORDER = st.lists(
    st.tuples(st.integers(0, 4), st.booleans(), st.booleans()), min_size=1, max_size=4
).map(tuple)


def reference(order):
    """The key as wrappers give it: (0|2, 0) for NULL, (1, v) or (1, _Desc(v))."""

    def key(row):
        out = []
        for col, asc, nulls_first in order:
            v = row[col]
            if v is None:
                out.append((0 if nulls_first else 2, 0))
            else:
                out.append((1, v if asc else _Desc(v)))
        return tuple(out)

    return key


@settings(max_examples=400, deadline=None)
@given(order=ORDER, rows=st.lists(ROW, min_size=2, max_size=8))
def test_the_typed_key_orders_every_pair_as_the_wrapped_key(order, rows):
    new, old = sort_key(order, TYPES), reference(order)
    for a in rows:
        for b in rows:
            assert (new(a) < new(b)) == (old(a) < old(b)), (a, b)
    assert sorted(rows, key=new) == sorted(rows, key=old)


def test_without_types_desc_columns_are_wrapped():
    key = sort_key(((0, False, False),))
    assert sorted([(1,), (None,), (3,)], key=key) == [(3,), (1,), (None,)]
