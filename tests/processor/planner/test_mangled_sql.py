"""A job file with tokens deleted, repeated or replaced never escapes as a raw traceback:
planning either succeeds or raises a DeltaflowError (SqlError / PlanError)."""

from __future__ import annotations

import random

import pytest

from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.planner.api import plan_job

JOB = """SET 'table.exec.sink.upsert-materialize' = 'AUTO';
CREATE TABLE t (a INT, b BIGINT, s STRING, ts TIMESTAMP(3), pt AS PROCTIME(),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND, PRIMARY KEY (a) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'format' = 'debezium-json');
CREATE TABLE c (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'format' = 'debezium-json');
CREATE TABLE o (id BIGINT, cid INT, pt AS PROCTIME()) WITH ('connector' = 'kafka', 'format' = 'json');
CREATE VIEW v AS SELECT a, s FROM t WHERE b > 1;
CREATE TABLE r (x STRING, y BIGINT, PRIMARY KEY (x) NOT ENFORCED) WITH ('connector' = 'print');
EXECUTE STATEMENT SET BEGIN
INSERT INTO r SELECT s, COUNT(*) FROM t JOIN c ON t.a = c.id WHERE b > 2 GROUP BY s HAVING SUM(b) > 1;
INSERT INTO r SELECT s, b FROM (SELECT s, b, ROW_NUMBER() OVER (PARTITION BY s ORDER BY b DESC) AS rn FROM t) WHERE rn <= 3;
INSERT INTO r SELECT s, COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, s;
INSERT INTO r SELECT s, CAST(a AS BIGINT) FROM v UNION ALL SELECT name, CAST(id AS BIGINT) FROM c;
END;
EXPLAIN CHANGELOG_MODE SELECT s, SUM(b) FILTER (WHERE a > 1) FROM t GROUP BY s;
INSERT INTO r WITH q AS (SELECT o.id, c.name FROM o LEFT JOIN c FOR SYSTEM_TIME AS OF o.pt ON o.cid = c.id)
  SELECT name, id FROM q;
"""
NOISE = [
    "'",
    "`",
    "/*",
    "--",
    "(",
    ")",
    ";",
    "END",
    "BEGIN",
    "SET",
    "x'zz'",
    "1e",
    "INTERVAL",
    "TABLE",
    "AS",
    "OVER",
    "*",
]


def test_the_job_plans() -> None:
    assert len(plan_job(JOB).plan.sinks) == 5


@pytest.mark.parametrize("seed", range(4))
def test_mangled_jobs_fail_only_with_deltaflow_errors(seed: int) -> None:
    rng = random.Random(seed)
    tokens = (
        JOB.replace("(", " ( ").replace(")", " ) ").replace(",", " , ").replace(";", " ; ").split()
    )
    for _ in range(60):
        mangled = list(tokens)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(mangled))
            roll = rng.random()
            if roll < 0.4:
                del mangled[at]
            elif roll < 0.7:
                mangled.insert(at, rng.choice(tokens))
            else:
                mangled[at] = rng.choice(NOISE)
        try:
            plan_job(" ".join(mangled))
        except DeltaflowError:
            pass
