"""Rows and values kept in memory across commits (IndexedTable ``keep``, StateTable
``keep``): reads stay equal to what was committed, through discards, roll-backs and a
memory bound smaller than the data, on real LMDB."""

from __future__ import annotations

import pytest

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from deltaflow.formats.errors import StateError
from deltaflow.formats.types import parse_type
from deltaflow.state import indexed
from deltaflow.state.backend import StateBackend
from deltaflow.state.row_keys import compile_moves
from deltaflow.state.values import TypedValues

TYPES = [parse_type(t) for t in ("BIGINT", "INT", "INT", "STRING")]


@pytest.fixture
def backend(tmp_path):
    with StateBackend(tmp_path / "state") as b:
        yield b


def test_discard_drops_changes_kept_in_memory(backend) -> None:
    table = backend.indexed("lines", [0], {"by_item": [1, 2]}, TYPES)
    table.apply([INSERT, INSERT], [(1, 5, 7, "a"), (2, 5, 7, "b")])
    backend.commit()
    table.apply(
        [UPDATE_BEFORE, UPDATE_AFTER, DELETE], [(1, 5, 7, "a"), (1, 6, 1, "x"), (2, 5, 7, "b")]
    )
    assert table.get((1,)) == (1, 6, 1, "x")
    backend.discard()
    assert table.get_many([(1,), (2,)]) == [(1, 5, 7, "a"), (2, 5, 7, "b")]
    assert table.lookup("by_item", [(5, 7), (6, 1)]) == [[(1, 5, 7, "a"), (2, 5, 7, "b")], []]


def test_roll_back_in_the_same_process_forgets_kept_rows(backend) -> None:
    table = backend.indexed("lines", [0], {"by_item": [1, 2]}, TYPES)
    table.apply([INSERT, INSERT], [(1, 5, 7, "a"), (2, 5, 7, "b")])
    backend.commit()
    table.apply(
        [UPDATE_BEFORE, UPDATE_AFTER, INSERT], [(1, 5, 7, "a"), (1, 6, 1, "x"), (3, 6, 1, "c")]
    )
    backend.commit({"epoch": 2}, undo=True)
    assert table.lookup("by_item", [(6, 1)]) == [[(1, 6, 1, "x"), (3, 6, 1, "c")]]
    backend.roll_back()
    # every row and index entry as the first commit left them, though both were kept
    assert table.get_many([(1,), (2,), (3,)]) == [(1, 5, 7, "a"), (2, 5, 7, "b"), None]
    assert table.lookup("by_item", [(5, 7), (6, 1)]) == [[(1, 5, 7, "a"), (2, 5, 7, "b")], []]
    assert table.count() == 2


@pytest.mark.parametrize("keep", [1, 3, 1000])
def test_a_bound_below_the_data_keeps_results_exact(tmp_path, monkeypatch, keep) -> None:
    """Batches touching more keys than ``keep``: the kept rows start over mid-way."""
    monkeypatch.setattr(indexed, "KEEP_ROWS", keep)
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("lines", [0], {"by_item": [1, 2]}, TYPES)
        expected: dict[int, tuple] = {}
        for step in range(6):
            kinds, rows = [], []
            for oid in range(step, step + 8):
                old = expected.get(oid)
                new = (oid, step % 3, oid % 2, f"v{step}")
                if old is not None:
                    kinds.append(UPDATE_BEFORE)
                    rows.append(old)
                kinds.append(UPDATE_AFTER if old is not None else INSERT)
                rows.append(new)
                expected[oid] = new
            if step % 2:
                kinds.append(DELETE)
                rows.append(expected.pop(step))
            assert table.apply(kinds, rows) == []
            if step % 3 == 2:
                b.commit()
        b.commit()
        assert table.items() == [((k,), v) for k, v in sorted(expected.items())]
        for key in {(r[1], r[2]) for r in expected.values()}:
            want = sorted(r for r in expected.values() if (r[1], r[2]) == key)
            assert table.lookup("by_item", [key]) == [want]
    with StateBackend(tmp_path / "s") as b:  # what was committed, read afresh
        table = b.indexed("lines", [0], {"by_item": [1, 2]}, TYPES)
        assert table.get_many([(k,) for k in sorted(expected)]) == [
            expected[k] for k in sorted(expected)
        ]


def test_compiled_moves_follow_the_indexed_columns() -> None:
    moves = compile_moves([1, 2])
    before = {
        1: None,  # inserted
        2: (2, 5, 7, "b"),  # deleted
        3: (3, 5, 7, "c"),  # moved to another item
        4: (4, 5, 7, "d"),  # indexed columns unchanged
        5: (5, None, 1, "e"),  # NULL stays NULL
        6: None,  # absent before and after (a delete of a key never seen)
    }
    after = {1: (1, 5, 7, "a"), 2: None, 3: (3, 5, 8, "c"), 4: (4, 5, 7, "d2")}
    after |= {5: (5, None, 1, "e2"), 6: None}
    gone, added = moves(before, after)
    assert gone == [((5, 7), 2), ((5, 7), 3)]
    assert added == [((5, 7), 1), ((5, 8), 3)]
    one = compile_moves([2])
    assert one({1: (1, 5, 7, "a")}, {1: (1, 5, 9, "a")}) == ([((7,), 1)], [((9,), 1)])


