"""StateKeys: an operator's memory of encoded state keys."""

from __future__ import annotations

from decimal import Decimal

from deltaflow.processor.runtime.base import StateKeys, state_key
from deltaflow.state.keys import decode_key


def test_each_distinct_key_once_in_first_seen_order_with_the_state_key_bytes() -> None:
    keys = StateKeys()
    batch = [(2, "b"), (1, "a"), (2, "b"), ()]
    got = keys.of(batch)
    assert list(got) == [(2, "b"), (1, "a"), ()]
    assert got == {k: state_key(k) for k in got}
    assert decode_key(got[(1, "a")]) == (1, "a")


def test_known_keys_are_reused_and_the_memory_is_bounded() -> None:
    keys = StateKeys(limit=3)
    first = keys.of([(Decimal("1.50"),), (7,)])
    again = keys.of([(7,)])
    assert again[(7,)] is first[(7,)]  # the bytes from the first batch
    keys.of([(8,), (9,)])  # 2 known + 2 new > 3: starts over
    assert set(keys.known) == {(8,), (9,)}
    assert decode_key(first[(Decimal("1.50"),)]) == (Decimal("1.50"),)
