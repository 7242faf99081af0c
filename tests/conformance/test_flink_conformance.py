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