def test_fixed_index_refuses_a_key_beyond_bigint(backend) -> None:
    table = backend.indexed("lines", [0], {"by_item": [1, 2]}, TYPES)
    with pytest.raises(StateError, match="outside BIGINT's range"):
        table.apply([INSERT], [(2**63, 5, 7, "a")])


def test_kept_values_of_a_table_are_its_committed_values(backend) -> None:
    table = backend.table("kept", keep=2)
    table.put(("a",), [1])
    table.put(("b",), [2])
    table.put(("c",), [3])  # more than keep: nothing kept at the commit
    backend.commit()
    assert table.get_many([("a",), ("c",), ("z",)]) == [[1], [3], None]
    table.put(("a",), [10])
    table.delete(("c",))
    backend.commit()
    assert table.get_many([("a",), ("b",), ("c",)]) == [[10], [2], None]
    table.put(("b",), [20])
    backend.discard()
    assert table.get(("b",)) == [2]


def test_typed_values_encode_a_batch_with_a_fallback() -> None:
    codec = TypedValues(tuple[int, str])
    values = [(1, "a"), (2**70, "big"), (-3, "c")]  # 2**70 does not fit msgpack
    encoded = codec.encode_many(values)
    assert encoded == [codec.encode(v) for v in values]
    assert [codec.decode(e) for e in encoded] == values


def test_integer_keys_past_the_largest_stored_are_absent_without_a_read(tmp_path) -> None:
    """An insert of a new key of a sequence reads nothing; a smaller key, or any key after
    a reopen, is still read: an upsert of a stored key moves its index entry."""
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("lines", [0], {"by_item": [1, 2]}, TYPES)
        table.apply([INSERT] * 3, [(5, 1, 1, "a"), (9, 1, 1, "b"), (-2, 2, 2, "c")])
        b.commit()
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("lines", [0], {"by_item": [1, 2]}, TYPES)
        # 9 is stored (the largest): its upsert moves it from (1, 1) to (3, 3)
        assert table.apply(
            [INSERT, INSERT, DELETE], [(9, 3, 3, "b2"), (12, 1, 1, "d"), (7, 0, 0, "x")]
        ) == [2]
        assert table.lookup("by_item", [(1, 1), (3, 3)]) == [
            [(5, 1, 1, "a"), (12, 1, 1, "d")],
            [(9, 3, 3, "b2")],
        ]
        b.commit()
        table.apply(
            [INSERT, UPDATE_BEFORE, UPDATE_AFTER],
            [(13, 2, 2, "e"), (-2, 2, 2, "c"), (-2, 4, 4, "c2")],
        )
        b.discard()  # the largest key is read again: 12
        assert table.apply([INSERT, INSERT], [(12, 5, 5, "d2"), (30, 5, 5, "f")]) == []
        assert table.lookup("by_item", [(1, 1), (5, 5), (2, 2)]) == [
            [(5, 1, 1, "a")],
            [(12, 5, 5, "d2"), (30, 5, 5, "f")],
            [(-2, 2, 2, "c")],
        ]
        b.commit()
        assert len(b.packed_index("lines#by_item")) == table.count() == 5


class _CountingValues(TypedValues):
    """TypedValues that counts the rows it encodes."""

    def __init__(self, shape) -> None:
        super().__init__(shape)
        self.encoded: list = []

    def encode_many(self, values: list) -> list[bytes]:
        self.encoded += values
        return super().encode_many(values)


def test_a_row_changed_by_several_batches_is_encoded_once_at_the_commit(tmp_path) -> None:
    """Rows are encoded at the commit, once per key, with the key's last row; a reopened
    table reads exactly that row."""
    values = _CountingValues(tuple[int, int, str])
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("lines", [0], {"by_item": [1, 2]}, TYPES, values)
        table.apply([INSERT, INSERT], [(1, 5, 7, "a"), (2, 5, 7, "b")])
        table.apply([UPDATE_BEFORE, UPDATE_AFTER], [(1, 5, 7, "a"), (1, 5, 7, "c")])
        table.apply([UPDATE_BEFORE, UPDATE_AFTER], [(1, 5, 7, "c"), (1, 6, 1, "d")])
        table.apply([INSERT, DELETE], [(3, 5, 7, "e"), (3, 5, 7, "e")])
        assert values.encoded == []  # nothing encoded before the commit
        b.commit()
        assert sorted(values.encoded) == [(5, 7, "b"), (6, 1, "d")]  # key 3: deleted
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed(
            "lines", [0], {"by_item": [1, 2]}, TYPES, TypedValues(tuple[int, int, str])
        )
        assert table.get_many([(1,), (2,), (3,)]) == [(1, 6, 1, "d"), (2, 5, 7, "b"), None]
        assert table.lookup("by_item", [(5, 7), (6, 1)]) == [[(2, 5, 7, "b")], [(1, 6, 1, "d")]]
