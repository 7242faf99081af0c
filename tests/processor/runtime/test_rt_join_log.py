"""Regular join sides that only gain rows (insert-only input, not the outer side, no
unique key): their rows are appended to a log, never read back when rows arrive, and
read as entries (identical rows counted as copies, first addition first) to join the
other side's changes. Checked against a model of the join, across commits, a restart
from the last commit, and small caches that start over."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import (
    ALL,
    INSERT_ONLY,
    fields,
    parse_changelog,
    run_with_actions,
    scan,
    show,
    types,
)

from deltaflow.formats.changelog import INSERT, Batch, apply_changelog
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.nodes import Call, InputRef
from deltaflow.processor.plan import Join
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.join import JoinOperator
from deltaflow.state.backend import StateBackend

L = types("INT", "STRING")
R = types("INT", "STRING")
OUT = L + R


def join_node(
    join_type: str, left_mode=INSERT_ONLY, right_mode=INSERT_ONLY, keyed=True, condition=False
) -> Join:
    """``condition``: the left row's string is at most the right row's."""
    s = parse_type("STRING")
    return Join(
        node_id=3,
        inputs=(scan(1, L, left_mode), scan(2, R, right_mode)),
        fields=fields(OUT),
        changelog_mode=ALL,
        join_type=join_type,
        left_keys=(0,) if keyed else (),
        right_keys=(0,) if keyed else (),
        condition=(
            Call(parse_type("BOOLEAN"), "<=", (InputRef(s, 1), InputRef(s, 3)))
            if condition
            else None
        ),
    )


def test_rows_are_logged_and_joined_as_copies_in_first_addition_order(backend, ctx):
    op = JoinOperator(join_node("INNER"), backend, ctx)
    assert all(side.log is not None for side in op.sides)
    steps = [
        (0, "+I[1, a]\n+I[1, b]\n+I[1, a]\n+I[2, c]\n+I[null, n]"),
        (1, "+I[1, x]"),
        (1, "+I[1, x]\n+I[3, z]"),
        (0, "+I[1, b]"),
    ]
    out = []
    for port, text in steps:
        out += show(op.process(parse_changelog(text, L if port == 0 else R), port), OUT)
        backend.commit({})
    # x meets a twice (two copies) then b; the second x the same; the new b meets both x
    assert out == [
        "+I[1, a, 1, x]",
        "+I[1, a, 1, x]",
        "+I[1, b, 1, x]",
        "+I[1, a, 1, x]",
        "+I[1, a, 1, x]",
        "+I[1, b, 1, x]",
        "+I[1, b, 1, x]",
        "+I[1, b, 1, x]",
    ]
    # no entries per key were written; a NULL key's row is not kept
    assert backend.table("3:Join:left").items() == []
    logged = [row for _, rows in backend.table("3:Join:left:log").items() for row in rows]
    assert sorted(logged) == sorted([(1, "a"), (1, "b"), (1, "a"), (2, "c"), (1, "b")])


def test_a_retraction_on_an_insert_only_input_is_refused(backend, ctx):
    op = JoinOperator(join_node("INNER"), backend, ctx)
    with pytest.raises(AssertionError, match="insert-only input retracted"):
        op.process(parse_changelog("-D[1, a]", L), 0)


def test_outer_sides_and_updating_inputs_keep_entries_per_key(backend, ctx):
    op = JoinOperator(join_node("LEFT", right_mode=ALL), backend, ctx)
    assert op.sides[0].log is None  # the outer side counts its matches
    assert op.sides[1].log is None  # an updating input retracts
    op = JoinOperator(join_node("LEFT"), backend, ctx)
    assert op.sides[0].log is None and op.sides[1].log is not None


def test_a_state_written_with_entries_per_key_keeps_that_layout(backend, ctx):
    old = JoinOperator(join_node("INNER", ALL, ALL), backend, ctx)
    old.process(parse_changelog("+I[1, a]\n+I[1, a]", L), 0)
    backend.commit({})
    op = JoinOperator(join_node("INNER"), backend, ctx)
    assert op.sides[0].log is None and op.sides[1].log is not None
    out = show(op.process(parse_changelog("+I[1, x]", R), 1), OUT)
    assert out == ["+I[1, a, 1, x]", "+I[1, a, 1, x]"]


def model(join_type: str, steps, keyed: bool, condition: bool) -> tuple[list, list]:
    """The join's changelog and final rows, by its definition, for insert-only inputs of
    an INNER join, or a LEFT join whose right (inner) side is insert-only: a row meets the
    other side's rows of its key so far (the condition holding), in first-addition order,
    once per copy."""
    sides: tuple[dict, dict] = ({}, {})  # key -> {row: copies}, insertion order

    def meets(left: tuple, right: tuple) -> bool:
        return not condition or left[1] <= right[1]

    changelog = []
    for port, rows in steps:
        for row in rows:
            mine, other = sides[port], sides[1 - port]
            key = (row[0],) if keyed else ()
            matches = {} if None in key else other.get(key, {})
            matches = {
                o: n for o, n in matches.items() if meets(*((row, o) if port == 0 else (o, row)))
            }
            if join_type == "LEFT" and port == 1:
                for left, copies in matches.items():
                    had = [r for r in sides[1].get(key, {}) if meets(left, r)]
                    if not had:  # its first match: the padding goes
                        changelog += [("-D", left + (None, None))] * copies
            if join_type == "LEFT" and port == 0 and not matches:
                changelog.append(("+I", row + (None, None)))
            for o, copies in matches.items():
                changelog += [("+I", row + o if port == 0 else o + row)] * copies
            if None not in key or (join_type == "LEFT" and port == 0):
                bucket = mine.setdefault(key, {})
                bucket[row] = bucket.get(row, 0) + 1
    final = []
    for key, rows in sides[0].items():
        for row, copies in rows.items():
            matches = {} if None in key else sides[1].get(key, {})
            matches = {o: n for o, n in matches.items() if meets(row, o)}
            if not matches and join_type == "LEFT":
                final += [row + (None, None)] * copies
            for o, n in matches.items():
                final += [row + o] * (copies * n)
    return changelog, sorted(final, key=repr)


step_st = st.lists(
    st.tuples(
        st.integers(0, 1),
        st.lists(
            st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.sampled_from(["a", "b"])),
            min_size=1,
            max_size=5,
        ),
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=120, deadline=None)
@given(
    join_type=st.sampled_from(["INNER", "LEFT"]),
    steps=step_st,
    actions=st.lists(st.sampled_from(["none", "commit", "restart", "crash"]), max_size=14),
    limit=st.sampled_from([2, 8, 200_000]),
    keyed=st.booleans(),
    condition=st.booleans(),
)
def test_log_sides_join_as_the_model_across_commits_restarts_and_crashes(
    tmp_path_factory, join_type, steps, actions, limit, keyed, condition
):
    """After each step: nothing, a commit, a commit and a restart (a new operator on the
    reopened state), or a crash (a restart from the last commit, the steps since
    replayed, their first output taken back). ``limit``: the cache's size (2 and 8 make
    it start over, and a restart reads a small state whole or not at all). Without keys
    every row has the empty key (the log's chunks are then keyed by the seq alone)."""
    path = tmp_path_factory.mktemp("s")
    left_mode = ALL if join_type == "LEFT" else INSERT_ONLY
    node = join_node(join_type, left_mode, INSERT_ONLY, keyed, condition)

    def start() -> tuple[StateBackend, JoinOperator]:
        backend = StateBackend(path)
        op = JoinOperator(node, backend, RuntimeContext())
        for side in op.sides:
            side.cache_limit = limit
        return backend, op

    def run(op: JoinOperator, port: int, rows: list) -> list:
        produced = op.process(Batch([INSERT] * len(rows), list(rows)), port)
        return list(zip(produced.kinds, produced.rows, strict=True))

    out, op = run_with_actions(steps, actions, start, run)
    assert op.sides[1].log is not None
    assert (op.sides[0].log is not None) == (join_type == "INNER")
    changelog, final = model(join_type, steps, keyed, condition)
    kinds = {0: "+I", 3: "-D"}
    assert [(kinds[k], row) for k, row in out] == changelog
    rows = apply_changelog([k for k, _ in out], [r for _, r in out])
    assert sorted(rows, key=repr) == final
