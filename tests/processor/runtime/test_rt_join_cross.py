"""A join condition of comparisons across the sides, evaluated in C (``join_cross``):
which conditions qualify, and the same changelog and state as the per-change rules
with the compiled predicate, NULLs, copies, mixed types and every operator included."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rt_helpers import ALL, fields, inner_join_node, scan, types

from deltaflow.formats.changelog import INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.errors import EvalError
from deltaflow.processor.exprs.nodes import Call, InputRef, Literal
from deltaflow.processor.plan import Join
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.join import JoinOperator
from deltaflow.processor.runtime.join_cross import cross_comparisons

# left (id, k, v), right (k, w, x)
L = types("INT", "INT", "INT")
R = types("INT", "INT", "INT")
OUT = L + R
INT = parse_type("INT")
BOOL = parse_type("BOOLEAN")
OPS = ["=", "<>", "<", "<=", ">", ">="]


def ref(i: int) -> InputRef:
    return InputRef(INT, i)


def compare(op: str, a: int, b: int) -> Call:
    return Call(BOOL, op, (ref(a), ref(b)))


def conjunction(*terms) -> Call:
    return Call(BOOL, "AND", tuple(terms))


def test_which_conditions_are_taken_apart():
    """Comparisons of a left with a right column (either order: the operator is turned
    around) under AND, TRUE literals dropped; anything else is the predicate's."""
    got = cross_comparisons(conjunction(compare(">", 2, 4), Literal(BOOL, True)), 3)
    assert [(a, op.__name__, b) for a, op, b in got] == [(2, "gt", 1)]
    got = cross_comparisons(conjunction(compare("<", 4, 2), compare("=", 0, 5)), 3)
    assert [(a, op.__name__, b) for a, op, b in got] == [(2, "gt", 1), (0, "eq", 2)]
    assert cross_comparisons(compare("<=", 1, 2), 3) is None  # both on the left
    assert cross_comparisons(compare("<=", 3, 5), 3) is None  # both on the right
    assert cross_comparisons(Call(BOOL, "OR", (compare("<", 1, 4),)), 3) is None
    assert cross_comparisons(conjunction(compare("<", 1, 4), Literal(BOOL, False)), 3) is None
    cast = Call(INT, "CAST", (ref(1),))
    assert cross_comparisons(Call(BOOL, "<", (cast, ref(4))), 3) is None
    plus = Call(INT, "+", (ref(1), ref(4)))
    assert cross_comparisons(Call(BOOL, "=", (plus, ref(5))), 3) is None
    assert cross_comparisons(Literal(BOOL, True), 3) is None  # nothing to compare
    assert cross_comparisons(None, 3) is None


def join_node(condition, keys: bool, left_unique=(), right_unique=()) -> Join:
    unique = {"left_unique_keys": left_unique, "right_unique_keys": right_unique}
    return inner_join_node(L, R, keys, condition, **unique)


comparison_st = st.tuples(
    st.sampled_from(OPS), st.sampled_from([1, 2]), st.sampled_from([3, 4, 5]), st.booleans()
)


@st.composite
def condition_st(draw):
    terms = []
    for op, left, right, swapped in draw(st.lists(comparison_st, min_size=1, max_size=3)):
        terms.append(compare(op, right, left) if swapped else compare(op, left, right))
    if draw(st.booleans()):
        terms.insert(draw(st.integers(0, len(terms))), Literal(BOOL, True))
    return terms[0] if len(terms) == 1 else conjunction(*terms)


value_st = st.one_of(st.none(), st.integers(0, 3))
change_st = st.tuples(
    st.integers(0, 1),  # port
    st.sampled_from([0, 1, 2, 3]),  # any kind, retractions of rows never added included
    st.integers(0, 2),  # left: id; right: the row's first value
    st.one_of(st.none(), st.integers(0, 1)),  # join key, NULL included
    value_st,
    value_st,
)

SHAPES = {
    "no unique keys": {},
    "left unique": {"left_unique": ((0,),)},
    "right unique": {"right_unique": ((1,),)},
}


