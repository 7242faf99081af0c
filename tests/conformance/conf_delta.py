"""The delta pass: every join and aggregate case again with the delta rewrites forced.

The reference is deltaflow's regular plan: the case's own run, or, when AUTO planned delta
joins there (the default), a run with ``table.optimizer.delta-join.strategy`` = NONE.
For each runnable case whose regular plan has a Join or a GroupAggregate, deltaflow runs
the same job once more per kind with ``table.optimizer.delta-join.strategy`` (join) or
``table.optimizer.delta-agg.strategy`` (agg) set to FORCE:

- the planner refuses (the case is not eligible): recorded with its reason, counted and
  listed in the summary;
- it plans a DeltaJoin / DeltaAggregate: the final table of its output must equal the final
  table of deltaflow's regular run and of Flink's (the changelog order may differ, see
  ``DELTA_DIFFERENCES``).

The delta runs read the sources in batches of ``POLL_RECORDS`` changes (the regular run
reads each file in one batch), so a group or join key is met again in later batches and the
operators read it back from the mirror, as they do in a long-running job.

For an INNER delta join that feeds the sink without an aggregate or rank above it, a third
run with EVENTUAL must emit exactly the additions (+I/+U rows, as a multiset) of the FORCE
run (the exact changelog, over the same batches: the rows a join adds depend on how its two
inputs interleave) and no retraction, so its final table is the regular one plus every row
the exact changelog retracted (``eventual_as_documented``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from conf_compare import apply_changelog, compare_output
from conf_differences import DELTA_DIFFERENCES
from conf_engines import run_deltaflow

STRATEGY = {
    "join": "table.optimizer.delta-join.strategy",
    "agg": "table.optimizer.delta-agg.strategy",
    "eventual": "table.optimizer.delta-join.strategy",
}
NODE = {"join": "DeltaJoin(", "agg": "DeltaAggregate(", "eventual": "DeltaJoin("}
_JOIN = re.compile(r"(?<![A-Za-z])Join\(")
_AGG = re.compile(r"(?<![A-Za-z])GroupAggregate\(")
POLL_RECORDS = 3
_REFUSED = re.compile(r"cannot be a delta (?:join|aggregate) \(rule \w+\): (.*?); SET it to", re.S)


@dataclass(frozen=True)
class DeltaResult:
    case_id: str
    kind: str  # join | agg | eventual
    status: str  # not eligible | agree | differ
    detail: str = ""


def kinds_of(plan: str | None) -> list[str]:
    """The delta rewrites worth forcing on a plan at default settings (deltaflow's EXPLAIN
    text): a join left regular, or one AUTO made a delta join already, and an aggregate."""
    if not plan:
        return []
    found = [k for k, pattern in (("join", _JOIN), ("agg", _AGG)) if pattern.search(plan)]
    if "DeltaJoin(" in plan and "join" not in found:
        found.insert(0, "join")
    return found


def regular_sql(sql: str) -> str:
    return f"SET '{STRATEGY['join']}' = 'NONE';\n{sql}"


def delta_sql(sql: str, kind: str) -> str:
    value = "EVENTUAL" if kind == "eventual" else "FORCE"
    return f"SET '{STRATEGY[kind]}' = '{value}';\n{sql}"


def run_case(case, workdir, regular: dict, flink: dict) -> list[DeltaResult]:
    """The delta runs of one case (none if its regular plan has no join or aggregate)."""
    if not case.runs or regular.get("lines") is None:
        return []
    out = []
    if "DeltaJoin(" in (regular.get("plan") or ""):  # AUTO's delta joins: NONE as reference
        regular = run_deltaflow(regular_sql(case.job_sql()), workdir, True)
        if regular.get("plan_error") or regular.get("lines") is None:
            return [DeltaResult(case.id, "join", "differ", f"NONE run failed: {regular}"[:300])]
    for kind in kinds_of(regular.get("plan")):
        result = run_deltaflow(delta_sql(case.job_sql(), kind), workdir, True, POLL_RECORDS)
        out.append(judge(case.id, kind, result, regular, flink))
        if kind == "join" and out[-1].status == "agree" and _eventual_applies(result):
            sql = delta_sql(case.job_sql(), "eventual")
            eventual = run_deltaflow(sql, workdir, True, POLL_RECORDS)
            out.append(judge(case.id, "eventual", eventual, result, flink))
    return out


def _eventual_applies(forced: dict) -> bool:
    plan = forced.get("plan") or ""
    return "DeltaJoin(joinType=[InnerJoin]" in plan and not re.search(
        r"GroupAggregate\(|Rank\(|Deduplicate\(|DeltaAggregate\(", plan
    )


def judge(case_id: str, kind: str, result: dict, regular: dict, flink: dict) -> DeltaResult:
    """``regular``: deltaflow's regular run (for EVENTUAL: the FORCE run) of the case."""
    error = result.get("plan_error")
    if error:
        refused = _REFUSED.search(error)
        if refused and not error.startswith("CRASH"):
            return DeltaResult(case_id, kind, "not eligible", " ".join(refused.group(1).split()))
        return DeltaResult(case_id, kind, "differ", "planning failed: " + error[:300])
    if NODE[kind] not in (result.get("plan") or ""):
        return DeltaResult(case_id, kind, "differ", f"FORCE planned no {NODE[kind][:-1]}")
    if result.get("run_error"):
        return DeltaResult(case_id, kind, "differ", "run failed: " + result["run_error"][:300])
    lines = result["lines"]
    if kind == "eventual":
        ok, detail = eventual_as_documented(regular["lines"], lines)
        return DeltaResult(case_id, kind, "agree" if ok else "differ", detail)
    for name, other in (("regular", regular), ("Flink", flink)):
        if other.get("lines") is None:
            return DeltaResult(case_id, kind, "differ", f"{name} has no output to compare with")
        verdict = compare_output(other["lines"], lines, "final")
        if not verdict.agree:
            return DeltaResult(case_id, kind, "differ", f"vs {name}: {verdict.detail}")
    return DeltaResult(case_id, kind, "agree")


