"""Property tests: StateTable and IndexedTable behave like plain dicts over any op sequence."""

from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from deltaflow.state.backend import StateBackend

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYS = st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", "ab", ""]))
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), KEYS, st.integers()),
        st.tuples(st.just("delete"), KEYS),
        st.tuples(st.just("commit")),
        st.tuples(st.just("discard")),
    ),
    max_size=40,
)


@SETTINGS
@given(OPS)
def test_state_table_matches_a_dict(ops: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as tmp, StateBackend(tmp + "/s") as backend:
        table = backend.table("t")
        committed: dict[tuple, int] = {}
        current: dict[tuple, int] = {}
        for op in ops:
            if op[0] == "put":
                current[op[1]] = op[2]
                table.put(op[1], op[2])
            elif op[0] == "delete":
                current.pop(op[1], None)
                table.delete(op[1])
            elif op[0] == "commit":
                backend.commit()
                committed = dict(current)
            else:
                backend.discard()
                current = dict(committed)
            assert table.items() == sorted(current.items())
            assert len(table) == len(current)
            for first in range(4):
                expected = sorted((k, v) for k, v in current.items() if k[0] == first)
                assert list(table.scan_prefix((first,))) == expected
        probe = [(i, s) for i in range(4) for s in ("a", "b")]
        assert table.get_many(probe) == [current.get(k) for k in probe]


# A changelog over rows (pk, group, value): each change is valid for the table it
# applies to, as a Debezium source emits it.
@st.composite
def changelog(draw: st.DrawFn) -> list[list[tuple[int, tuple]]]:
    table: dict[int, tuple] = {}
    batches = []
    for _ in range(draw(st.integers(1, 5))):
        batch = []
        for _ in range(draw(st.integers(0, 8))):
            pk = draw(st.integers(0, 5))
            new = (pk, draw(st.sampled_from(["x", "y", None])), draw(st.integers(0, 9)))
            old = table.get(pk)
            if old is None:
                batch.append((INSERT, new))
                table[pk] = new
            elif draw(st.booleans()):
                batch += [(UPDATE_BEFORE, old), (UPDATE_AFTER, new)]
                table[pk] = new
            else:
                batch.append((DELETE, old))
                del table[pk]
        batches.append(batch)
    return batches


@SETTINGS
@given(changelog(), st.booleans())
def test_indexed_table_matches_recomputed_lookup(batches: list, commit_each: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp, StateBackend(tmp + "/s") as backend:
        mirror = backend.indexed("r", [0], {"by_group": [1], "by_value_group": [2, 1]})
        model: dict[int, tuple] = {}
        for batch in batches:
            kinds = [kind for kind, _ in batch]
            rows = [row for _, row in batch]
            assert mirror.apply(kinds, rows) == []
            for kind, row in batch:
                if kind in (INSERT, UPDATE_AFTER):
                    model[row[0]] = row
                else:
                    del model[row[0]]
            if commit_each:
                backend.commit()
            groups = [("x",), ("y",), (None,)]
            assert mirror.lookup("by_group", groups) == [
                sorted(r for r in model.values() if r[1] == g[0]) for g in groups
            ]
            pairs = [(v, g) for v in range(10) for g in ("x", "y", None)]
            assert mirror.lookup("by_value_group", pairs) == [
                sorted(r for r in model.values() if (r[2], r[1]) == p) for p in pairs
            ]
            assert mirror.count() == len(model)
        backend.commit()
        assert len(backend.packed_index("r#by_group")) == len(model)
        assert len(backend.packed_index("r#by_value_group")) == len(model)
