"""SQL jobs over Debezium topics on the real broker, against Apache Flink 2.3's recorded results.

Each case (``cases/<name>/job.sql``) runs as a deltaflow job: its events go to fresh
topics of the session broker, the job reads them from earliest to the end of each
topic, and the sink topic is read back and decoded. What Flink computed from the same
events (``record_flink.py``) is the expected result:

- upsert sink (a PRIMARY KEY): the final table equals Flink's final table;
- retract sink (debezium-json): the final multiset equals Flink's, and with a single
  source the changelog equals Flink's in order, as a debezium-json sink writes it
  (an update pair is a delete and an insert record). Window aggregations are compared
  as multisets only: the groups of windows that fire at one watermark come out in
  Flink's key-group order, which is unspecified; so is UNION ALL, whose inputs Flink
  interleaves differently from run to run (deltaflow batch by batch).

With two sources only the final result is compared: Flink reads the two files and
deltaflow polls the two topics in different interleavings, so intermediate changes
differ while the final result may not.
"""

from __future__ import annotations

import os
import subprocess
import sys

import jobs_cases as jc
import pytest

from deltaflow.connectors.broker import ensure_topics
from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.plan import Sink
from deltaflow.processor.planner.api import plan_job


def feed(case: jc.Case, broker: str, new_topic) -> dict[str, str]:
    """Fresh topics for the case's tables and sink (``sink``), the sources' events produced."""
    topics = {table: new_topic(f"job-{case.name}-{table}") for table in case.sources}
    topics["sink"] = new_topic(f"job-{case.name}-sink")
    ensure_topics(broker, list(topics.values()))
    for table, marker in case.sources.items():
        key = case.source_keys[table] if marker == "@upsert_source" else None
        jc.produce(broker, topics[table], jc.events(table), key)
    return topics


def check(case: jc.Case, broker: str, sink_topic: str, sink: Sink) -> None:
    """The sink topic against Flink: the final table (upsert) and, where Flink's order is
    defined, what each key was set to in order; or the final multiset and, where Flink's
    order is defined, the changelog (retract)."""
    records = jc.read_records(broker, sink_topic)
    names, types = [f.name for f in sink.physical], list(sink.types)
    if case.upsert_sink:
        assert jc.upsert_table(records, names, types) == case.final
        if case.ordered and "mini-batch.enabled' = 'true'" not in case.sql:
            key = [names.index(k) for k in sink.primary_key]
            ours = jc.without_rewritten_tombstones(jc.upsert_writes(records, names, types))
            assert ours == jc.without_rewritten_tombstones(jc.flink_upsert_writes(case, key))
        return
    changelog = jc.retract_changelog(records, names, types)
    assert jc.multiset(changelog) == case.final
    if case.ordered:
        assert changelog == jc.as_debezium_records(case.changelog)


def run_case(
    case: jc.Case, broker: str, new_topic, tmp_path, stop_after: int | None = None
) -> None:
    """Runs the case's job to the end of its topics and checks the sink topic.

    With ``stop_after``, the job checkpoints every 10 ms and is stopped (as by SIGTERM: it
    checkpoints and closes) once it has read that many changes; a new job then resumes
    from the same state directory."""
    topics = feed(case, broker, new_topic)
    sql = jc.kafka_sql(case, broker, topics)
    if stop_after is not None:
        sql = "SET 'execution.checkpointing.interval' = '10 ms';\n" + sql
    plan = plan_job(sql).plan
    options = JobOptions(state_dir=tmp_path / "state", bootstrap=broker)
    if stop_after is not None:
        first = StoppingJob(plan, options, stop_after)
        first.run()
        assert first.stats.total_in < total_changes(case), "the job was not stopped midway"
    Job(plan, options).run()
    check(case, broker, topics["sink"], plan.sinks[0])


class StoppingJob(Job):
    """A job asked to stop (as SIGTERM does) once it has read ``limit`` changes."""

    def __init__(self, plan, options: JobOptions, limit: int) -> None:
        super().__init__(plan, options)
        self.limit = limit

    def _poll_once(self) -> bool:
        busy = super()._poll_once()
        if self.stats.total_in >= self.limit:
            self.stop.set()
        return busy


