"""Shrinking a differing case: drop events while Flink and deltaflow still differ.

Each round builds every variant that drops one run of events (halves, quarters, ...,
single events) from one table's history, runs all of them on Flink in one request (a
few jobs in the same JVM) and on deltaflow, and keeps the smallest variant whose
output still differs. It stops when no variant differs, so the result is 1-minimal.
"""

from __future__ import annotations

from conf_cases import Case
from conf_compare import compare
from conf_engines import FlinkSession, run_deltaflow

MAX_ROUNDS = 12
MAX_VARIANTS = 160


def _drops(n: int) -> list[tuple[int, int]]:
    spans, size = [], max(n // 2, 1)
    while True:
        spans.extend((i, min(i + size, n)) for i in range(0, n, size))
        if size == 1:
            return spans
        size = max(size // 2, 1)


def variants(case: Case, base_id: str) -> list[Case]:
    out: list[Case] = []
    for table, events in case.histories.items():
        for start, end in _drops(len(events)):
            histories = dict(case.histories)
            histories[table] = events[:start] + events[end:]
            out.append(Case(f"{base_id}x{len(out) + 1:03d}", case.template, case.seed, histories))
    return out[:MAX_VARIANTS]


def _size(case: Case) -> int:
    return sum(len(e) for e in case.histories.values())


def shrink(
    case: Case, flink: FlinkSession, workdir, run_ours=None, mode: str | None = None
) -> tuple[Case, dict]:
    """The smallest variant of ``case`` found whose output still differs, and Flink's result.
    ``run_ours(case)`` gives deltaflow's result (the real Job unless a test passes another);
    ``mode`` is how outputs are compared (the template's by default)."""
    if run_ours is None:

        def run_ours(c: Case) -> dict:
            return run_deltaflow(c.job_sql(), workdir, c.runs, c.poll_records)

    current, current_flink = case, None
    for _ in range(MAX_ROUNDS):
        candidates = variants(current, case.id)
        for candidate in candidates:
            candidate.write(workdir)
        results = flink.run([c.flink_request() for c in candidates], cache=False)
        differing = []
        for candidate in candidates:
            ours = run_ours(candidate)
            # the plan is the same for every variant: only the output is being shrunk
            verdict = compare(results[candidate.id], ours, mode or case.template.compare, False)
            if not verdict.agree and verdict.aspect == "output" and not ours["run_error"]:
                differing.append(candidate)
        if not differing:
            break
        current = min(differing, key=_size)
        current_flink = results[current.id]
    if current_flink is None:
        current_flink = flink.run([case.flink_request()], cache=False)[case.id]
    return current, current_flink
