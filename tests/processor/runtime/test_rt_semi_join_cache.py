"""Semi / anti join with its entries kept decoded between batches (and, without TTL, the
table taking the entries themselves): the changelog of Flink's rules, change by change,
across commits, restarts, crashes and a cache that starts over."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import run_with_actions
from test_rt_semi_join import semi_node

from deltaflow.formats.changelog import ADDS, DELETE, INSERT, Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.nodes import Call, InputRef
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.semi_join import SemiJoinOperator
from deltaflow.state.backend import StateBackend


def model(anti: bool, condition: bool, steps) -> tuple[list, dict, dict]:
    """The changelog by the operator's rules (the module docstring of ``semi_join``), one
    change at a time, with plain dicts: left key -> {row: [copies, matches]}, right key ->
    {row: copies}; a NULL key matches nothing and is not kept. Returns the changelog and
    the two sides' final rows."""
    left: dict = {}
    right: dict = {}

    def holds(lrow: tuple, rrow: tuple) -> bool:
        return not condition or lrow[1] <= rrow[1]

    out = []
    for port, changes in steps:
        for kind, row in changes:
            key = row[0]
            adds = ADDS[kind]
            if port == 0:
                if key is None:
                    if anti:
                        out.append((kind, row))
                    continue
                count = sum(n for r, n in right.get(key, {}).items() if holds(row, r))
                if (count > 0) != anti:
                    out.append((kind, row))
                entries = left.setdefault(key, {})
                if adds:
                    if row in entries:
                        entries[row][0] += 1
                    else:
                        entries[row] = [1, count]
                elif row in entries:
                    entries[row][0] -= 1
                    if entries[row][0] == 0:
                        del entries[row]
                continue
            if key is None:
                continue
            rows = right.setdefault(key, {})
            if adds:
                rows[row] = rows.get(row, 0) + 1
            elif row not in rows:
                continue
            else:
                rows[row] -= 1
                if rows[row] == 0:
                    del rows[row]
            for lrow, entry in left.get(key, {}).items():
                if not holds(lrow, row):
                    continue
                entry[1] += 1 if adds else -1
                if entry[1] == (1 if adds else 0):
                    emit = (DELETE if adds else INSERT) if anti else kind
                    out += [(emit, lrow)] * entry[0]
    return out, left, right


change_st = st.tuples(
    st.sampled_from([0, 1, 2, 3]),  # any kind, retractions of rows never added included
    st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.sampled_from(["a", "b", "c"])),
)
step_st = st.lists(
    st.tuples(st.integers(0, 1), st.lists(change_st, min_size=1, max_size=6)),
    min_size=1,
    max_size=14,
)


@settings(max_examples=120, deadline=None)
@given(
    anti=st.booleans(),
    condition=st.booleans(),
    steps=step_st,
    actions=st.lists(st.sampled_from(["none", "commit", "restart", "crash"]), max_size=14),
    limit=st.sampled_from([1, 2, 200_000]),
    ttl=st.booleans(),
)
def test_cached_sides_follow_the_rules_across_commits_restarts_and_crashes(
    tmp_path_factory, anti, condition, steps, actions, limit, ttl
):
    """After each step: nothing, a commit, a commit and a restart (a new operator on the
    reopened state), or a crash (a restart from the last commit, the steps since replayed,
    their first output taken back). ``limit``: the cache's size (1 and 2 make it start
    over within a batch's keys and between batches); with state TTL the entries are
    listed at each put instead of taken by the table, and nothing is cached."""
    path = tmp_path_factory.mktemp("s")
    string = parse_type("STRING")
    le = Call(parse_type("BOOLEAN"), "<=", (InputRef(string, 1), InputRef(string, 3)))
    node = semi_node(anti, le if condition else None)

    def start() -> tuple[StateBackend, SemiJoinOperator]:
        backend = StateBackend(path)
        ctx = RuntimeContext(state_ttl_ms=3_600_000 if ttl else 0)
        op = SemiJoinOperator(node, backend, ctx)
        for side in op.sides:
            assert side.live != ttl and (side.cache_limit == 0) == ttl
            if not ttl:
                side.cache_limit = limit
        return backend, op

    def run(op: SemiJoinOperator, port: int, changes: list) -> list:
        produced = op.process(Batch([k for k, _ in changes], [r for _, r in changes]), port)
        return list(zip(produced.kinds, produced.rows, strict=True))

    out, _ = run_with_actions(steps, actions, start, run, commit_at_end=True)
    backend, op = start()  # the state as the end left it, through the sides' typed tables
    try:
        stored = [dict(side.table.items()) for side in op.sides]
    finally:
        backend.close()
    changelog, left, right = model(anti, condition, steps)
    assert out == changelog
    # the state as stored: [(row, copies, matches), ...] per key, in entry order; a key
    # left without rows is deleted
    assert stored[0] == {
        (k,): [(r, n, m) for r, (n, m) in rows.items()] for k, rows in left.items() if rows
    }
    assert {k: sorted((r, n) for r, n, _ in v) for k, v in stored[1].items()} == {
        (k,): sorted(rows.items()) for k, rows in right.items() if rows
    }
