"""Intended differences from Apache Flink 2.3, in one table (mirrored in
docs/FLINK_COMPATIBILITY.md). A case that differs from Flink passes only when an entry
here names its template and aspect AND the entry's check holds: the check states the
difference precisely, so anything else that differs still fails.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from conf_compare import apply_changelog, compare_output, decisions
from conf_templates import SOURCE_PK, TEMPLATES


@dataclass(frozen=True)
class Difference:
    key: str
    templates: tuple[str, ...]
    aspect: str  # plan | output | error
    reason: str
    check: Callable[[dict, dict], bool]


STATE_NORMALIZE = "beforeImage=[state]"


def _without_state(plan: str | None) -> str:
    """The plan without its ChangelogNormalize(..., beforeImage=[state]) lines."""
    return "\n".join(line for line in (plan or "").splitlines() if STATE_NORMALIZE not in line)


def _before_images_from_state(flink: dict, ours: dict) -> bool:
    """deltaflow's plan has a ChangelogNormalize(..., beforeImage=[state]) above each
    Debezium scan with a primary key (its source keeps the last row per key); without those
    lines every decision is Flink's."""
    if STATE_NORMALIZE not in (ours["plan"] or ""):
        return False
    return decisions(_without_state(ours["plan"])) == decisions(flink["plan"])


def _single_phase(flink: dict, ours: dict) -> bool:
    """Flink's Local+Global aggregate pair stands where deltaflow has one aggregate with the
    Global's changelog mode; every other decision is equal (a source's before-images from
    state, the difference below, left out)."""
    merged = []
    for name, mode in decisions(flink["plan"]):
        if name.startswith("Local"):
            continue
        merged.append((name.removeprefix("Global"), mode))
    return merged == decisions(_without_state(ours["plan"])) and merged != decisions(flink["plan"])


def _materializes_without_on_conflict(flink: dict, ours: dict) -> bool:
    """Flink 2.3 rejects the INSERT for want of ON CONFLICT; deltaflow plans it with a
    SinkUpsertMaterializer, as Flink does with require-on-conflict = false."""
    flink_rejects = "Please specify an ON CONFLICT clause" in (flink["plan_error"] or "")
    return flink_rejects and ours["plan"] is not None and "upsertMaterialize=[true]" in ours["plan"]


def _flink_keeps_rows_that_left_the_range(flink: dict, ours: dict) -> bool:
    """Flink's final table holds more rows than deltaflow's or a row twice (the rows have a
    unique id: Flink kept rows that left the range); deltaflow's holds each row once and
    retracts only rows it emitted (that it is the Top-N of the input is asserted by
    tests/processor/runtime/test_rt_rank.py)."""
    flink_table, _ = apply_changelog(flink["lines"] or [])
    our_table, our_bad = apply_changelog(ours["lines"] or [])
    ours_exact = not our_bad and all(n == 1 for n in our_table.values())
    flink_stale = flink_table.total() > our_table.total() or any(
        n > 1 for n in flink_table.values()
    )
    return ours_exact and flink_stale


def _delta_join_by_default(flink: dict, ours: dict) -> bool:
    """Where Flink plans a Join, deltaflow's AUTO plans a DeltaJoin (Flink's AUTO rewrites
    only Fluss-style sources): the other decisions are Flink's, except that the sink may
    need no SinkUpsertMaterializer, as a delta join keeps a side's unique key (documented
    too). The output is still compared with Flink's (Suite._judge)."""
    if "DeltaJoin(" not in (ours["plan"] or ""):
        return False

    def rest(plan: str) -> list[tuple[str, str]]:
        return [d for d in decisions(plan) if d[0] not in ("Join", "Sink.upsertMaterialize")]

    plan = _without_state(ours["plan"])  # a source's before-images from state, left out
    joins = [d for d in decisions(flink["plan"]) if d[0] == "Join"]
    ours_joins = [d for d in decisions(plan) if d[0] == "Join"]
    return len(ours_joins) < len(joins) and rest(flink["plan"]) == rest(plan)


