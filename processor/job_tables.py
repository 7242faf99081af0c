"""The plan's tables as the connectors see them: the source scans of a plan, and the
``TableSpec`` of each source, sink and looked-up table."""

from __future__ import annotations

from deltaflow.connectors.base import TableSpec
from deltaflow.processor.plan import JobPlan, LookupJoin, Node, Sink, TableSourceScan


def scans_of(plan: JobPlan) -> list[TableSourceScan]:
    """Every source scan of the plan, once each (scans are shared by node_id)."""
    seen: dict[int, TableSourceScan] = {}
    stack: list[Node] = list(plan.sinks)
    while stack:
        node = stack.pop()
        if isinstance(node, TableSourceScan):
            seen.setdefault(node.node_id, node)
        stack.extend(node.inputs)
    return [seen[k] for k in sorted(seen)]


# Table options the job applies itself (as Flink's planner does), not the connector.
FRAMEWORK_OPTIONS = ("scan.watermark.idle-timeout",)


def source_spec(scan: TableSourceScan, pushed: bool = True) -> TableSpec:
    """What the scan's source reads, with the columns and WHERE tests the plan pushed into
    its decoder (``project``, ``prefilter``: processor/planner/physical_rules.py) unless
    not ``pushed`` (every row whole)."""
    return TableSpec(
        name=scan.table,
        options={k: v for k, v in scan.options.items() if k not in FRAMEWORK_OPTIONS},
        physical=[(f.name, f.type) for f in scan.physical],
        metadata=list(scan.metadata),
        primary_key=list(scan.primary_key),
        demanded=None if scan.project is None or not pushed else frozenset(scan.project),
        prefilter=scan.prefilter if pushed else None,
    )


def sink_spec(sink: Sink) -> TableSpec:
    return TableSpec(
        name=sink.table,
        options=dict(sink.options),
        physical=[(f.name, f.type) for f in sink.physical],
        primary_key=list(sink.primary_key),
    )


LOOKUP_PREFIX = "lookup:"


def lookup_spec(node: LookupJoin) -> TableSpec:
    """The looked-up table of a lookup join, read as a changelog into the join's mirror."""
    return TableSpec(
        name=node.table,
        options=dict(node.options),
        physical=[(f.name, f.type) for f in node.table_fields],
    )


def describe_plan(plan: JobPlan) -> str:
    return ", ".join(s.table for s in plan.sinks)
