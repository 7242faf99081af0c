"""IndexedTable: a CDC mirror with primary key and secondary indexes, on real LMDB."""

from __future__ import annotations

import struct

import pytest

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from deltaflow.formats.errors import StateError
from deltaflow.state.backend import StateBackend
from deltaflow.state.keys import EMPTY

# orders(order_id PK, customer, status, amount); index by customer and by (status, customer)
INDEXES = {"by_customer": [1], "by_status": [2, 1]}


@pytest.fixture
def backend(tmp_path):
    with StateBackend(tmp_path / "state") as b:
        yield b


def orders(backend: StateBackend):
    return backend.indexed("orders", [0], INDEXES)


def test_upsert_delete_and_lookup(backend) -> None:
    table = orders(backend)
    table.apply(
        [INSERT, INSERT, INSERT, INSERT],
        [(1, "ann", "new", 10), (2, "bob", "new", 20), (3, "ann", "paid", 30), (4, "cy", "new", 5)],
    )
    assert table.count() == 4
    assert table.get((3,)) == (3, "ann", "paid", 30)
    assert table.lookup("by_customer", [("bob",), ("ann",), ("zed",), ("ann",)]) == [
        [(2, "bob", "new", 20)],
        [(1, "ann", "new", 10), (3, "ann", "paid", 30)],
        [],
        [(1, "ann", "new", 10), (3, "ann", "paid", 30)],
    ]
    table.apply([DELETE], [(1, "ann", "new", 10)])
    assert table.get((1,)) is None
    assert table.lookup("by_customer", [("ann",)]) == [[(3, "ann", "paid", 30)]]
    assert table.count() == 3


def test_update_moves_index_entries_when_indexed_column_changes(backend) -> None:
    table = orders(backend)
    table.apply([INSERT], [(1, "ann", "new", 10)])
    backend.commit()
    # order 1 moves from ann to bob and is paid: -U/+U pair of the same key
    table.apply([UPDATE_BEFORE, UPDATE_AFTER], [(1, "ann", "new", 10), (1, "bob", "paid", 10)])
    assert table.lookup("by_customer", [("ann",), ("bob",)]) == [[], [(1, "bob", "paid", 10)]]
    assert table.lookup("by_status", [("new", "ann"), ("paid", "bob")]) == [
        [],
        [(1, "bob", "paid", 10)],
    ]
    backend.commit()
    assert len(backend.packed_index("orders#by_customer")) == 1
    assert len(backend.packed_index("orders#by_status")) == 1
    # an update that leaves the indexed column alone keeps one entry
    table.apply([UPDATE_BEFORE, UPDATE_AFTER], [(1, "bob", "paid", 10), (1, "bob", "paid", 99)])
    backend.commit()
    assert table.lookup("by_customer", [("bob",)]) == [[(1, "bob", "paid", 99)]]
    assert len(backend.packed_index("orders#by_customer")) == 1


def test_changes_to_one_key_within_a_batch_apply_in_order(backend) -> None:
    table = orders(backend)
    contradictions = table.apply(
        [INSERT, DELETE, INSERT, UPDATE_BEFORE, UPDATE_AFTER],
        [(1, "a", "x", 1), (1, "a", "x", 1), (1, "b", "y", 2), (1, "b", "y", 2), (1, "c", "z", 3)],
    )
    assert contradictions == []
    assert table.get((1,)) == (1, "c", "z", 3)
    assert table.lookup("by_customer", [("a",), ("b",), ("c",)]) == [[], [], [(1, "c", "z", 3)]]
    backend.commit()
    assert len(backend.packed_index("orders#by_customer")) == 1


def test_delete_of_unknown_key_is_reported_not_applied(backend) -> None:
    table = orders(backend)
    table.apply([INSERT], [(1, "a", "x", 1)])
    positions = table.apply(
        [DELETE, DELETE, UPDATE_BEFORE], [(9, "q", "x", 0), (1, "a", "x", 1), (1, "a", "x", 1)]
    )
    assert positions == [0, 2]
    assert table.count() == 0


