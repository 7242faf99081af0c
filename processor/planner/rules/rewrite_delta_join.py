"""``table.optimizer.delta-join.strategy``: a regular join of two mirrored sources becomes a
DeltaJoin, which keeps no join state and looks each change up in the other side's mirror.

Values: NONE never rewrites. AUTO (the default) rewrites every eligible join, deriving the
indexes its lookups need (an index on the lookup columns, or the table's ``'bucket.key'``
when the columns hold it); a join left regular says why on its EXPLAIN line
(``deltaJoin=[not rewritten: ...]``). Flink's AUTO rewrites only sources whose storage offers
lookups (Fluss tables), so for Kafka CDC sources deltaflow's plans show DeltaJoin where
Flink's show Join, with the same changelog (docs/FLINK_COMPATIBILITY.md). FORCE is AUTO
that fails with the reason when a join is not eligible. EVENTUAL (VVR) is FORCE with VVR's
eventual output: only +I/+U, retractions are not emitted, so a stale joined row stays until
overwritten by its key.

Eligible: an equi-join whose inputs are each a changelog source with a primary key under at
most one Calc (projections and filters, merged), join keys that are plain source columns,
and no non-deterministic function in those Calcs or in the join condition. Both inputs may
read the same scan (a self-join); two differently hinted scans of one table may not.

Cascades: an input may also be a lower delta join, or a deterministic Calc over one
(``A JOIN B ON .. JOIN C ON ..``, bushy ``(A JOIN B) JOIN (C JOIN D)``, any join types):
the join is then looked up through the lower join's sources (``delta_cascade``), each
lookup needing an index, and a join key of a lower join's rows must hold at least one plain
column of a source. A table may be read more than once in a cascade (TPC-H Q7 reads
``nation`` as the supplier's and the customer's nation): its leaves share one mirror, and
the operator applies a batch of it to one leaf after the other
(``runtime/delta_cascade``). The physical plan runs the whole cascade as one operator
(``DeltaJoinCascade``) with no join state.
EVENTUAL also needs an INNER join and, unless
``table.optimizer.delta-join.ignore-non-unique-key-filter`` = true, no filter on columns
outside the primary key (an update moving a row out of such a filter would leave it stale).
"""

from __future__ import annotations

from deltaflow.formats.errors import PlanError
from deltaflow.processor.exprs.nodes import input_refs
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.delta_cascade import (
    delta_input,
    leaves,
    lookup_names,
    plan_lookup,
)
from deltaflow.processor.planner.delta_nodes import (
    DeltaJoin,
    UnrewrittenJoin,
    ViewPlan,
    non_deterministic,
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
    node = L.with_inputs(node, [rewrite_delta_join(c, settings) for c in node.inputs])
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
    return _copy(node, UnrewrittenJoin, reason=reads)


def _eligible(
    node: L.Join, strategy: str, settings: dict[str, str]
) -> tuple[ViewPlan, ViewPlan] | str:
    if not node.left_keys:
        return "it has no equality between the two sides"
    views = []
    for child, what in zip(node.inputs, ("left input", "right input"), strict=True):
        view = delta_input(child, what)
        if isinstance(view, str):
            return view
        views.append(view)
    left, right = views
    reason = _tables_reason(left, right)
    if reason:
        return reason
    fn = non_deterministic(node.condition)
    if fn:
        return f"the join condition calls the non-deterministic function {fn}"
    if strategy == "EVENTUAL":
        reason = _eventual_reason(node, (left, right), settings)
        if reason:
            return reason
    derived = "FORCE" if strategy == "AUTO" else strategy  # AUTO derives indexes as FORCE
    reason = plan_lookup(left, node.left_keys, derived, "left input")
    return reason or plan_lookup(right, node.right_keys, derived, "right input") or (left, right)


def _tables_reason(left: ViewPlan, right: ViewPlan) -> str | None:
    """Leaves reading one table must read it through one scan (whose mirror they share)."""
    scans: dict[str, L.Scan] = {}
    for leaf in leaves(left) + leaves(right):
        assert leaf.read is not None
        scan = leaf.read.scan
        if scans.setdefault(scan.table.name, scan) is not scan:
            return f"it reads table {scan.table.name} through differently hinted scans"
    return None


def _eventual_reason(
    node: L.Join, views: tuple[ViewPlan, ViewPlan], settings: dict[str, str]
) -> str | None:
    if node.join_type != "INNER":
        return f"EVENTUAL delta joins are INNER joins, this one is {node.join_type}"
    if settings.get(IGNORE_FILTER, "false").strip().lower() == "true":
        return None
    accept = (
        f"(an update leaving the filter would stay joined; SET '{IGNORE_FILTER}' = 'true' "
        "to accept that)"
    )
    if node.condition is not None:
        return f"a join condition besides the join keys' equalities {accept}"
    for view in views:
        if view.kind == "calc" and view.node.condition is not None:  # type: ignore[attr-defined]
            return f"a filter on the joined rows of a lower join {accept}"
        read = view.read
        if read is None or read.calc is None or read.calc.condition is None:
            continue
        outside = input_refs(read.calc.condition) - set(read.scan.primary_key)
        if outside:
            names = ", ".join(read.scan.fields[c].name for c in sorted(outside))
            return (
                f"the filter on table {read.scan.table.name} reads {names}, outside its primary "
                f"key {accept}"
            )
    return None


def _delta(node: L.Join, left: ViewPlan, right: ViewPlan, eventual: bool) -> DeltaJoin:
    lread = left.lookups[node.left_keys] if left.kind == "source" else None
    rread = right.lookups[node.right_keys] if right.kind == "source" else None
    return _copy(
        node,
        DeltaJoin,
        left_index=lread.index if lread else (),
        right_index=rread.index if rread else (),
        left_positions=lread.positions if lread else (),
        right_positions=rread.positions if rread else (),
        left_fixed=lread.fixed if lread else (),
        right_fixed=rread.fixed if rread else (),
        index_names=(
            lookup_names(left, node.left_keys),
            lookup_names(right, node.right_keys),
        ),
        eventual=eventual,
        views=(left, right),
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
