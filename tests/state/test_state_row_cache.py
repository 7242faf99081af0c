"""The rows an IndexedTable keeps in memory by slot (``row_cache.BySlot``, integer keys)
read and write exactly as kept by key (``ByKey``): the same rows, contradictions, index
lookups and stored bytes, on real LMDB, through commits, discards, a memory bound smaller
than the data and keys a slot cannot hold (negative, past ``LIMIT``)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from table_plans import plans

from deltaflow.formats.types import parse_type
from deltaflow.state import row_cache
from deltaflow.state.backend import StateBackend
from deltaflow.state.row_cache import LIMIT, ByKey, BySlot

TYPES = [parse_type(t) for t in ("BIGINT", "INT", "STRING")]

ODD = [-3, -1, LIMIT - 1, LIMIT, LIMIT + 7, 2**40]  # keys a slot cannot hold, and one it can
# mostly 0..8 (batches repeat keys), now and then an odd one (the table then keeps a dict)
keys = st.integers(0, 199).map(lambda i: i % 9 if i < 190 else ODD[i % 6])
steps = plans(keys, ["commit", "discard", "flush"], 14)


def _run(path, slots: bool, keep: int, plan: list) -> list:
    seen: list = []
    with StateBackend(path) as backend:
        table = backend.indexed("t", [0], {"by": [1]}, TYPES)
        table._keep = keep
        assert type(table._kept) is BySlot  # an integer key: slots first
        if not slots:
            table._kept = ByKey()
        for op, arg in plan:
            if op == "apply":
                kinds = [kind for kind, *_ in arg]
                rows = [(k, g, s) for _, k, g, s in arg]
                before, contradicted = table.apply_changes(kinds, rows)
                seen.append((dict(before), list(before), contradicted))
            elif op == "get":
                seen.append(table.get_many([(k,) for k in arg]))
            elif op == "lookup":
                seen.append(table.lookup("by", [(g,) for g in arg]))
            elif op == "commit":
                backend.commit()
            elif op == "discard":
                backend.discard()
            else:
                table.flush()
        seen.append(table.items())
        table.flush()
        seen.append(list(table._rows.scan_encoded(b"")))
    return seen


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=steps, keep=st.sampled_from([3, 8, 1000]))
def test_rows_kept_by_slot_read_and_write_as_rows_kept_by_key(tmp_path_factory, plan, keep):
    by_slot = _run(tmp_path_factory.mktemp("slot"), True, keep, plan)
    by_key = _run(tmp_path_factory.mktemp("key"), False, keep, plan)
    assert by_slot == by_key


@pytest.mark.parametrize("bad", [-1, LIMIT, None, "x", 2.0])
def test_a_key_no_slot_can_hold_moves_the_rows_to_a_dict(bad) -> None:
    cache = BySlot()
    cache.add([1, 5], [("a",), None])
    cache.put({5: ("b",), 2: ("c",)})
    with pytest.raises(row_cache.Unfit):
        cache.lookup([3, bad])
    moved = cache.as_by_key()
    assert moved.rows == {1: ("a",), 5: ("b",), 2: ("c",)}
    assert moved.latest(True) == ([2, 5], [("c",), ("b",)], True)
    assert moved.lookup([1, 2, 3]) == [("a",), ("c",), row_cache.MISSING]


def test_slots_give_the_changed_keys_sorted_once_with_their_last_rows() -> None:
    cache = BySlot()
    cache.put({9: ("x",), 3: None})
    cache.put({9: ("y",), 0: ("z",)})
    assert cache.latest(True) == ([0, 3, 9], [("z",), None, ("y",)], True)
    assert cache.lookup([9, 4, 3]) == [("y",), row_cache.MISSING, None]
    cache.clean()
    assert not cache.changed() and cache.lookup([9]) == [("y",)]
