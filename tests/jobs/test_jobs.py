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
  interleaves record by record and deltaflow batch by batch.

With two sources only the final result is compared: Flink reads the two files and
deltaflow polls the two topics in different interleavings, so intermediate changes
differ while the final result may not.
"""

from __future__ import annotations

import jobs_cases as jc
import pytest

from deltaflow.connectors.broker import ensure_topics
from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job


def run_case(case: jc.Case, broker: str, new_topic, tmp_path) -> tuple[list, list[str], list]:
    topics = {table: new_topic(f"job-{case.name}-{table}") for table in case.sources}
    topics["sink"] = new_topic(f"job-{case.name}-sink")
    ensure_topics(broker, list(topics.values()))
    for table, marker in case.sources.items():
        key = case.source_keys[table] if marker == "@upsert_source" else None
        jc.produce(broker, topics[table], jc.events(table), key)
    plan = plan_job(jc.kafka_sql(case, broker, topics)).plan
    (sink,) = plan.sinks
    names, types = [f.name for f in sink.physical], list(sink.types)
    Job(plan, JobOptions(state_dir=tmp_path / "state", bootstrap=broker)).run()
    return jc.read_records(broker, topics["sink"]), names, types


@pytest.mark.parametrize("name", jc.case_names())
def test_job_matches_flink(name, broker, new_topic, tmp_path) -> None:
    case = jc.load(name)
    records, names, types = run_case(case, broker, new_topic, tmp_path)
    if case.upsert_sink:
        assert jc.upsert_table(records, names, types) == case.final
        return
    changelog = jc.retract_changelog(records, names, types)
    assert jc.multiset(changelog) == case.final
    if case.ordered:
        assert changelog == jc.as_debezium_records(case.changelog)


def test_every_operator_family_has_a_case() -> None:
    """The issue's operator list, each by at least one recorded case."""
    names = set(jc.case_names())
    families = ("calc_", "agg_", "join_", "upsert_source", "sink_upsert", "window_tumble",
                "window_hop", "window_cumulate", "dedup_", "topn_", "union_all", "python_udf")  # fmt: skip
    missing = [f for f in families if not any(n.startswith(f) for n in names)]
    assert not missing
    assert len(names) >= 25


def test_null_into_a_primary_key_column_stops_the_job_as_in_flink(
    broker, new_topic, tmp_path
) -> None:
    """Flink's default sink NOT NULL check (table.exec.sink.not-null-enforcer = ERROR) fails
    the job when a row with a NULL primary key column reaches the sink."""
    case = jc.load("agg_sum_avg")
    case.sql = case.sql.replace("SET 'table.exec.sink.not-null-enforcer' = 'DROP';", "")
    with pytest.raises(DeltaflowError, match="sink .*sink: column 'customer' is NOT NULL"):
        run_case(case, broker, new_topic, tmp_path)
