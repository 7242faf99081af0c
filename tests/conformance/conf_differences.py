"""Intended differences from Apache Flink 2.3, in one table (mirrored in
docs/FLINK_COMPATIBILITY.md). A case that differs from Flink passes only when an entry
here names its template and aspect AND the entry's check holds: the check states the
difference precisely, so anything else that differs still fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from conf_compare import compare_output, decisions
from conf_templates import TEMPLATES


@dataclass(frozen=True)
class Difference:
    key: str
    templates: tuple[str, ...]
    aspect: str  # plan | output | error
    reason: str
    check: Callable[[dict, dict], bool]


def _single_phase(flink: dict, ours: dict) -> bool:
    """Flink's Local+Global aggregate pair stands where deltaflow has one aggregate with the
    Global's changelog mode; every other decision is equal."""
    merged = []
    for name, mode in decisions(flink["plan"]):
        if name.startswith("Local"):
            continue
        merged.append((name.removeprefix("Global"), mode))
    return merged == decisions(ours["plan"]) and merged != decisions(flink["plan"])


def _materializes_without_on_conflict(flink: dict, ours: dict) -> bool:
    """Flink 2.3 rejects the INSERT for want of ON CONFLICT; deltaflow plans it with a
    SinkUpsertMaterializer, as Flink does with require-on-conflict = false."""
    flink_rejects = "Please specify an ON CONFLICT clause" in (flink["plan_error"] or "")
    return flink_rejects and ours["plan"] is not None and "upsertMaterialize=[true]" in ours["plan"]


def _delta_join_by_default(flink: dict, ours: dict) -> bool:
    """Where Flink plans a Join, deltaflow's AUTO plans a DeltaJoin (Flink's AUTO rewrites
    only Fluss-style sources): the other decisions are Flink's, except that the sink may
    need no SinkUpsertMaterializer, as a delta join keeps a side's unique key (documented
    too). The output is still compared with Flink's (Suite._judge)."""
    if "DeltaJoin(" not in (ours["plan"] or ""):
        return False

    def rest(plan: str) -> list[tuple[str, str]]:
        return [d for d in decisions(plan) if d[0] not in ("Join", "Sink.upsertMaterialize")]

    joins = [d for d in decisions(flink["plan"]) if d[0] == "Join"]
    ours_joins = [d for d in decisions(ours["plan"]) if d[0] == "Join"]
    return len(ours_joins) < len(joins) and rest(flink["plan"]) == rest(ours["plan"])


DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "single-phase window aggregate",
        tuple(t.name for t in TEMPLATES if t.category == "window"), "plan",
        "deltaflow runs a window aggregate as one operator over a batch; Flink splits it into "
        "LocalWindowAggregate and GlobalWindowAggregate (two-phase, to cut shuffle volume across "
        "parallel tasks), which has no use in one process. The output mode is the same (I), "
        "and so is the output (asserted).",
        _single_phase,
    ),
    Difference(
        "single-phase mini-batch aggregate",
        ("agg_mini_batch",), "plan",
        "With table.exec.mini-batch.enabled Flink plans LocalGroupAggregate + "
        "GlobalGroupAggregate; deltaflow folds each poll batch per key in one GroupAggregate. "
        "The output mode is the same, and so is the final table (asserted).",
        _single_phase,
    ),
    Difference(
        "require-on-conflict off by default",
        ("error_require_on_conflict",), "error",
        "Flink 2.3 rejects an INSERT whose upsert key differs from the sink's primary key unless "
        "it has an ON CONFLICT clause (table.exec.sink.require-on-conflict = true). deltaflow "
        "defaults that option to false so that jobs written for Flink 1.x/2.0-2.2 keep running; "
        "it then adds a SinkUpsertMaterializer as those versions did. Setting the option to true "
        "gives Flink 2.3's error.",
        _materializes_without_on_conflict,
    ),
    Difference(
        "delta joins by default",
        tuple(t.name for t in TEMPLATES), "plan",
        "table.optimizer.delta-join.strategy AUTO (the default) plans a DeltaJoin for every "
        "eligible join (CDC sources with primary keys, derived indexes); Flink's AUTO rewrites "
        "only sources whose storage offers lookups (Fluss) and keeps the regular Join here. "
        "The other planning decisions are Flink's (a sink may need no upsert materializer, "
        "the delta join keeping a side's unique key) and the output is Flink's (asserted).",
        _delta_join_by_default,
    ),
)  # fmt: skip


def documented(template: str, aspect: str, flink: dict, ours: dict) -> Difference | None:
    base = template.removesuffix("_pk")  # a variant over sources with a primary key
    for difference in DIFFERENCES:
        if base in difference.templates and aspect == difference.aspect:
            if difference.check(flink, ours):
                return difference
    return None


def same_final_table(flink: dict, ours: dict) -> bool:
    """The changelogs differ only in order: applied, they give the same table."""
    return compare_output(flink["lines"] or [], ours["lines"] or [], "final").agree


# The delta pass (conf_delta) compares final tables, not changelogs: these are the ways a
# delta run's changelog may differ from the regular run's and Flink's while its final table
# may not (EVENTUAL's is asserted as stated).
DELTA_DIFFERENCES: tuple[tuple[str, str], ...] = (
    ("delta join changelog order",
     "A DeltaJoin emits the joined rows of one change in the other side's primary-key order "
     "(the regular join: its state's order), and the delta pass reads the sources in small "
     "batches, so the inputs interleave otherwise than in the regular run; the final table "
     "is the same."),
    ("delta aggregate one update per group per batch",
     "A DeltaAggregate emits MiniBatchGroupAggFunction's changelog (several changes of a group "
     "in one batch fold into one update); without mini-batch Flink and GroupAggregate emit one "
     "update per change. The final table is the same."),
    ("EVENTUAL keeps retracted rows",
     "table.optimizer.delta-join.strategy = 'EVENTUAL' (VVR's semantics) emits only the "
     "additions (+I/+U) of the exact changelog: its final table is the regular one plus every "
     "row the exact changelog retracts, equal to it when nothing is deleted or leaves the "
     "join condition or filter."),
)  # fmt: skip
