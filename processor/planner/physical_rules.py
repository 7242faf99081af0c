"""Physical rules: the decisions about how the physical plan runs, recorded as its fields.

They run over the whole job (every INSERT's sink at once, scans shared by ``node_id``),
after ``to_physical``, in order; each returns the fields it sets per ``node_id`` and the
stage builds a new frozen plan with them (``dataclasses.replace``, shared nodes rebuilt
once), so no rule changes a node another plan or INSERT holds:

- ``projection``: a Calc's computed columns that no consumer reads become typed NULLs
  (``demand.unread_projections``), as Flink trims them, before the scans' demand is taken;
- ``project``: the physical columns each scan's decoder builds (``demand``);
- ``prefilter``: the WHERE tests pushed into each scan's decoder (``prefilter``);
- ``fused_calc`` / ``fused_into``: a Calc that only selects columns runs inside the
  operator next to it (``fuse_calcs``): the GroupAggregate above it, when the Calc feeds
  it alone (the aggregate reads the Calc's input rows at the selected positions), or a
  regular Join, DeltaJoin or DeltaJoinCascade below it, when the Calc is the join's only
  consumer (the join builds its rows with just those columns).

EXPLAIN prints them (``TableSourceScan(table=[[..., orders, filter=[..], project=[..],
metadata=[]]], ...)``, ``fusedCalc=[..]``), the state fingerprint covers them, and the
runtime builds what they say.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from deltaflow.processor import plan as P
from deltaflow.processor.exprs.nested import holds_collection
from deltaflow.processor.planner.demand import demanded_columns, unread_projections
from deltaflow.processor.planner.prefilter import prefilters

Changes = dict[int, dict[str, Any]]  # node_id -> fields to set
_FUSES_CALC_ABOVE = (P.Join, P.DeltaJoin, P.DeltaJoinCascade)


def null_unread(roots: tuple[P.Node, ...], settings: dict[str, str]) -> Changes:
    return {nid: {"projection": p} for nid, p in unread_projections(roots).items()}


def push_projection(roots: tuple[P.Node, ...], settings: dict[str, str]) -> Changes:
    found = demanded_columns(roots)
    return {nid: {"project": cols} for nid, cols in found.items() if cols is not None}


def push_prefilter(roots: tuple[P.Node, ...], settings: dict[str, str]) -> Changes:
    return {nid: {"prefilter": found} for nid, found in prefilters(roots, settings).items()}


def fuse_calcs(roots: tuple[P.Node, ...], settings: dict[str, str]) -> Changes:
    """The fusions of the module docstring; a Calc fuses into one operator at most."""
    nodes, consumers = index(roots)
    sink_ids = {r.node_id for r in roots}
    out: Changes = {}

    def fuse(operator: int, calc: int) -> None:
        out[operator] = {"fused_calc": calc}
        out[calc] = {"fused_into": operator}

    for n in nodes.values():
        if type(n) is not P.GroupAggregate or type(n.inputs[0]) is not P.Calc:
            continue
        if any(holds_collection(n.inputs[0].types[k]) for k in n.group_keys):
            continue  # ARRAY / MAP keys: the runtime wraps the aggregate to make them hashable
        calc = n.inputs[0]
        alone = len(consumers[calc.node_id]) == 1 and calc.node_id not in sink_ids
        if alone and P.column_selection(calc) is not None:  # type: ignore[arg-type]
            fuse(n.node_id, calc.node_id)
    for n in nodes.values():
        above = consumers[n.node_id]
        if type(n) not in _FUSES_CALC_ABOVE or len(above) != 1:
            continue
        calc = above[0]  # type: ignore[assignment]  # a Calc when the test below holds
        taken = calc.node_id in out  # already read by an aggregate
        if type(calc) is P.Calc and not taken and P.column_selection(calc) is not None:  # type: ignore[arg-type]
            fuse(n.node_id, calc.node_id)
    return out


PHYSICAL_RULES: tuple[Callable[[tuple[P.Node, ...], dict[str, str]], Changes], ...] = (
    null_unread,
    push_projection,
    push_prefilter,
    fuse_calcs,
)


def apply_physical_rules(roots: tuple[P.Node, ...], settings: dict[str, str]) -> tuple:
    """``roots`` (sinks, or a query's root for EXPLAIN) with every rule's fields set."""
    for rule in PHYSICAL_RULES:
        roots = rebuild(roots, rule(roots, settings))
    return roots


def rebuild(roots: tuple[P.Node, ...], changes: Changes) -> tuple:
    """New frozen nodes for the changed ones and every node above them; a node shared by
    several roots is rebuilt once, so the result shares it too."""
    memo: dict[int, P.Node] = {}

    def visit(node: P.Node) -> P.Node:
        if node.node_id not in memo:
            inputs = tuple(visit(c) for c in node.inputs)
            fields = changes.get(node.node_id, {})
            same = all(a is b for a, b in zip(inputs, node.inputs, strict=True))
            memo[node.node_id] = (
                node if same and not fields else replace(node, inputs=inputs, **fields)
            )
        return memo[node.node_id]

    return tuple(visit(r) for r in roots)


def index(roots: tuple[P.Node, ...]) -> tuple[dict[int, P.Node], dict[int, list[P.Node]]]:
    """Every node by node_id, and each node's consumers (one entry per consumer)."""
    nodes: dict[int, P.Node] = {}
    consumers: dict[int, list[P.Node]] = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node.node_id in nodes:
            continue
        nodes[node.node_id] = node
        consumers.setdefault(node.node_id, [])
        for child in node.inputs:
            consumers.setdefault(child.node_id, []).append(node)
            stack.append(child)
    return nodes, consumers
