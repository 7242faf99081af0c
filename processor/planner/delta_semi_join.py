"""Delta semi / anti joins: a semi or anti join of two mirrored sources looked up in the other
side's mirror instead of keeping join state (``table.optimizer.delta-join.strategy``, as for
regular joins: ``rules/rewrite_delta_join``).

Eligible: equi keys between the two sides (each a source with a primary key under at most
one Calc, the keys plain source columns, an index serving each side's keys), keys compared
with ``=`` (INTERSECT / EXCEPT match NULL to NULL, which an index lookup does not), no
non-deterministic function in the condition; not under EVENTUAL (an anti join's output is
retractions as much as additions). A semi join left regular says why on its EXPLAIN line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltaflow.processor import plan as P
from deltaflow.processor.plan import Key
from deltaflow.processor.planner.delta_cascade import delta_input, lookup_names, plan_lookup
from deltaflow.processor.planner.delta_nodes import ViewPlan, mirror_side, non_deterministic
from deltaflow.processor.planner.semi_join import SemiJoin, describe_semi_join


@dataclass(eq=False)
class DeltaSemiJoin(SemiJoin):
    """A SemiJoin answered from the sources' mirrors (index columns and their key positions)."""

    left_index: Key = ()
    right_index: Key = ()
    left_positions: Key = ()
    right_positions: Key = ()
    left_fixed: tuple[tuple[int, object], ...] = ()
    right_fixed: tuple[tuple[int, object], ...] = ()
    index_names: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())


def eligible(node: SemiJoin, strategy: str) -> tuple[ViewPlan, ViewPlan] | str:
    """The two inputs as planned lookups, or why the semi join cannot be a delta join."""
    if strategy == "EVENTUAL":
        return "EVENTUAL delta joins are INNER joins, this one is a semi / anti join"
    if not node.left_keys:
        return "it has no equality between the two sides"
    if any(node.null_safe):
        return "its keys match NULL to NULL (INTERSECT / EXCEPT), which index lookups do not"
    views = []
    for child, what in zip(node.inputs, ("left input", "right input"), strict=True):
        view = delta_input(child, what)
        if isinstance(view, str):
            return view
        if view.kind != "source":
            return f"the {what} is not a source table read through projections and filters"
        views.append(view)
    left, right = views
    lscan, rscan = (v.read.scan for v in views)  # type: ignore[union-attr]
    if lscan.table.name == rscan.table.name and lscan is not rscan:
        return f"it reads table {lscan.table.name} through differently hinted scans"
    fn = non_deterministic(node.condition)
    if fn:
        return f"the join condition calls the non-deterministic function {fn}"
    reason = plan_lookup(left, node.left_keys, "FORCE", "left input")
    return reason or plan_lookup(right, node.right_keys, "FORCE", "right input") or (left, right)


def delta_semi_join(node: SemiJoin, left: ViewPlan, right: ViewPlan) -> DeltaSemiJoin:
    lread, rread = left.lookups[node.left_keys], right.lookups[node.right_keys]
    return DeltaSemiJoin(
        node.inputs,
        node.fields,
        anti=node.anti,
        left_keys=node.left_keys,
        right_keys=node.right_keys,
        condition=node.condition,
        null_safe=node.null_safe,
        names=node.names,
        left_index=lread.index,
        right_index=rread.index,
        left_positions=lread.positions,
        right_positions=rread.positions,
        left_fixed=lread.fixed,
        right_fixed=rread.fixed,
        index_names=(lookup_names(left, node.left_keys), lookup_names(right, node.right_keys)),
    )


def describe_delta_semi_join(node: DeltaSemiJoin, render) -> str:  # noqa: ANN001
    line = describe_semi_join(node, render)
    head, rest = line.split("], select=[", 1)
    select = rest.split("], leftInputSpec=", 1)[0]
    left, right = (", ".join(names) for names in node.index_names)
    return f"Delta{head}], leftIndex=[{left}], rightIndex=[{right}], select=[{select}])"


def build_delta_semi_join(node: DeltaSemiJoin, base: dict[str, Any]) -> P.Node:
    left, left_scan = mirror_side(
        base["inputs"][0], node.left_index, node.left_positions, node.left_fixed
    )
    right, right_scan = mirror_side(
        base["inputs"][1], node.right_index, node.right_positions, node.right_fixed
    )
    return P.DeltaSemiJoin(
        **{**base, "inputs": (left_scan, right_scan)},
        anti=node.anti,
        left_keys=node.left_keys,
        right_keys=node.right_keys,
        condition=node.condition,
        null_safe=node.null_safe or (False,) * len(node.left_keys),
        left=left,
        right=right,
    )