def _run(tmp_path_factory, node, changes, size, mode):
    from deltaflow.state.backend import StateBackend

    backend = StateBackend(tmp_path_factory.mktemp("s"))
    try:
        out = Batch()
        for start in range(0, len(changes), size):
            op = JoinOperator(node, backend, RuntimeContext())
            assert op.cross is not None and op.inner_condition
            if mode == "rules":
                op.inner_condition = False
            elif mode == "predicate":
                op.cross = None
            for port in (0, 1):
                batch = Batch()
                for p, kind, first, key, a, b in changes[start : start + size]:
                    if p == port:
                        batch.append(kind, (first, key, a) if p == 0 else (key, a, b))
                out.extend(op.process(batch, port))
            backend.commit({})
        state = [backend.table(f"3:Join:{s}").items() for s in ("left", "right")]
        return list(zip(out.kinds, out.rows, strict=True)), state
    finally:
        backend.close()


@pytest.mark.parametrize("keys", [True, False], ids=["equi", "keyless"])
@pytest.mark.parametrize("shape", list(SHAPES))
@settings(max_examples=60, deadline=None)
@given(
    condition=condition_st(),
    changes=st.lists(change_st, min_size=4, max_size=30),
    size=st.integers(1, 8),
)
def test_cross_comparisons_give_the_predicates_changelog(
    tmp_path_factory, keys, shape, condition, changes, size
):
    """The same changelog, in the same order, and the same state as the per-change rules
    and as the batch loop with the compiled predicate, across commits and restarts."""
    node = join_node(condition, keys, **SHAPES[shape])
    fast = _run(tmp_path_factory, node, changes, size, "cross")
    assert fast == _run(tmp_path_factory, node, changes, size, "rules")
    assert fast == _run(tmp_path_factory, node, changes, size, "predicate")


def test_a_one_row_side_change_meets_the_rows_its_value_holds_for(backend, ctx):
    """Q22's shape, by the definition: the customers whose balance is above the one
    average row, in the order they were added; NULL balances match nothing, a NULL
    average matches nothing, a customer held twice (no unique key) joins twice."""
    dec = parse_type("DECIMAL(15, 2)")
    avg = parse_type("DECIMAL(38, 6)")
    node = Join(
        node_id=3,
        inputs=(scan(1, [INT, dec]), scan(2, [avg])),
        fields=fields([INT, dec, avg]),
        changelog_mode=ALL,
        join_type="INNER",
        left_keys=(),
        right_keys=(),
        condition=conjunction(
            Call(BOOL, ">", (InputRef(dec, 1), InputRef(avg, 2))), Literal(BOOL, True)
        ),
    )
    op = JoinOperator(node, backend, ctx)
    assert op.cross is not None
    balances = ["5.00", "1.50", "7.25", "3.00", "9.99", "2.00", "5.00"]
    customers = [(i, Decimal(b)) for i, b in enumerate(balances)] + [(7, Decimal("6.00"))] * 2
    op.process(Batch([INSERT] * len(customers), customers), 0)

    def above(value: str) -> list[tuple]:
        return [c + (Decimal(value),) for c in customers if c[1] > Decimal(value)]

    out = op.process(Batch([INSERT], [(Decimal("4.123456"),)]), 1)
    assert out.rows == above("4.123456")
    assert out.kinds == [INSERT] * len(above("4.123456"))
    pair = [(Decimal("4.123456"),), (Decimal("5.000000"),)]
    out = op.process(Batch([UPDATE_BEFORE, UPDATE_AFTER], pair), 1)
    assert out.rows == above("4.123456") + above("5.000000")
    assert out.kinds == [UPDATE_BEFORE] * 6 + [UPDATE_AFTER] * 4
    op.process(Batch([INSERT], [(8, None)]), 0)
    out = op.process(Batch([UPDATE_BEFORE, UPDATE_AFTER], [pair[1], (None,)]), 1)
    assert out.rows == above("5.000000")  # the NULL average joins nothing
    out = op.process(Batch([UPDATE_BEFORE, UPDATE_AFTER], [(None,), (Decimal("2"),)]), 1)
    assert out.rows == above("2")  # the NULL balance left to the predicate: no match


def test_mixed_types_are_reported_by_the_predicate(backend, ctx):
    """A value the comparison cannot order (a string against an INT column: bad input
    upstream) is the compiled predicate's error, as without the fast path."""
    op = JoinOperator(join_node(compare("<", 2, 4), False), backend, ctx)
    op.process(Batch([INSERT], [(1, 0, 2)]), 0)
    with pytest.raises(EvalError):
        op.process(Batch([INSERT], [(0, "x", 0)]), 1)