def test_upsert_of_existing_key_replaces_row(backend) -> None:
    table = orders(backend)
    table.apply([INSERT], [(1, "a", "x", 1)])
    backend.commit()
    table.apply([INSERT], [(1, "b", "x", 2)])  # e.g. a snapshot re-read: upsert
    assert table.count() == 1
    assert table.lookup("by_customer", [("a",), ("b",)]) == [[], [(1, "b", "x", 2)]]


def test_primary_key_prefix_index_scans_rows(tmp_path) -> None:
    with StateBackend(tmp_path / "s") as b:
        # order_lines(order_id, line_no, sku): PK (order_id, line_no), bucket key order_id
        lines = b.indexed("lines", [0, 1], {"by_order": [0]})
        lines.apply([INSERT] * 4, [(2, 1, "x"), (1, 2, "y"), (1, 1, "z"), (3, 1, "w")])
        assert lines.lookup("by_order", [(1,), (4,)]) == [[(1, 1, "z"), (1, 2, "y")], []]
        b.commit()
        assert sorted(name for name, _, _ in b.stats()) == ["lines"]


def test_new_index_is_backfilled_and_survives_reopen(tmp_path) -> None:
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("orders", [0], {})
        table.apply([INSERT] * 3, [(1, "a", "x", 1), (2, "b", "x", 2), (3, "a", "y", 3)])
        b.commit()
        table.build_index("by_customer", [1])
        assert table.lookup("by_customer", [("a",)]) == [[(1, "a", "x", 1), (3, "a", "y", 3)]]
        b.commit()
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("orders", [0], {"by_customer": [1], "by_status": [2]})
        assert table.lookup("by_customer", [("b",)]) == [[(2, "b", "x", 2)]]
        assert table.lookup("by_status", [("x",)]) == [[(1, "a", "x", 1), (2, "b", "x", 2)]]


def test_index_left_incomplete_by_a_crash_is_rebuilt(tmp_path) -> None:
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("orders", [0], {"by_customer": [1]})
        table.apply([INSERT] * 2, [(1, "a", "x", 1), (2, "b", "x", 2)])
        b.commit()
        index = b.table("orders#by_customer")
        index.delete(("a",))  # an index key and its pair lost, the pair count agreeing
        index.put_encoded(EMPTY, [struct.pack(">?Q", False, 1)])
        b.commit()
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("orders", [0], {"by_customer": [1]})
        assert table.lookup("by_customer", [("a",), ("b",)]) == [
            [(1, "a", "x", 1)],
            [(2, "b", "x", 2)],
        ]
        b.commit()
        assert len(b.packed_index("orders#by_customer")) == 2


def test_null_index_values(backend) -> None:
    table = orders(backend)
    table.apply([INSERT, INSERT], [(1, None, "x", 1), (2, "a", "x", 2)])
    assert table.lookup("by_customer", [(None,)]) == [[(1, None, "x", 1)]]


def test_unknown_index_and_bad_definitions(backend) -> None:
    table = orders(backend)
    with pytest.raises(StateError, match="no index 'nope'"):
        table.lookup("nope", [(1,)])
    with pytest.raises(StateError, match="primary key"):
        backend.indexed("t", [], {})


def test_one_mirror_per_name_gains_indexes(backend) -> None:
    first = backend.indexed("orders", [0], {"by_customer": [1]})
    first.apply([INSERT, INSERT], [(1, "a", "x", 1), (2, "b", "y", 2)])
    second = backend.indexed("orders", [0], {"by_status": [2]})
    assert second is first
    assert second.lookup("by_status", [("y",)]) == [[(2, "b", "y", 2)]]
    with pytest.raises(StateError, match="keyed by columns"):
        backend.indexed("orders", [1], {})
    with pytest.raises(StateError, match="another name"):
        backend.indexed("orders", [0], {"by_status": [3]})


