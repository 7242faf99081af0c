"""A lookup join whose time attribute is PROCTIME() computed in a subquery (Nexmark q13's
shape) and whose lookup key is computed from the probe row (``mod(o.id, 10) = c.id``),
run as a job on the real broker."""

from __future__ import annotations

import io

from test_lookup_job import produce

from deltaflow.connectors.broker import ensure_topics
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

JOB = """
CREATE TABLE orders (id INT, amount INT) WITH ('connector' = 'kafka', 'topic' = '{orders}',
  'properties.bootstrap.servers' = '{bs}', 'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE customers (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = '{customers}', 'properties.bootstrap.servers' = '{bs}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json');
CREATE TABLE out (id INT, name STRING) WITH ('connector' = 'print');
INSERT INTO out
SELECT o.id, c.name
FROM (SELECT *, PROCTIME() AS p FROM orders) AS o
LEFT JOIN customers FOR SYSTEM_TIME AS OF o.p AS c ON MOD(o.id, 10) = c.id AND o.amount > 1;
"""


def test_a_computed_lookup_key_probes_the_table(broker, new_topic, tmp_path):
    orders, customers = new_topic("orders"), new_topic("customers")
    ensure_topics(broker, [orders, customers])
    produce(broker, customers, [
        {"op": "c", "before": None, "after": {"id": 1, "name": "Ann"}},
        {"op": "c", "before": None, "after": {"id": 2, "name": "Bob"}},
    ])  # fmt: skip
    produce(broker, orders, [
        {"id": 11, "amount": 5}, {"id": 22, "amount": 7}, {"id": 33, "amount": 9},
        {"id": 41, "amount": 1},
    ])  # fmt: skip
    planned = plan_job(JOB.format(orders=orders, customers=customers, bs=broker))
    assert "lookup=[id=$f3]" in planned.explain()
    out = io.StringIO()
    Job(planned.plan, JobOptions(state_dir=tmp_path / "s", bootstrap=broker, out=out)).run()
    # 11 -> 1 (Ann), 22 -> 2 (Bob), 33 -> 3 (none), 41 -> 1 but amount 1 fails the condition
    assert out.getvalue().splitlines() == [
        "+I[11, Ann]",
        "+I[22, Bob]",
        "+I[33, null]",
        "+I[41, null]",
    ]
