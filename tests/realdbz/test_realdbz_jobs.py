"""deltaflow jobs over what real Debezium 3.6 emitted for a real PostgreSQL 15, against
PostgreSQL's own answer on the database's final state.

The capture (``conftest``) runs the workload of ``dbz_workload`` once per session; its
records go unchanged to the session broker, one topic per table and capture (decimal
mode x converter setting). Each job of ``dbz_jobs`` runs, in each source declaration
``dbz_jobs.VARIANTS``, bounded to the end of its topics, into an upsert-kafka or a
retract (kafka + debezium-json) sink; the sink topic read back to its final table must
equal the rows of the job's PostgreSQL query, and no sink record may carry Debezium's
TOAST placeholder.
"""

from __future__ import annotations

import re

import dbz_compare as cmp
import dbz_jobs as jobs
import pytest

from deltaflow.connectors.broker import ensure_topics
from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

# The first test of a session also waits for PostgreSQL and the Debezium capture (setup).
pytestmark = pytest.mark.timeout(600)
CASES = [(v, j) for v in jobs.VARIANTS for j in jobs.JOBS]


@pytest.fixture(scope="session")
def expected(postgres) -> dict[str, list[tuple]]:
    """Each job's PostgreSQL rows on the final state (after the capture ended), by
    database and job."""
    return {}


def run_job(case, variant, broker, topics, new_topic, tmp_path) -> list:
    sink_topic = new_topic(f"realdbz-{variant.name}-{case.name}-sink")
    ensure_topics(broker, [sink_topic])
    sql = jobs.job_sql(case, variant, broker, topics[variant.combo], sink_topic)
    Job(plan_job(sql).plan, JobOptions(state_dir=tmp_path / "state", bootstrap=broker)).run()
    return cmp.read_topic(broker, sink_topic)


@pytest.mark.parametrize(("variant", "case"), CASES, ids=[f"{v.name}-{j.name}" for v, j in CASES])
def test_job_equals_postgres(variant, case, postgres, dbz_topics, expected, broker, new_topic,
                             tmp_path) -> None:  # fmt: skip
    where = (variant.dbname, case.name)
    if where not in expected:
        expected[where] = postgres.query(variant.dbname, case.postgres)
    records = run_job(case, variant, broker, dbz_topics, new_topic, tmp_path)
    assert cmp.placeholders(records) == 0, "Debezium's TOAST placeholder reached the sink"
    fold = cmp.upsert_table if case.key else cmp.retract_table
    ours = fold(records, case.columns)
    theirs = cmp.expected_table(expected[where], case.columns)
    assert ours == theirs, cmp.difference(ours, theirs)


def test_base64_decimals_read_as_strings_stop_with_an_error_naming_the_option(
    dbz_topics, broker, new_topic, tmp_path
) -> None:
    """Debezium's default decimals (precise) without the schema envelope are base64 bytes.
    Declared without the option that says so, the job must not guess per value (-2704.67
    is sent as "+999"): it stops at the first value that is no decimal string, naming the
    option."""
    case = next(j for j in jobs.JOBS if j.name == "orders_upsert")
    variant = jobs.Variant("full-precise-undeclared", "full-precise-noschemas", "", "shop_full")
    option = jobs.BASE64_DECIMALS.split("=")[0].strip()
    with pytest.raises(DeltaflowError, match=re.escape(option)):
        run_job(case, variant, broker, dbz_topics, new_topic, tmp_path)
