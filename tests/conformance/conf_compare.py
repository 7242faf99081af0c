"""Comparing one case's results from Flink and deltaflow.

Three comparisons, each a pure function of the two results:

- planning decisions: from each EXPLAIN (Flink's "Optimized Physical Plan" with
  changelog modes, deltaflow's plan in the same shape), the changelog mode of every
  aggregate, join, rank and ChangelogNormalize node (in plan order), the mode of the
  sink's input, and whether the sink has an upsert materializer;
- planning errors: both engines reject the job, with the same kind of error;
- output: the printed changelog line for line (``changelog``), or the final table as a
  multiset plus "every -U/-D retracts a row that is there" on both sides (``final``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

DECISION_NODES = (
    "GroupAggregate", "Join", "Rank", "Deduplicate", "WindowAggregate", "ChangelogNormalize",
    "LocalWindowAggregate", "GlobalWindowAggregate", "LocalGroupAggregate", "GlobalGroupAggregate",
    "IntervalJoin", "OverAggregate", "WindowJoin", "GroupWindowAggregate", "TemporalJoin",
    "WindowRank", "WindowDeduplicate",
)  # fmt: skip
_MODE = re.compile(r"changelogMode=\[([^\]]*)\]")
_ERROR_KINDS = (
    ("append-only sink", "doesn't support consuming"),
    ("non-deterministic update", "can not satisfy the determinism requirement"),
)


@dataclass(frozen=True)
class Verdict:
    agree: bool
    aspect: str = ""  # plan | error | output | crash
    detail: str = ""


def decisions(plan: str) -> list[tuple[str, str]]:
    """(node, changelog mode) of the decision nodes, the sink input and the materializer."""
    out: list[tuple[str, str]] = []
    lines = plan.splitlines()
    for i, line in enumerate(lines):
        body = line.lstrip(" :+-|")
        name = body.split("(", 1)[0]
        mode = _MODE.search(body)
        if name == "Sink":
            out.append(("Sink.upsertMaterialize", str("upsertMaterialize=[true]" in body)))
            child = _MODE.search(lines[i + 1]) if i + 1 < len(lines) else None
            out.append(("Sink.input", child.group(1) if child else "?"))
        elif name in DECISION_NODES and mode:
            out.append((name, mode.group(1)))
    return out


def error_kind(message: str) -> str:
    for kind, marker in _ERROR_KINDS:
        if marker in message:
            return kind
    return "other: " + message.strip().splitlines()[0][:160] if message.strip() else "other"


def apply_changelog(lines: list[str]) -> tuple[Counter, list[str]]:
    """The final table of a printed changelog, and the retractions of rows not present."""
    table: Counter = Counter()
    bad: list[str] = []
    for line in lines:
        kind, row = line[:2], line[2:]
        if kind in ("+I", "+U"):
            table[row] += 1
        elif table[row] > 0:
            table[row] -= 1
        else:
            bad.append(line)
    return +table, bad


def compare(flink: dict, ours: dict, mode: str, check_plan: bool = True) -> Verdict:
    """Errors, then (unless ``check_plan`` is off) planning decisions, then the output."""
    if (ours.get("plan_error") or "").startswith("CRASH") or (
        ours.get("run_error") or ""
    ).startswith("CRASH"):
        return Verdict(False, "crash", ours.get("plan_error") or ours.get("run_error"))
    if flink["plan_error"] or ours["plan_error"]:
        return _compare_errors(flink["plan_error"], ours["plan_error"])
    ours_d, flink_d = decisions(ours["plan"]), decisions(flink["plan"])
    if check_plan and ours_d != flink_d:
        return Verdict(False, "plan", f"flink {flink_d}\n deltaflow {ours_d}")
    if mode == "plan":
        return Verdict(True)
    if flink.get("run_error") or ours.get("run_error"):
        same = bool(flink.get("run_error")) == bool(ours.get("run_error"))
        return Verdict(same, "" if same else "error",
                       f"flink: {flink.get('run_error')}\n deltaflow: {ours.get('run_error')}")  # fmt: skip
    return compare_output(flink["lines"], ours["lines"], mode)


def _compare_errors(flink_error: str | None, our_error: str | None) -> Verdict:
    if not (flink_error and our_error):
        return Verdict(False, "error", f"flink: {flink_error}\n deltaflow: {our_error}")
    fk, ok = error_kind(flink_error), error_kind(our_error)
    if fk != ok:
        return Verdict(False, "error", f"flink: {fk}\n deltaflow: {ok}")
    return Verdict(True)


def compare_output(flink_lines: list[str], our_lines: list[str], mode: str) -> Verdict:
    if mode == "changelog":
        if flink_lines == our_lines:
            return Verdict(True)
        return Verdict(False, "output", first_difference(flink_lines, our_lines))
    flink_table, flink_bad = apply_changelog(flink_lines)
    our_table, our_bad = apply_changelog(our_lines)
    if our_bad and not flink_bad:
        return Verdict(False, "output", f"deltaflow retracts rows it never emitted: {our_bad[:3]}")
    if flink_table != our_table:
        missing = sorted((flink_table - our_table).elements())[:5]
        extra = sorted((our_table - flink_table).elements())[:5]
        return Verdict(False, "output", f"final table: missing {missing}, extra {extra}")
    return Verdict(True)


def first_difference(flink_lines: list[str], our_lines: list[str]) -> str:
    for i, (a, b) in enumerate(zip(flink_lines, our_lines, strict=False)):
        if a != b:
            return f"line {i + 1}: flink {a!r}, deltaflow {b!r}"
    n = min(len(flink_lines), len(our_lines))
    return (f"flink has {len(flink_lines)} lines, deltaflow {len(our_lines)}; "
            f"next flink {flink_lines[n:n + 2]}, deltaflow {our_lines[n:n + 2]}")  # fmt: skip
