"""Differential tests: every generated case on Apache Flink 2.3 and on deltaflow.

A case passes when both engines agree (see conf_compare for what is compared), or when
they differ exactly as an entry of conf_differences documents (that entry's check is
asserted). A case that differs otherwise fails with the first difference and, for an
output difference, the shrunk reproducer written under regressions/.
"""

from __future__ import annotations

import pytest
from conf_cases import all_cases

pytestmark = pytest.mark.conformance

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(conformance_run, case):
    status = conformance_run.status[case.id]
    if status in ("agree", "documented"):
        return
    verdict = conformance_run.verdicts[case.id]
    note = conformance_run.notes.get(case.id, "")
    reproducer = f"\nshrunk reproducer: {note}" if note else ""
    pytest.fail(
        f"{verdict.aspect} differs from Flink: {verdict.detail}{reproducer}\nSQL:\n{case.job_sql()}"
    )


def test_every_operator_and_aggregate_is_covered():
    sql = " ".join(c.template.select for c in CASES).upper()
    for word in ("COUNT(DISTINCT", "SUM(", "AVG(", "MIN(", "MAX(", "LISTAGG(", "FIRST_VALUE(",
                 "LAST_VALUE(", "HAVING", " JOIN ", "LEFT JOIN", "RIGHT JOIN", "FULL OUTER JOIN",
                 "UNION ALL", "ROW_NUMBER()", "TUMBLE(", "HOP(", "CUMULATE(", "CASE WHEN",
                 "CAST(", "COALESCE("):  # fmt: skip
        assert word in sql, word
    assert len(CASES) >= 300
    assert any(c.template.pk for c in CASES) and any(not c.template.pk for c in CASES)


def test_shrinking_finds_the_events_a_difference_needs(conformance_run):
    """A planted bug (the last output line goes missing whenever the history deletes a 'fig'
    order) shrinks to the insert and the delete of one fig order, with Flink's output."""
    from conf_engines import run_deltaflow
    from conf_shrink import shrink

    def deletes_fig(case) -> bool:
        return any(e.op == "d" and e.before["product"] == "fig" for e in case.histories["orders"])

    def planted(case) -> dict:
        result = run_deltaflow(case.job_sql(), conformance_run.workdir, case.runs)
        if deletes_fig(case) and result["lines"]:
            result["lines"] = result["lines"][:-1]
        return result

    case = next(c for c in CASES if c.template.name == "agg_basic" and deletes_fig(c))
    small, flink = shrink(case, conformance_run.flink, conformance_run.workdir, planted)
    events = small.histories["orders"]
    assert deletes_fig(small) and len(events) < len(case.histories["orders"])
    assert len(events) <= 3, events
    assert flink["lines"]  # Flink's output of the reproducer is kept for the regression file


RUNNABLE = [c for c in CASES if c.runs]


@pytest.mark.parametrize("case", RUNNABLE, ids=[c.name for c in RUNNABLE])
def test_delta_case(conformance_run, case):
    """With the delta rewrites forced, an eligible join or aggregate gives the regular run's
    and Flink's final table (EVENTUAL: as documented); see conf_delta. An ineligible one is
    counted and listed with its reason in the summary."""
    differ = [r for r in conformance_run.delta[case.id] if r.status == "differ"]
    if differ:
        pytest.fail("\n".join(f"delta {r.kind}: {r.detail}" for r in differ))
