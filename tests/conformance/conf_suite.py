"""A whole conformance run: cases on both engines, verdicts, documented differences, shrinking."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

from conf_cases import FLINK_SETTINGS, Case, all_cases
from conf_compare import Verdict, compare
from conf_delta import POLL_RECORDS, DeltaResult, delta_sql, run_case
from conf_delta import summary_lines as delta_summary
from conf_differences import documented
from conf_engines import FlinkSession, run_deltaflow
from conf_histories import history_to_json
from conf_shrink import shrink

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
MAX_SHRINKS = int(os.environ.get("DELTAFLOW_CONFORMANCE_SHRINKS", "3"))


class Suite:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.cases: list[Case] = all_cases()
        self.flink = FlinkSession(workdir, FLINK_SETTINGS)
        self.flink_results: dict[str, dict] = {}
        self.our_results: dict[str, dict] = {}
        self.verdicts: dict[str, Verdict] = {}
        self.status: dict[str, str] = {}  # agree | documented | differ
        self.notes: dict[str, str] = {}  # case id -> documented difference key or regression file
        self.seconds: dict[str, float] = {}
        self.delta: dict[str, list[DeltaResult]] = {}  # case id -> its delta runs

    def run(self) -> None:
        for case in self.cases:
            case.write(self.workdir)
        started = time.monotonic()
        self.flink_results = self.flink.run([c.flink_request() for c in self.cases])
        self.seconds["flink"] = time.monotonic() - started
        started = time.monotonic()
        for case in self.cases:
            self.our_results[case.id] = run_deltaflow(
                case.job_sql(), self.workdir, case.runs, case.poll_records
            )
        self.seconds["deltaflow"] = time.monotonic() - started
        for case in self.cases:
            self._judge(case)
        self.run_delta()

    def run_delta(self) -> None:
        """Join and aggregate cases again with the delta rewrites forced (conf_delta)."""
        started = time.monotonic()
        for case in self.cases:
            regular, flink = self.our_results[case.id], self.flink_results[case.id]
            self.delta[case.id] = run_case(case, self.workdir, regular, flink)
        self.seconds["delta"] = time.monotonic() - started

    def _judge(self, case: Case) -> None:
        flink, ours = self.flink_results[case.id], self.our_results[case.id]
        verdict = compare(flink, ours, case.template.compare)
        self.verdicts[case.id] = verdict
        if verdict.agree:
            self.status[case.id] = "agree"
            return
        difference = documented(case.template.name, verdict.aspect, flink, ours)
        if (
            difference and verdict.aspect == "plan"
        ):  # a documented plan must still give Flink's output
            rest = compare(flink, ours, case.template.compare, check_plan=False)
            if not rest.agree:
                self.verdicts[case.id], difference = rest, None
        self.status[case.id] = "documented" if difference else "differ"
        if difference:
            self.notes[case.id] = difference.key

    def shrink_failures(self) -> None:
        """Shrinks the first output difference of each template (up to MAX_SHRINKS)."""
        started = time.monotonic()
        done: set[str] = set()
        for case in self.cases:
            if len(done) >= MAX_SHRINKS:
                break
            if self.status[case.id] != "differ" or self.verdicts[case.id].aspect != "output":
                continue
            existing = sorted(REGRESSIONS.glob(f"{case.template.name}-s*.json"))
            if existing:
                self.notes[case.id] = str(existing[0].relative_to(REGRESSIONS.parent))
            if case.template.name in done or existing:
                continue
            done.add(case.template.name)
            small, flink = shrink(case, self.flink, self.workdir)
            path = self._save_regression(small, flink, poll_records=case.poll_records)
            self.notes[case.id] = str(path.relative_to(REGRESSIONS.parent))
        self._shrink_delta(done)
        self.seconds["shrink"] = time.monotonic() - started

    def _shrink_delta(self, done: set[str]) -> None:
        """Shrinks the first differing delta run of each template (same bound), compared as
        final tables and read in the delta pass's small batches."""
        for case in self.cases:
            for result in self.delta.get(case.id, []):
                name = f"{case.template.name}-{result.kind}-delta"
                if len(done) >= MAX_SHRINKS or result.status != "differ" or name in done:
                    continue
                if result.kind == "eventual" or any(REGRESSIONS.glob(f"{name}-s*.json")):
                    continue
                done.add(name)

                def run_delta(c: Case, kind: str = result.kind) -> dict:
                    return run_deltaflow(
                        delta_sql(c.job_sql(), kind), self.workdir, True, POLL_RECORDS
                    )

                small, flink = shrink(case, self.flink, self.workdir, run_delta, mode="final")
                sql = delta_sql(small.job_sql(), result.kind)
                path = self._save_regression(small, flink, name, sql, "final", POLL_RECORDS)
                self.notes[case.id] = str(path.relative_to(REGRESSIONS.parent))

    def _save_regression(
        self,
        case: Case,
        flink: dict,
        name: str | None = None,
        sql: str | None = None,
        mode: str | None = None,
        poll_records: int | None = None,
    ) -> Path:
        REGRESSIONS.mkdir(exist_ok=True)
        path = REGRESSIONS / f"{name or case.template.name}-s{case.seed}.json"
        data = {
            "template": case.template.name,
            "seed": case.seed,
            "compare": mode or case.template.compare,
            "poll_records": poll_records,
            "sql": sql or case.job_sql(),
            "histories": {t: history_to_json(e) for t, e in case.histories.items()},
            "flink_lines": flink.get("lines"),
            "flink_plan": flink.get("plan"),
        }
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return path

    def close(self) -> None:
        self.flink.close()

    def summary_lines(self) -> list[str]:
        if len(self.status) < len(self.cases):
            return [
                f"conformance run did not finish ({len(self.status)} of {len(self.cases)} cases judged)"
            ]
        by_category: dict[str, Counter] = {}
        for case in self.cases:
            by_category.setdefault(case.template.category, Counter())[self.status[case.id]] += 1
        lines = ["conformance by category (agree / documented difference / differ):"]
        for category, counts in by_category.items():
            lines.append(
                f"  {category:10s} {counts['agree']:4d} / {counts['documented']:3d} / {counts['differ']:3d}"
            )
        modes = Counter(c.template.compare for c in self.cases)
        lines.append("  compared by: " + ", ".join(f"{k} {v}" for k, v in sorted(modes.items())))
        lines.append("  time: " + ", ".join(f"{k} {v:.0f}s" for k, v in self.seconds.items()))
        total = Counter(self.status.values())
        differ = total["documented"] + total["differ"]
        lines.append(
            f"  of the differing: {total['documented']} documented, {total['differ']} unexpected"
        )
        lines += delta_summary(self.delta, len(self.cases))
        lines.append(f"{len(self.cases)} cases, {total['agree']} agree, {differ} differ")
        return lines