def eventual_as_documented(regular: list[str], eventual: list[str]) -> tuple[bool, str]:
    """EVENTUAL emits only +I/+U, exactly the rows the regular join adds; the detail says
    whether its final table equals the regular one (no retraction) or keeps stale rows."""
    retractions = [ln for ln in eventual if ln[:2] not in ("+I", "+U")]
    if retractions:
        return False, f"EVENTUAL emitted retractions: {retractions[:3]}"
    added = Counter(ln[2:] for ln in regular if ln[:2] in ("+I", "+U"))
    got = Counter(ln[2:] for ln in eventual)
    if got != added:
        missing = sorted((added - got).elements())[:3]
        extra = sorted((got - added).elements())[:3]
        return (
            False,
            f"EVENTUAL rows are not the regular additions: missing {missing}, extra {extra}",
        )
    final, _ = apply_changelog(regular)
    stale = sum((added - final).values())
    return True, "same final table" if stale == 0 else f"keeps {stale} retracted rows"


def summary_lines(results: dict[str, list[DeltaResult]], n_cases: int) -> list[str]:
    flat = [r for rs in results.values() for r in rs]
    lines = [
        "delta pass (delta-join / delta-agg FORCE, EVENTUAL for INNER joins), final tables "
        "compared; documented: " + "; ".join(key for key, _ in DELTA_DIFFERENCES)
    ]
    for kind in ("join", "agg", "eventual"):
        mine = [r for r in flat if r.kind == kind]
        counts = Counter(r.status for r in mine)
        eligible = len(mine) - counts["not eligible"]
        lines.append(
            f"  {kind:8s} {len(mine):4d} cases, {eligible:4d} delta-eligible, "
            f"{counts['agree']:4d} agree, {counts['differ']:3d} differ"
        )
    stale = sum(1 for r in flat if r.kind == "eventual" and r.detail.startswith("keeps"))
    lines.append(f"  EVENTUAL keeping retracted rows as documented: {stale}")
    reasons = Counter(r.detail for r in flat if r.status == "not eligible")
    lines.append(f"  not eligible ({sum(reasons.values())}):")
    lines += [f"    {n:4d} x {reason}" for reason, n in reasons.most_common()]
    for r in flat:
        if r.status == "differ":
            lines.append(f"  DIFFER {r.case_id} {r.kind}: {r.detail}")
    cases = sum(1 for rs in results.values() if any(r.kind != "eventual" for r in rs))
    eligible_cases = sum(
        1 for rs in results.values() if any(r.status != "not eligible" for r in rs)
    )
    agree_cases = sum(
        1
        for rs in results.values()
        if any(r.status != "not eligible" for r in rs) and all(r.status != "differ" for r in rs)
    )
    lines.append(
        f"{cases} join/agg cases (of {n_cases}), {eligible_cases} delta-eligible, "
        f"{agree_cases} agree"
    )
    return lines
