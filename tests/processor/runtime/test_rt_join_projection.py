"""A column-selecting Calc above a regular join is folded into it: the join builds its
output rows with just the selected columns, the Calc passes batches through, and the
changelog is the one of the join followed by the Calc."""

from __future__ import annotations

import pytest
from rt_helpers import ALL, fields, parse_changelog, print_sink, scan, show, types

from deltaflow.formats.changelog import Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.nodes import Call, InputRef, Literal
from deltaflow.processor.plan import Calc, JobPlan, Join
from deltaflow.processor.planner.physical_rules import apply_physical_rules
from deltaflow.processor.runtime.graph import Graph
from deltaflow.processor.runtime.simple import PassThrough

# orders (id, item, qty) unique on id; items (item, name) unique on item
L = types("INT", "INT", "INT")
R = types("INT", "STRING")
OUT = L + R
PICKED = types("STRING", "INT", "INT")  # name, id, qty


def planned(sinks: tuple) -> JobPlan:
    """A hand-built plan through the planner's physical rules, which decide the fusions."""
    return JobPlan(sinks=apply_physical_rules(sinks, {}))


def join(join_type: str) -> Join:
    return Join(
        node_id=3,
        inputs=(scan(1, L), scan(2, R)),
        fields=fields(OUT),
        changelog_mode=ALL,
        join_type=join_type,
        left_keys=(1,),
        right_keys=(0,),
        left_unique_keys=((0,),),
        right_unique_keys=((0,),),
    )


def pick(child, condition=None) -> Calc:
    """Calc(select=[name, id, qty]): columns of both sides, in another order."""
    refs = ((4, OUT[4]), (0, OUT[0]), (2, OUT[2]))
    return Calc(
        node_id=4,
        inputs=(child,),
        fields=fields(PICKED),
        changelog_mode=ALL,
        projection=tuple(InputRef(t, i) for i, t in refs),
        condition=condition,
    )


def run(graph: Graph, sink_id: int = 5) -> list[str]:
    out = []
    steps = [
        (1, "+I[1, 7, 2]\n+I[2, 7, 5]\n+I[3, 8, 1]"),
        (2, "+I[7, pen]\n+I[9, cup]"),
        (1, "-U[1, 7, 2]\n+U[1, 7, 3]\n-D[3, 8, 1]"),
        (2, "-U[7, pen]\n+U[7, ink]"),
    ]
    for scan_id, text in steps:
        got = graph.push(scan_id, parse_changelog(text, L if scan_id == 1 else R))
        out += show(got.get(sink_id) or Batch(), PICKED)
    return out


# Order 1's update re-enters it after order 2 under item 7, so item 7's update meets 2, 1.
INNER = [
    "+I[pen, 1, 2]",
    "+I[pen, 2, 5]",
    "-U[pen, 1, 2]",
    "+U[pen, 1, 3]",
    "-U[pen, 2, 5]",
    "-U[pen, 1, 3]",
    "+U[ink, 2, 5]",
    "+U[ink, 1, 3]",
]
# Flink's LEFT join: the outer side's changes are +I/-D; a matched inner-side change first
# retracts (or restores) the null-padded rows, and joined rows are +I when the other side
# is outer.
LEFT = [
    "+I[null, 1, 2]",
    "+I[null, 2, 5]",
    "+I[null, 3, 1]",
    "-D[null, 1, 2]",
    "-D[null, 2, 5]",
    "+I[pen, 1, 2]",
    "+I[pen, 2, 5]",
    "-D[pen, 1, 2]",
    "+I[pen, 1, 3]",
    "-D[null, 3, 1]",
    "-U[pen, 2, 5]",
    "-U[pen, 1, 3]",
    "+I[null, 2, 5]",
    "+I[null, 1, 3]",
    "-D[null, 2, 5]",
    "-D[null, 1, 3]",
    "+I[ink, 2, 5]",
    "+I[ink, 1, 3]",
]


@pytest.mark.parametrize(("join_type", "expected"), [("INNER", INNER), ("LEFT", LEFT)])
def test_a_column_selecting_calc_is_folded_into_the_join(backend, join_type, expected):
    calc = pick(join(join_type))
    graph = Graph(planned((print_sink(5, calc),)), backend)
    assert isinstance(graph.ops[4], PassThrough)
    assert run(graph) == expected


def test_a_filtering_calc_above_a_join_stays_its_own_operator(backend):
    b = parse_type("BOOLEAN")
    positive = Call(b, ">", (InputRef(OUT[2], 2), Literal(OUT[2], 2)))
    calc = pick(join("INNER"), condition=positive)
    graph = Graph(planned((print_sink(5, calc),)), backend)
    assert not isinstance(graph.ops[4], PassThrough)
    assert run(graph) == [r for r in INNER if not r.endswith(", 2]")]


def test_a_join_read_by_two_nodes_is_not_folded(backend):
    node = join("INNER")
    calc = pick(node)
    graph = Graph(planned((print_sink(5, calc), print_sink(6, node))), backend)
    assert not isinstance(graph.ops[4], PassThrough)
    assert run(graph) == INNER
