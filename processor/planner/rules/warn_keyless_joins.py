"""Warn at plan time about a join with no equality between two updating inputs: every change
on one side is matched against every row of the other, and both sides' whole histories stay
in state (Flink runs it the same way, in one task). The warning names the tables of each
side so the user can add the missing join condition."""

from __future__ import annotations

import warnings

from deltaflow.processor.planner import logical as L


class KeylessJoinWarning(UserWarning):
    """A join planned without join keys between two updating inputs."""


def warn_keyless_joins(sink: L.Sink, settings: dict[str, str]) -> L.Sink:
    for join in _keyless_joins(sink, set()):
        left, right = (", ".join(_tables(side)) or "a subquery" for side in join.inputs)
        warnings.warn(
            f"the {join.join_type} join of [{left}] with [{right}] has no equality between its "
            "two sides, and both sides are updating: each change is joined with every row of "
            "the other side and both keep all their rows in state; add an equality of a column "
            "of each side to WHERE or ON",
            KeylessJoinWarning,
            stacklevel=2,
        )
    return sink


def _keyless_joins(node: L.LNode, seen: set[int]) -> list[L.Join]:
    if id(node) in seen:
        return []
    seen.add(id(node))
    out = [j for c in node.inputs for j in _keyless_joins(c, seen)]
    if (
        isinstance(node, L.Join)
        and not node.left_keys
        and all(c.mode != L.INSERT_ONLY for c in node.inputs)
        and not any(() in c.keys for c in node.inputs)  # a side of one row at most
    ):
        out.append(node)
    return out


def _tables(node: L.LNode) -> list[str]:
    if isinstance(node, L.Scan):
        return [node.table.name]
    names: list[str] = []
    for c in node.inputs:
        names += [n for n in _tables(c) if n not in names]
    return names
