"""Demanded columns: which columns of each source scan the job reads (projection pushdown).

A scan whose every consumer is a ``Calc`` needs only the columns those Calcs read
in their projections and conditions, plus its primary key and the columns its
watermark reads. Any other consumer (a join, an aggregate, ChangelogNormalize, a
sink) may read a whole row, so it demands every column. The decoders leave the
columns nobody demands as None without converting them, as Flink's projection
pushdown leaves them out of the row.
"""

from __future__ import annotations

from deltaflow.processor.exprs.nodes import input_refs
from deltaflow.processor.plan import Calc, JobPlan, Node, TableSourceScan


def _consumers(plan: JobPlan) -> dict[int, list[Node]]:
    """Scan node_id -> the distinct nodes that read it."""
    out: dict[int, dict[int, Node]] = {}
    seen: set[int] = set()
    stack: list[Node] = list(plan.sinks)
    while stack:
        node = stack.pop()
        if node.node_id in seen:
            continue
        seen.add(node.node_id)
        for child in node.inputs:
            if isinstance(child, TableSourceScan):
                out.setdefault(child.node_id, {})[node.node_id] = node
            stack.append(child)
    return {scan: list(nodes.values()) for scan, nodes in out.items()}


def _read_by(node: Node) -> set[int] | None:
    """Column indexes of its input a consumer reads; None for all."""
    if not isinstance(node, Calc) or len(node.inputs) != 1:
        return None
    used: set[int] = set()
    for expr in node.projection:
        used |= input_refs(expr)
    if node.condition is not None:
        used |= input_refs(node.condition)
    return used


def demanded_columns(plan: JobPlan) -> dict[int, frozenset[str] | None]:
    """Scan node_id -> names of the physical columns its consumers read (None: all)."""
    out: dict[int, frozenset[str] | None] = {}
    for scan_id, consumers in _consumers(plan).items():
        scan = next(c for c in consumers[0].inputs if c.node_id == scan_id)
        assert isinstance(scan, TableSourceScan)
        used: set[int] = set()
        for consumer in consumers:
            read = _read_by(consumer)
            if read is None:
                used = set(range(len(scan.fields)))
                break
            used |= read
        if scan.watermark is not None:
            used |= input_refs(scan.watermark.expr)
            if scan.watermark.rowtime >= 0:
                used.add(scan.watermark.rowtime)
        names = {scan.fields[i].name for i in used if i < len(scan.fields)}
        names |= set(scan.primary_key)
        physical = {f.name for f in scan.physical}
        out[scan_id] = None if physical <= names else frozenset(names & physical)
    return out
