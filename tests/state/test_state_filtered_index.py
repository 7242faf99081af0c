"""Filtered indexes of an IndexedTable (``build_index(..., keep)``): the index holds exactly
the rows its filter is true for (and those it raises for), through any history of
changes, commits, reopens and a backfill, on real LMDB."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from deltaflow.formats.types import parse_type
from deltaflow.state.backend import StateBackend
from deltaflow.state.indexed import FILTERED_INDEXES, IndexedTable
from deltaflow.state.values import TypedValues

INT = parse_type("INT")
TYPES = [INT, INT, INT]  # (id PK, k indexed, v filtered)


def keep(row: tuple) -> bool:
    if row[2] == 5:
        raise ZeroDivisionError("the filter raises for v = 5")
    return row[2] is not None and row[2] > 2


def passes(row: tuple) -> bool:
    """Whether the index holds ``row``: its filter is true, or raises."""
    return row[2] == 5 or keep(row)


def opened(backend: StateBackend, filtered: bool = True):
    filters = {"k": keep} if filtered else {}
    return backend.indexed("t", [0], {"k": [1]}, TYPES, None, filters)


def held(table, keys) -> Counter:
    return Counter(row for rows in table.lookup("k", [(k,) for k in keys]) for row in rows)


# an op: (id, delete?, k, v) on a live id updates or deletes it, else inserts it
op_st = st.tuples(
    st.integers(0, 6), st.booleans(), st.integers(0, 2), st.one_of(st.none(), st.integers(0, 6))
)


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(op_st, max_size=40),
    cuts=st.lists(st.integers(1, 8), min_size=1, max_size=5),
    reopen=st.booleans(),
)
def test_a_filtered_index_holds_the_rows_passing_its_filter(tmp_path_factory, ops, cuts, reopen):
    path = tmp_path_factory.mktemp("filtered")
    live: dict[int, tuple] = {}
    changes: list[tuple[int, tuple]] = []
    for pk, delete, k, v in ops:
        old = live.get(pk)
        if old is None:
            live[pk] = (pk, k, v)
            changes.append((INSERT, live[pk]))
        elif delete:
            changes.append((DELETE, live.pop(pk)))
        else:
            live[pk] = (pk, k, v)
            changes += [(UPDATE_BEFORE, old), (UPDATE_AFTER, live[pk])]
    at, n = 0, 0
    backend = StateBackend(path)
    try:
        table = opened(backend)
        while at < len(changes):
            step = changes[at : at + cuts[n % len(cuts)]]
            table.apply([c for c, _ in step], [r for _, r in step])
            at, n = at + len(step), n + 1
            if n % 2 == 0:
                backend.commit()
                if reopen:
                    backend.close()
                    backend = StateBackend(path)
                    table = opened(backend)
        expected = Counter(row for row in live.values() if passes(row))
        assert held(table, range(3)) == expected
        backend.commit()
        pairs = len(backend.packed_index("t#k"))
        assert pairs == sum(expected.values())  # no pair of a row failing the filter
    finally:
        backend.close()


def test_an_index_added_to_rows_is_backfilled_with_the_passing_ones_once(tmp_path, monkeypatch):
    rows = [(1, 0, 1), (2, 0, 3), (3, 1, 5), (4, 1, 9), (5, 2, None)]
    with StateBackend(tmp_path / "s") as backend:
        backend.indexed("t", [0], {}, TYPES).apply([INSERT] * len(rows), rows)
        backend.commit()
    rebuilt = []
    original = IndexedTable._rebuild
    monkeypatch.setattr(IndexedTable, "_rebuild", lambda self, i: rebuilt.append(original(self, i)))
    with StateBackend(tmp_path / "s") as backend:
        table = opened(backend)
        assert held(table, range(3)) == Counter([(2, 0, 3), (3, 1, 5), (4, 1, 9)])
        marks = backend.table(FILTERED_INDEXES, TypedValues(bool))
        assert marks.get(("t#k",)) is True
        backend.commit()
    assert len(rebuilt) == 1
    with StateBackend(tmp_path / "s") as backend:
        table = opened(backend)  # marked complete: read as it is
        assert held(table, range(3)) == Counter([(2, 0, 3), (3, 1, 5), (4, 1, 9)])
    assert len(rebuilt) == 1


def test_an_unmarked_filtered_index_is_rebuilt(tmp_path):
    """An index of the same name written unfiltered (every row), its mark gone: rebuilt from
    the rows with the filter (the mark is written in the backfill's own commit)."""
    with StateBackend(tmp_path / "s") as backend:
        table = opened(backend, filtered=False)
        table.apply([INSERT, INSERT], [(1, 0, 3), (2, 0, 1)])
        backend.commit()
        assert len(backend.packed_index("t#k")) == 2
    with StateBackend(tmp_path / "s") as backend:
        table = opened(backend)
        assert held(table, range(3)) == Counter([(1, 0, 3)])
        backend.commit()
        assert len(backend.packed_index("t#k")) == 1


def test_unfiltered_and_filtered_indexes_of_one_table(tmp_path):
    with StateBackend(tmp_path / "s") as backend:
        table = backend.indexed("t", [0], {"all": [1], "k": [1]}, TYPES, None, {"k": keep})
        table.apply([INSERT, INSERT, INSERT], [(1, 0, 1), (2, 0, 3), (3, 0, 4)])
        table.apply([UPDATE_BEFORE, UPDATE_AFTER], [(2, 0, 3), (2, 0, 2)])
        assert held(table, [0]) == Counter([(3, 0, 4)])
        assert sorted(table.lookup("all", [(0,)])[0]) == [(1, 0, 1), (2, 0, 2), (3, 0, 4)]
