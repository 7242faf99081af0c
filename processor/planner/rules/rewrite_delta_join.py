"""``table.optimizer.delta-join.strategy``: a regular join of two mirrored sources becomes a
DeltaJoin, which keeps no join state and looks each change up in the other side's mirror.

Values: NONE never rewrites. AUTO (the default, as in Flink) rewrites only when both tables
declare an index on the join key with ``'bucket.key'`` (Flink rewrites only sources whose
storage offers lookups, i.e. Fluss tables, never Kafka ones, so plans of existing jobs stay
Flink's); when AUTO is set explicitly, a join left alone says why on its EXPLAIN line. FORCE
rewrites every join, deriving the indexes it needs, and fails with the reason when a join is
not eligible. EVENTUAL (VVR) is FORCE with VVR's eventual output: only +I/+U, retractions
are not emitted, so a stale joined row stays until overwritten by its key.

Eligible: an equi-join whose inputs are each a changelog source with a primary key under at
most one Calc (projections and filters, merged), join keys that are plain source columns,
and no non-deterministic function in those Calcs or in the join condition. Both inputs may
read the same scan (a self-join); two differently hinted scans of one table may not.
EVENTUAL also needs an INNER join and, unless
``table.optimizer.delta-join.ignore-non-unique-key-filter`` = true, no filter on columns
outside the primary key (an update moving a row out of such a filter would leave it stale).
"""

from __future__ import annotations

from deltaflow.formats.errors import PlanError
from deltaflow.processor.exprs.nodes import input_refs
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.delta_nodes import (
    DeltaJoin,
    SourceRead,
    UnrewrittenJoin,
    choose_index,
    non_deterministic,
    read_source,
    strategy_of,
)
from deltaflow.processor.planner.explain import describe
from deltaflow.processor.planner.traits import derive

STRATEGY = "table.optimizer.delta-join.strategy"
IGNORE_FILTER = "table.optimizer.delta-join.ignore-non-unique-key-filter"


def rewrite_delta_join(node: L.LNode, settings: dict[str, str]) -> L.LNode:
    strategy = strategy_of(settings, STRATEGY)
    if strategy == "NONE":
        return node
    node.inputs = [rewrite_delta_join(c, settings) for c in node.inputs]
    if type(node) is not L.Join:
        return node
    reads = _eligible(node, strategy, settings)
    if isinstance(reads, tuple):
        return _delta(node, *reads, eventual=strategy == "EVENTUAL")
    if strategy in ("FORCE", "EVENTUAL"):
        derive(node)
        raise PlanError(
            f"{STRATEGY} = '{strategy}': {describe(node)} cannot be a delta join (rule "
            f"rewrite_delta_join): {reads}; SET it to 'AUTO' or 'NONE' to keep the regular join",
            node=describe(node),
        )
    if STRATEGY in settings:
        return _copy(node, UnrewrittenJoin, reason=reads)
    return node


def _eligible(
    node: L.Join, strategy: str, settings: dict[str, str]
) -> tuple[SourceRead, SourceRead] | str:
    if not node.left_keys:
        return "it has no equality between the two sides"
    left = read_source(node.inputs[0], node.left_keys, "left input")
    right = read_source(node.inputs[1], node.right_keys, "right input")
    for read in (left, right):
        if isinstance(read, str):
            return read
    assert isinstance(left, SourceRead) and isinstance(right, SourceRead)
    if left.scan is not right.scan and left.scan.table.name == right.scan.table.name:
        return f"both sides read table {left.scan.table.name} through differently hinted scans"
    fn = non_deterministic(node.condition)
    if fn:
        return f"the join condition calls the non-deterministic function {fn}"
    if strategy == "EVENTUAL":
        reason = _eventual_reason(node, (left, right), settings)
        if reason:
            return reason
    for read in (left, right):
        reason = choose_index(read, strategy)
        if reason:
            return reason
    return left, right


def _eventual_reason(
    node: L.Join, reads: tuple[SourceRead, SourceRead], settings: dict[str, str]
) -> str | None:
    if node.join_type != "INNER":
        return f"EVENTUAL delta joins are INNER joins, this one is {node.join_type}"
    if settings.get(IGNORE_FILTER, "false").strip().lower() == "true":
        return None
    for read in reads:
        cond = read.calc.condition if read.calc is not None else None
        outside = input_refs(cond) - set(read.scan.primary_key) if cond is not None else set()
        if outside:
            names = ", ".join(read.scan.fields[c].name for c in sorted(outside))
            return (
                f"the filter on table {read.scan.table.name} reads {names}, outside its primary "
                f"key (an update leaving the filter would stay joined; SET '{IGNORE_FILTER}' = "
                "'true' to accept that)"
            )
    return None


def _delta(node: L.Join, left: SourceRead, right: SourceRead, eventual: bool) -> DeltaJoin:
    return _copy(
        node,
        DeltaJoin,
        left_index=left.index,
        right_index=right.index,
        left_positions=left.positions,
        right_positions=right.positions,
        index_names=(left.index_names, right.index_names),
        eventual=eventual,
    )


def _copy(node: L.Join, cls: type, **extra: object):
    return cls(
        node.inputs,
        node.fields,
        join_type=node.join_type,
        left_keys=node.left_keys,
        right_keys=node.right_keys,
        condition=node.condition,
        **extra,
    )
