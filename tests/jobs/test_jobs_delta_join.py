"""Two-way join cases recorded with Flink 2.3, run as delta joins (FORCE) through the
broker: the decoders leave the columns no delta join reads None (demanded columns), the
mirrors hold the rest, and the sink's final table is Flink's."""

from __future__ import annotations

import jobs_cases as jc
import pytest
from test_jobs import check, feed

from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.job_tables import scans_of
from deltaflow.processor.plan import DeltaJoin, Node
from deltaflow.processor.planner.api import plan_job

FORCE = "SET 'table.optimizer.delta-join.strategy' = 'FORCE';\n"


def _types(node: Node) -> set[type]:
    return {type(node)}.union(*(_types(child) for child in node.inputs))


@pytest.mark.parametrize("name", ["join_inner", "join_left", "join_full"])
def test_delta_join_with_demanded_columns_matches_flink(name, broker, new_topic, tmp_path):
    case = jc.load(name)
    topics = feed(case, broker, new_topic)
    plan = plan_job(FORCE + jc.kafka_sql(case, broker, topics)).plan
    assert DeltaJoin in _types(plan.sinks[0])
    # orders' product, qty and ts are read by nothing: left out of the rows and mirrors
    assert any(s.project is not None and "ts" not in s.project for s in scans_of(plan))
    Job(plan, JobOptions(state_dir=tmp_path / "state", bootstrap=broker)).run()
    check(case, broker, topics["sink"], plan.sinks[0])
