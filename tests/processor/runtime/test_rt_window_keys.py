"""The window aggregate's state keys, encoded per window and per group key once a batch
(``window._encoded``), are the bytes ``encode_key`` gives each whole key, and the group
keys' bytes it learns decode to the keys it maps them to."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.processor.runtime.window import _encoded
from deltaflow.state.keys import decode_key, encode_key

GROUP = st.one_of(
    st.none(), st.integers(-(2**70), 2**70), st.text(max_size=6), st.booleans(),
    st.datetimes(), st.tuples(st.integers(), st.text(max_size=3)),
)  # fmt: skip
WINDOW = st.tuples(st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40))


@settings(max_examples=300, deadline=None)
@given(
    windows=st.lists(WINDOW, min_size=1, max_size=4),
    groups=st.lists(
        st.tuples() | st.tuples(GROUP) | st.tuples(GROUP, GROUP), min_size=1, max_size=5
    ),
    picks=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4)), max_size=30),
)
def test_keys_encoded_in_parts_are_the_whole_keys_bytes(windows, groups, picks):
    keys = [windows[w % len(windows)] + groups[g % len(groups)] for w, g in picks]
    groups: dict = {}
    assert _encoded(keys, groups) == [encode_key(k) for k in keys]
    # each group key's bytes are learned with what they decode to
    assert groups == {encode_key(k[2:]): decode_key(encode_key(k[2:])) for k in keys}