def total_changes(case: jc.Case) -> int:
    """The changes the sources decode: an update event is two (-U and +U)."""
    return sum(1 + (e.get("op") == "u") for t in case.sources for e in jc.events(t))  # JSON rows: 1


@pytest.mark.parametrize("name", jc.case_names())
def test_job_matches_flink(name, broker, new_topic, tmp_path) -> None:
    run_case(jc.load(name), broker, new_topic, tmp_path)


@pytest.mark.parametrize("name", jc.case_names())
def test_job_stopped_midway_and_resumed_in_small_batches_matches_flink(
    name, broker, new_topic, tmp_path, monkeypatch
) -> None:
    """The same result when the job reads 4 records a poll, checkpoints every 10 ms, is
    stopped after about half of the changes and resumed from its checkpoint: a stop
    checkpoints, so the resumed job neither repeats nor loses a change."""
    monkeypatch.setattr("deltaflow.processor.job.POLL_RECORDS", 4)
    case = jc.load(name)
    run_case(case, broker, new_topic, tmp_path, stop_after=total_changes(case) // 2)


@pytest.mark.parametrize("name", ["python_udf", "join_full", "upsert_source_normalize"])
def test_deltaflow_run_in_a_subprocess_matches_flink(name, broker, new_topic, tmp_path) -> None:
    """The same jobs through the command line, ``deltaflow run job.sql``, to the end of input."""
    case = jc.load(name)
    topics = feed(case, broker, new_topic)
    job = tmp_path / f"{name}.sql"
    job.write_text(jc.kafka_sql(case, broker, topics))
    path = os.pathsep.join([str(jc.HERE), os.environ.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--quiet",
           "--state-dir", str(tmp_path / "state")]  # fmt: skip
    done = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": path}, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    check(case, broker, topics["sink"], plan_job(job.read_text()).plan.sinks[0])


# A case family (name prefix) and what deltaflow's plan of each such case must show
# (alternatives separated by |).
FAMILIES = {
    "calc_": "Calc(",
    "agg_": "GroupAggregate(",
    "join_": "Join(",
    "upsert_source": "ChangelogNormalize(",
    "cdc_duplicates": "DropUpdateBefore",
    "sink_upsert": "upsertMaterialize=[true]",
    "window_tumble": "TUMBLE(",
    "window_hop": "HOP(",
    "window_cumulate": "CUMULATE(",
    "dedup_": "Rank(",
    "topn_": "Rank(",
    "union_all": "Union(",
    "python_udf": "LABEL(|PRICE_BAND(",
    "lateral_udtf": "PythonCorrelate(",
}


def test_every_operator_family_has_cases_whose_plans_show_it() -> None:
    """The issue's operator list, each covered by recorded cases whose deltaflow plan
    really has that operator (so a planner change cannot silently drop the coverage)."""
    names = jc.case_names()
    assert len(names) >= 25
    for prefix, shown in FAMILIES.items():
        cases = [n for n in names if n.startswith(prefix)]
        assert cases, prefix
        for name in cases:
            case = jc.load(name)
            topics = {table: "t" for table in case.sources} | {"sink": "t"}
            explain = plan_job(jc.kafka_sql(case, "localhost:9092", topics)).explain()
            assert any(alt in explain for alt in shown.split("|")), (name, explain)


def test_null_into_a_primary_key_column_stops_the_job_as_in_flink(
    broker, new_topic, tmp_path
) -> None:
    """Flink's default sink NOT NULL check (table.exec.sink.not-null-enforcer = ERROR) fails
    the job when a row with a NULL primary key column reaches the sink."""
    case = jc.load("agg_sum_avg")
    case.sql = case.sql.replace("SET 'table.exec.sink.not-null-enforcer' = 'DROP';", "")
    with pytest.raises(DeltaflowError, match="sink .*sink: column 'customer' is NOT NULL"):
        run_case(case, broker, new_topic, tmp_path)