_JOIN = re.compile(r"(?<![A-Za-z])(?:Delta)?Join\(joinType=\[InnerJoin\], where=\[(.*?)\], ")


def _keyless(plan: str | None) -> int:
    return sum(1 for where in _JOIN.findall(plan or "") if "=(" not in where)


def _connected_join_order(flink: dict, ours: dict) -> bool:
    """FROM's order crosses two tables with no equality between them: Flink (no join
    reorder) plans that keyless join, deltaflow joins a later table that has an equality
    first (rules/reorder_joins.py), so its plan has fewer keyless inner joins, the same
    number of joins, and the same final table (asserted)."""
    return (
        _keyless(ours["plan"]) < _keyless(flink["plan"])
        and len(_JOIN.findall(ours["plan"] or "")) == len(_JOIN.findall(flink["plan"] or ""))
        and same_final_table(flink, ours)
    )


DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "single-phase window aggregate",
        tuple(t.name for t in TEMPLATES if t.category in ("window", "late")), "plan",
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
        "before-images from state",
        tuple(t.name.removesuffix("_pk") for t in SOURCE_PK)
        + ("temporal_join_inner", "temporal_join_left"),  # the versioned rates table has a key
        "plan",
        "A debezium-json source with a PRIMARY KEY takes its before-images from state "
        "('debezium-json.before-image' = 'state', the default): it keeps the last row per key, "
        "so results are exact under PostgreSQL's default REPLICA IDENTITY, with TOAST "
        "placeholders and truncates. EXPLAIN shows the step as ChangelogNormalize(key=[..], "
        "beforeImage=[state]) above the scan; Flink has no such step. Every other decision is "
        "Flink's, and so is the output (asserted).",
        _before_images_from_state,
    ),
    Difference(
        "scalar subqueries as left joins",
        ("subquery_scalar", "subquery_scalar_correlated", "subquery_in_having"), "plan",
        "Flink plans a scalar subquery as an inner join with its aggregate (a single-row one when "
        "uncorrelated); deltaflow as a LEFT JOIN with the aggregate grouped by the correlation "
        "keys, narrowed to an inner join when the comparison rejects NULLs, so its plan may hold "
        "another aggregate or join mode. (IN / EXISTS / NOT IN / NOT EXISTS are Flink's semi / "
        "anti joins.) The final table is the same (asserted).",
        lambda flink, ours: same_final_table(flink, ours),  # defined below
    ),
    Difference(
        "grouping sets as a union",
        ("grouping_rollup", "grouping_cube", "grouping_sets"), "plan",
        "Flink plans GROUPING SETS / ROLLUP / CUBE as one GroupAggregate over an Expand node; "
        "deltaflow as a UNION ALL of one GroupAggregate per grouping set (no Expand operator). "
        "The final table is the same (asserted).",
        lambda flink, ours: same_final_table(flink, ours),  # defined below
    ),
    Difference(
        "Top-N from a rank above 1 without the rank number",
        ("sortlimit_offset", "topn_range_no_rn"), "output",
        "ORDER BY ... LIMIT n OFFSET m, or rn BETWEEN 2 AND k with rn not selected, over an "
        "updating input: Flink 2.3's RetractableTopNFunction leaves rows that moved out of the "
        "range in its output (its final table holds more rows than the range, or one row "
        "twice); deltaflow emits the exact difference of the range, so its final table is the "
        "Top-N of the input.",
        _flink_keeps_rows_that_left_the_range,
    ),
    Difference(
        "connected join order",
        ("join_commas_cross_order",), "plan",
        "A chain of inner joins written in an order that joins two tables with no equality "
        "between them (FROM a, b, c WHERE a.x = c.x AND b.y = c.y) is joined in a connected "
        "order: a later table with an equality to the tables joined so far comes first, and a "
        "Calc restores the written columns. Flink 2.3 (join reorder off by default) plans the "
        "keyless cross product. The final table is the same (asserted).",
        _connected_join_order,
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
