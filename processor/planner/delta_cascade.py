"""Inputs of delta joins and how they are looked up, for single and cascading delta joins.

An input of a delta join is a mirrored source (a scan under at most one Calc), a lower
delta join, or a deterministic Calc over a lower delta join: a cascade such as
``A JOIN B ON .. JOIN C ON ..`` or ``(A JOIN B) JOIN (C JOIN D)``. Each input is looked up
by its join keys (the other input's changes look it up); a lower join is looked up through
one of its own inputs (the one holding part of the key, left first), then the other by
their join keys, down to source indexes. ``plan_lookup`` records every lookup an input
needs, choosing the source indexes, or says why one is impossible.
"""

from __future__ import annotations

from deltaflow.processor.exprs.nodes import InputRef
from deltaflow.processor.plan import Key
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.delta_nodes import (
    DeltaJoin,
    ViewPlan,
    choose_index,
    non_deterministic,
    read_source,
)


def delta_input(child: L.LNode, what: str) -> ViewPlan | str:
    """``child`` as an input of a delta join, or why it cannot be one."""
    if isinstance(child, DeltaJoin) and child.views is not None:
        return ViewPlan("join", child, list(child.views))
    if isinstance(child, L.Calc) and not isinstance(child.inputs[0], L.Scan):
        below = delta_input(child.inputs[0], what)
        if isinstance(below, str):
            return below
        for expr in [*child.projection, child.condition]:
            fn = non_deterministic(expr)
            if fn:
                return f"the projection or filter of the {what} calls the non-deterministic function {fn}"
        return ViewPlan("calc", child, [below])
    if isinstance(child, L.Join):
        return f"the {what} is a join that is not a delta join itself"
    read = read_source(child, (), what)
    if isinstance(read, str):
        return read
    return ViewPlan("source", child, [], read=read)


def plan_lookup(view: ViewPlan, cols: Key, strategy: str, what: str) -> str | None:
    """Records how ``view`` is looked up by its columns ``cols``; or why it cannot be."""
    if cols in view.lookups:
        return None
    if view.kind == "source":
        read = read_source(view.node, cols, what)
        if isinstance(read, str):
            return read
        reason = choose_index(read, strategy, constants=True)
        if reason is None:
            view.lookups[cols] = read
        return reason
    if view.kind == "calc":
        return _calc_lookup(view, cols, strategy, what)
    width = view.inputs[0].width
    first = None
    for via in (0, 1):
        positions = tuple(i for i, c in enumerate(cols) if (c < width) == (via == 0))
        if not positions:
            continue
        sub = tuple(cols[i] - (0 if via == 0 else width) for i in positions)
        reason = plan_lookup(view.inputs[via], sub, strategy, what)
        if reason is None:
            view.lookups[cols] = (via, positions, sub)
            return None
        first = first or reason
    return first


def _calc_lookup(view: ViewPlan, cols: Key, strategy: str, what: str) -> str | None:
    calc = view.node
    assert isinstance(calc, L.Calc)
    proj = calc.projection
    positions = tuple(i for i, c in enumerate(cols) if isinstance(proj[c], InputRef))
    if not positions:
        names = ", ".join(calc.fields[c].name for c in cols)
        return f"the {what} key [{names}] is computed from joined rows, not a column of a source"
    sub = tuple(proj[cols[i]].index for i in positions)  # type: ignore[attr-defined]
    reason = plan_lookup(view.inputs[0], sub, strategy, what)
    if reason is None:
        view.lookups[cols] = (0, positions, sub)
    return reason


def lookup_names(view: ViewPlan, cols: Key, qualify: bool = False) -> tuple[str, ...]:
    """The index columns a planned lookup reads: a source's own names, or for a lower join
    ``table.column`` of the source index it starts from."""
    found = view.lookups[cols]
    if view.kind == "source":
        names = found.index_names
        table = found.scan.table.name
        return tuple(f"{table}.{n}" for n in names) if qualify else names
    via, _, sub = found
    return lookup_names(view.inputs[via], sub, True)


def leaves(view: ViewPlan) -> list[ViewPlan]:
    if view.kind == "source":
        return [view]
    return [leaf for child in view.inputs for leaf in leaves(child)]
