"""Hypothesis strategies of plans of steps on an IndexedTable, for the model tests."""

from __future__ import annotations

from hypothesis import strategies as st

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE

KINDS = [INSERT, UPDATE_AFTER, UPDATE_BEFORE, DELETE]


def plans(keys: st.SearchStrategy, others: list[str], max_size: int) -> st.SearchStrategy:
    """Lists of steps: ("apply", [(kind, key, group 0-3, "a"|"b"), ...]), ("get", [key,
    ...]), ("lookup", [group, ...]) and (name, None) for each name of ``others``."""
    changes = st.lists(
        st.tuples(st.sampled_from(KINDS), keys, st.integers(0, 3), st.sampled_from(["a", "b"])),
        max_size=12,
    )
    return st.lists(
        st.one_of(
            st.tuples(st.just("apply"), changes),
            st.tuples(st.just("get"), st.lists(keys, max_size=6)),
            st.tuples(st.just("lookup"), st.lists(st.integers(0, 3), max_size=3)),
            st.tuples(st.sampled_from(others), st.none()),
        ),
        max_size=max_size,
    )
