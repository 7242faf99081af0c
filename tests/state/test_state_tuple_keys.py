"""An IndexedTable keyed by two or more integer columns (TPC-H lineitem's ``(l_orderkey,
l_linenumber)``): a key past the largest one stored is absent without a read, and a
batch's changed keys are encoded once for all its indexes and the commit. Both read and
write exactly as a table that reads every key: the same rows, contradictions, index
lookups and stored bytes, on real LMDB, through commits, discards, reopens, a memory
bound smaller than the data and keys that are not tuples of integers (NULL, past BIGINT,
negative)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from table_plans import plans

from deltaflow.formats.changelog import DELETE, INSERT
from deltaflow.formats.types import parse_type
from deltaflow.state import indexed
from deltaflow.state.backend import StateBackend
from deltaflow.state.keys import encode_key

TYPES = [parse_type(t) for t in ("BIGINT", "INT", "INT", "STRING")]
INDEXES = {"by_group": [2], "by_group_line": [2, 1]}

ODD = [None, -4, 2**70, -(2**70)]  # order keys that stop the shortcut, and ones it takes
orders = st.integers(0, 99).map(lambda i: i % 12 if i < 94 else ODD[i % 4])
keys = st.tuples(orders, st.integers(0, 3))
steps = plans(keys, ["commit", "discard", "flush", "reopen"], 16)


class _Reads:
    """Records the row keys a table reads from its row table."""

    def __init__(self, table) -> None:
        self.keys: list[bytes] = []
        rows = table._rows
        inner = rows.get_many_encoded

        def read(encoded: list[bytes]) -> list:
            self.keys += encoded
            return inner(encoded)

        rows.get_many_encoded = read


def _open(backend: StateBackend, shortcut: bool, keep: int):
    table = backend.indexed("lines", [0, 1], INDEXES, TYPES)
    table._keep = keep
    assert table._tuples  # a key of integer columns: the shortcut is on by default
    if not shortcut:  # every key read, as for any other key
        table._tuples = False
        table._last = indexed._OFF
    return table


def _run(path, shortcut: bool, keep: int, plan: list) -> list:
    seen: list = []
    backend = StateBackend(path)
    table = _open(backend, shortcut, keep)
    try:
        for op, arg in plan:
            if op == "apply":
                kinds = [kind for kind, *_ in arg]
                rows = [(o, line, g, s) for _, (o, line), g, s in arg]
                before, contradicted = table.apply_changes(kinds, rows)
                seen.append((dict(before), list(before), contradicted))
            elif op == "get":
                seen.append(table.get_many(list(arg)))
            elif op == "lookup":
                seen.append(table.lookup("by_group", [(g,) for g in arg]))
                seen.append(table.lookup("by_group_line", [(g, g % 3) for g in arg]))
            elif op == "commit":
                backend.commit()
            elif op == "discard":
                backend.discard()
            elif op == "reopen":  # what was not committed is lost
                backend.close()
                backend = StateBackend(path)
                table = _open(backend, shortcut, keep)
            else:
                table.flush()
        seen.append(table.items())
        table.flush()
        seen.append(list(table._rows.scan_encoded(b"")))
        seen += [list(backend.packed_index(f"lines#{name}").pairs()) for name in INDEXES]
    finally:
        backend.close()
    return seen


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=steps, keep=st.sampled_from([3, 8, 1000]))
def test_integer_tuple_keys_read_and_write_as_keys_read_every_time(
    tmp_path_factory, plan, keep
) -> None:
    with_shortcut = _run(tmp_path_factory.mktemp("a") / "s", True, keep, plan)
    without = _run(tmp_path_factory.mktemp("b") / "s", False, keep, plan)
    assert with_shortcut == without


def test_new_keys_past_the_largest_stored_are_not_read(tmp_path) -> None:
    """Keys of a sequence (lineitem's lines of new orders) read nothing; a smaller key, a
    stored one, or any key after a reopen is read; a NULL in a key stops the shortcut."""
    path = tmp_path / "s"
    with StateBackend(path) as b:
        table = b.indexed("lines", [0, 1], INDEXES, TYPES)
        table.apply([INSERT] * 3, [(5, 1, 1, "a"), (5, 2, 1, "b"), (9, 1, 2, "c")])
        b.commit()
    with StateBackend(path) as b:
        table = b.indexed("lines", [0, 1], INDEXES, TYPES)
        reads = _Reads(table)
        # (9, 1) is the largest stored: its upsert is read and moves it from group 2 to 3;
        # (9, 2) and (12, 0) are past it; (7, 1) is below it (read, absent: contradicted)
        rows = [(9, 1, 3, "c2"), (9, 2, 1, "d"), (12, 0, 1, "e"), (7, 1, 0, "x")]
        assert table.apply([INSERT, INSERT, INSERT, DELETE], rows) == [3]
        assert sorted(reads.keys) == sorted(encode_key(k) for k in [(9, 1), (7, 1)])
        assert table.lookup("by_group", [(1,), (2,), (3,)]) == [
            [(5, 1, 1, "a"), (5, 2, 1, "b"), (9, 2, 1, "d"), (12, 0, 1, "e")],
            [],
            [(9, 1, 3, "c2")],
        ]
        b.commit()
        reads.keys.clear()
        table.apply([INSERT, INSERT], [(12, 1, 1, "f"), (12, 0, 2, "e2")])
        assert reads.keys == []  # (12, 0) is kept in memory, (12, 1) past the largest
        b.commit()
        reads.keys.clear()
        table.apply([INSERT], [(None, 1, 1, "n")])  # a NULL in a key: read
        b.commit()
        table.apply([INSERT, INSERT], [(20, 0, 1, "g"), (21, 0, 1, "h")])
        assert reads.keys == [encode_key((None, 1)), encode_key((20, 0)), encode_key((21, 0))]
        assert table._last is indexed._OFF
        b.commit()
    with StateBackend(path) as b:
        table = b.indexed("lines", [0, 1], INDEXES, TYPES)
        assert table.get_many([(12, 0), (12, 1), (None, 1), (21, 0), (7, 1)]) == [
            (12, 0, 2, "e2"),
            (12, 1, 1, "f"),
            (None, 1, 1, "n"),
            (21, 0, 1, "h"),
            None,
        ]


def test_changed_keys_are_encoded_once_for_the_indexes_and_the_commit(tmp_path) -> None:
    """Two indexes and the commit take a batch's row keys' bytes from one encoding."""
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("lines", [0, 1], INDEXES, TYPES)
        encoded: list = []
        inner = table._pk_bytes.encode

        def encode(key: tuple) -> bytes:
            encoded.append(key)
            return inner(key)

        table._pk_bytes.encode = encode
        rows = [(1, 1, 0, "a"), (1, 2, 1, "b"), (2, 1, 1, "c")]
        table.apply([INSERT] * 3, rows)
        b.commit()
        assert sorted(encoded) == [(1, 1), (1, 2), (2, 1)]
        stored = [kb for kb, _ in table._rows.scan_encoded(b"")]
        assert stored == [encode_key(k) for k in [(1, 1), (1, 2), (2, 1)]]
        pairs = b.packed_index("lines#by_group").pairs()
        assert pairs == [
            (encode_key((0,)), encode_key((1, 1))),
            (encode_key((1,)), encode_key((1, 2))),
            (encode_key((1,)), encode_key((2, 1))),
        ]


@pytest.mark.parametrize("types", [None, [parse_type("BIGINT"), parse_type("STRING")] * 2])
def test_other_keys_keep_reading_every_key(tmp_path, types) -> None:
    """A key with a column that is not an integer (or of unknown type) has no shortcut."""
    with StateBackend(tmp_path / "s") as b:
        table = b.indexed("lines", [0, 1], {"by": [2]}, types)
        assert not table._tuples and table._last is indexed._OFF
