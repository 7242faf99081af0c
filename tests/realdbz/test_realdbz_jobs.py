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
import dbz_workload as wl
import pytest
from dbz_run import COMBOS

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


def run_job(case, variant, broker, topics, new_topic, tmp_path, stop_after=None) -> list:
    """Runs the job to the end of its topics; the sink topic's records. With
    ``stop_after``, the job checkpoints every 10 ms, is stopped (as by SIGTERM) once it has
    read that many changes, and a new job resumes from its state directory."""
    sink_topic = new_topic(f"realdbz-{variant.name}-{case.name}-sink")
    ensure_topics(broker, [sink_topic])
    sql = jobs.job_sql(case, variant, broker, topics[variant.combo], sink_topic)
    options = JobOptions(state_dir=tmp_path / "state", bootstrap=broker)
    if stop_after is not None:
        plan = plan_job("SET 'execution.checkpointing.interval' = '10 ms';\n" + sql).plan
        first = StoppingJob(plan, options, stop_after)
        first.run()
        assert first.stopped, "the job ended before it was stopped"
    Job(plan_job(sql).plan, options).run()
    return cmp.read_topic(broker, sink_topic)


class StoppingJob(Job):
    """A job asked to stop (as SIGTERM does) once it has read ``limit`` changes."""

    def __init__(self, plan, options: JobOptions, limit: int) -> None:
        super().__init__(plan, options)
        self.limit, self.stopped = limit, False

    def _poll_once(self) -> bool:
        busy = super()._poll_once()
        if self.stats.total_in >= self.limit and not self.stop.is_set():
            self.stop.set()
            self.stopped = True
        return busy


@pytest.mark.parametrize(("variant", "case"), CASES, ids=[f"{v.name}-{j.name}" for v, j in CASES])
def test_job_equals_postgres(variant, case, postgres, dbz_topics, expected, broker, new_topic,
                             tmp_path) -> None:  # fmt: skip
    where = (variant.dbname, case.name)
    if where not in expected:
        expected[where] = postgres.query(variant.dbname, case.postgres)
    records = run_job(case, variant, broker, dbz_topics, new_topic, tmp_path)
    check(records, case, expected[where])


def check(records: list, case, rows: list[tuple]) -> None:
    """The sink's final table equals PostgreSQL's rows; no record carries the placeholder."""
    assert cmp.placeholders(records) == 0, "Debezium's TOAST placeholder reached the sink"
    fold = cmp.upsert_table if case.key else cmp.retract_table
    ours = fold(records, case.columns)
    theirs = cmp.expected_table(rows, case.columns)
    assert ours == theirs, cmp.difference(ours, theirs)


RESUMED = [("default-string-noschemas", "customers_upsert"), ("default-string-noschemas", "topn"),
           ("default-precise-schemas-plain", "agg_orders_delta_agg"),
           ("default-precise-schemas-include", "join3"),
           ("default-string-schemas-plain", "left_join_delta_join"),
           ("default-precise-noschemas", "agg_payments")]  # fmt: skip


@pytest.mark.parametrize(
    ("variant_name", "case_name"), RESUMED, ids=[f"{v}-{c}" for v, c in RESUMED]
)
def test_job_stopped_midway_and_resumed_equals_postgres(
    variant_name,
    case_name,
    postgres,
    dbz_capture,
    dbz_topics,
    broker,
    new_topic,
    tmp_path,
    monkeypatch,
) -> None:
    """The same final table when the job reads 8 records a poll, checkpoints every 10 ms, is
    stopped after a third of its input records and resumed from its checkpoint: what the
    sources keep to derive before-images and fill placeholders must survive the restart."""
    monkeypatch.setattr("deltaflow.processor.job.POLL_RECORDS", 8)
    variant = next(v for v in jobs.VARIANTS if v.name == variant_name)
    case = next(j for j in jobs.JOBS if j.name == case_name)
    identity, mode = COMBOS[variant.combo]
    files = [
        dbz_capture / variant.combo / f"{wl.topic(identity, mode, t)}.jsonl" for t in case.tables
    ]
    third = sum(len(f.read_text().splitlines()) for f in files) // 3
    records = run_job(case, variant, broker, dbz_topics, new_topic, tmp_path, stop_after=third)
    check(records, case, postgres.query(variant.dbname, case.postgres))


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
