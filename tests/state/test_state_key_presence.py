"""KeySet: the live primary keys of a changelog source, following batches in order."""

from __future__ import annotations

from deltaflow.formats.changelog import RowKind
from deltaflow.formats.types import parse_type
from deltaflow.state.backend import StateBackend
from deltaflow.state.checkpoint import Checkpointer
from deltaflow.state.key_presence import KeySet

INS, UB, UA, D = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE
INT = [parse_type("INT")]


def live(keys: KeySet, *ids: int) -> list[bool]:
    return [
        v is not None for v in keys.table.get_many_encoded(keys.encode_many([(i,) for i in ids]))
    ]


def test_retractions_of_keys_never_inserted_name_their_records(tmp_path):
    with StateBackend(tmp_path) as backend:
        keys = KeySet(backend, "orders", INT)
        # records 0..4: +I 1, -D 1, -D 2 (never seen), -U/+U 3 (never seen), +I 4
        kinds = [INS, D, D, UB, UA, INS]
        rows = [(1,), (1,), (2,), (3,), (3,), (4,)]
        assert keys.apply(kinds, rows, drop=False) == [2, 3]
        assert live(keys, 1, 2, 3, 4) == [False, False, True, True]


def test_a_dropped_record_does_not_make_its_key_live(tmp_path):
    with StateBackend(tmp_path) as backend:
        keys = KeySet(backend, "orders", INT)
        assert keys.apply([UB, UA, D], [(3,), (3,), (3,)], drop=True) == [0, 2]
        assert live(keys, 3) == [False]
        # not dropped, the +U makes the key live: the -D after it is a real delete
        assert keys.apply([UB, UA, D], [(3,), (3,), (3,)], drop=False) == [0]


def test_changes_within_a_batch_count_in_order(tmp_path):
    with StateBackend(tmp_path) as backend:
        keys = KeySet(backend, "orders", INT)
        # -D before the insert is unknown; after the insert it is a real delete; a second
        # -D of the same key is unknown again
        assert keys.apply([D, INS, D, D], [(7,)] * 4, drop=True) == [0, 3]


def test_the_set_is_checkpointed_and_rolled_back_with_the_state(tmp_path):
    backend = StateBackend(tmp_path)
    keys = KeySet(backend, "orders", INT)
    keys.mark_complete()
    keys.apply([INS, INS], [(1,), (2,)], drop=True)
    Checkpointer(backend).commit(1, {"0": 2})
    # epoch 2 deletes 1 and is left pending (its Kafka transaction never committed)
    keys.apply([D], [(1,)], drop=True)
    backend.commit({"checkpoint.pending": 2, "epoch": 2}, undo=True)
    backend.close()
    backend = StateBackend(tmp_path)
    assert Checkpointer(backend).restore(lambda epoch: False) == (1, {"0": 2})
    again = KeySet(backend, "orders", INT)
    assert again.is_complete()
    assert live(again, 1, 2) == [True, True]
    assert again.apply([D, D], [(1,), (1,)], drop=True) == [1]
    backend.close()


def test_composite_keys_and_a_new_set_is_not_complete(tmp_path):
    with StateBackend(tmp_path) as backend:
        keys = KeySet(backend, "items", [parse_type("INT"), parse_type("STRING")])
        assert not keys.is_complete()
        assert keys.apply([INS, D], [(1, "a"), (1, "b")], drop=True) == [1]
        assert keys.table.get_many_encoded(keys.encode_many([(1, "a")])) == [True]