def test_typed_mirror_batch_lookups_see_buffered_writes(tmp_path) -> None:
    from deltaflow.formats.types import parse_type

    types = [parse_type(t) for t in ("BIGINT", "INT", "INT", "STRING")]
    with StateBackend(tmp_path / "s") as b:
        # lines(order_id, merchant, item, name): PK order_id; by_item (merchant, item)
        table = b.indexed("lines", [0], {"by_item": [1, 2], "pk": [0]}, types)
        table.apply([INSERT] * 3, [(1, 5, 7, "a"), (2, 5, 7, "b"), (3, 5, 8, "c")])
        b.commit()
        before, bad = table.apply_changes(
            [UPDATE_BEFORE, UPDATE_AFTER, DELETE, INSERT, DELETE],
            [(1, 5, 7, "a"), (1, 5, 8, "a2"), (3, 5, 8, "c"), (4, 6, 1, "d"), (9, 1, 1, "z")],
        )
        # by row key: the value itself for a one-column primary key
        assert before == {1: (1, 5, 7, "a"), 3: (3, 5, 8, "c"), 4: None, 9: None}
        assert bad == [4]  # the delete of a key never there
        # uncommitted: the buffered writes are merged into the committed index entries
        assert table.lookup("by_item", [(5, 8), (5, 7), (6, 1), (5, 8)]) == [
            [(1, 5, 8, "a2")],
            [(2, 5, 7, "b")],
            [(4, 6, 1, "d")],
            [(1, 5, 8, "a2")],
        ]
        assert table.lookup("pk", [(3,), (4,), (2,)]) == [[], [(4, 6, 1, "d")], [(2, 5, 7, "b")]]
        b.commit()
        assert table.lookup("by_item", [(5, 7), (5, 8)]) == [[(2, 5, 7, "b")], [(1, 5, 8, "a2")]]
    with StateBackend(tmp_path / "s") as b:  # an untyped reader reads what the typed one wrote
        table = b.indexed("lines", [0], {"by_item": [1, 2]})
        assert table.lookup("by_item", [(6, 1)]) == [[(4, 6, 1, "d")]]
        assert len(b.packed_index("lines#by_item")) == 3


def test_scan_many_merges_buffer_in_key_order(backend) -> None:
    table = backend.table("t")
    for key in [(1, "a"), (1, "c"), (2, "a"), (3, "x")]:
        table.put(key, key[1])
    backend.commit()
    table.put((1, "b"), "B")
    table.delete((1, "c"))
    table.put((2, "a"), "A")
    from deltaflow.state.keys import decode_key, encode_key

    prefixes = [encode_key((1,)), encode_key((2,)), encode_key((4,))]
    found = table.scan_many(prefixes)
    assert [[(decode_key(k), v) for k, v in group] for group in found] == [
        [((1, "a"), "a"), ((1, "b"), "B")],
        [((2, "a"), "A")],
        [],
    ]
    keys = table.scan_many(prefixes, values=False)
    assert [[decode_key(k) for k in group] for group in keys] == [
        [(1, "a"), (1, "b")],
        [(2, "a")],
        [],
    ]


def test_integer_keys_of_several_lengths_commit_in_key_order(tmp_path) -> None:
    from deltaflow.formats.types import parse_type
    from deltaflow.state.keys import encode_key

    types = [parse_type(t) for t in ("BIGINT", "INT")]
    keys = [70_000, 5, 2**40, 256, 1, 255, 300, 2**56 + 3]
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("t", [0], {"by_v": [1]}, types)
        table.apply([INSERT] * len(keys), [(k, k % 3) for k in keys])
        b.commit()
        table.apply([UPDATE_BEFORE, UPDATE_AFTER, INSERT], [(256, 1), (256, 2), (2**24, 1)])
        _, _, writes = table.commit_writes()  # positive keys under 2**56: in key order
        assert [key for key, _ in writes] == [encode_key((256,)), encode_key((2**24,))]
        b.commit()
    with StateBackend(tmp_path / "s") as b:  # an untyped reader reads what was written
        table = b.indexed("t", [0], {"by_v": [1]})
        got = table.lookup("by_v", [(0,), (1,), (2,)])
        assert [sorted(rows) for rows in got] == [
            sorted((k, k % 3) for k in keys if k % 3 == 0),
            sorted([(k, 1) for k in keys if k % 3 == 1 and k != 256] + [(2**24, 1)]),
            sorted([(k, 2) for k in keys if k % 3 == 2] + [(256, 2)]),
        ]
