"""The three-way join case recorded with Flink 2.3 (``join_three_way_delta_cascade``: orders
JOIN customers LEFT JOIN regions, updates moving orders between customers and customers
between regions) run as a cascade of delta joins: the sink's final table is Flink's.
Whole topics at once and 4 records a poll (each source's changes then meet the others'
mirrors at many points of their histories)."""

from __future__ import annotations

import jobs_cases as jc
import pytest
from test_jobs import check, feed

from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.plan import DeltaJoinCascade, Node
from deltaflow.processor.planner.api import plan_job

FORCE = "SET 'table.optimizer.delta-join.strategy' = 'FORCE';\n"


def _types(node: Node) -> set[type]:
    return {type(node)}.union(*(_types(child) for child in node.inputs))


@pytest.mark.parametrize("poll", [None, 4])
def test_cascade_of_delta_joins_matches_flink(poll, broker, new_topic, tmp_path, monkeypatch):
    if poll is not None:
        monkeypatch.setattr("deltaflow.processor.job.POLL_RECORDS", poll)
    case = jc.load("join_three_way_delta_cascade")
    topics = feed(case, broker, new_topic)
    plan = plan_job(FORCE + jc.kafka_sql(case, broker, topics)).plan
    assert DeltaJoinCascade in _types(plan.sinks[0])
    Job(plan, JobOptions(state_dir=tmp_path / "state", bootstrap=broker)).run()
    check(case, broker, topics["sink"], plan.sinks[0])
