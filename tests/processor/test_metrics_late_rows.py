"""Late rows of event-time operators are counted in deltaflow_late_records_dropped_total."""

from __future__ import annotations

import io
import json

from deltaflow.processor import job as job_module
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.metrics import render
from deltaflow.processor.planner.api import plan_job

JOB = """
CREATE TABLE clicks (id INT, k INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'json');
CREATE TABLE out (a INT, b INT) WITH ('connector' = 'print', 'print-identifier' = 'x');
INSERT INTO out SELECT a.id, b.id FROM clicks a JOIN clicks b
  ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts;
"""


def test_an_interval_join_counts_the_rows_it_finds_behind_the_watermark(tmp_path, monkeypatch):
    rows = [(1, "00:00:00"), (2, "00:00:10"), (3, "00:00:02"), (4, "00:00:10.500")]
    path = tmp_path / "clicks.json"
    path.write_text("".join(
        json.dumps({"id": i, "k": 1, "ts": f"2024-01-01 {t}"}) + "\n" for i, t in rows
    ))  # fmt: skip
    monkeypatch.setattr(job_module, "POLL_RECORDS", 1)  # one row a batch: the watermark moves
    out = io.StringIO()
    job = Job(plan_job(JOB.format(path=path)).plan, JobOptions(state_dir=tmp_path / "s", out=out))
    job.run()
    printed = sorted(line.partition("> ")[2] for line in out.getvalue().splitlines())
    # each row pairs with itself; 4 (10.5 s) with 2 (10 s, within 1 s before it); 3 (2 s)
    # comes when the watermark is at 10 s: on both sides of the join it is late, not kept,
    # and nothing kept is within 1 s of it
    assert printed == ["+I[1, 1]", "+I[2, 2]", "+I[2, 4]", "+I[4, 4]"]
    metric = [ln for ln in render(job).splitlines() if ln.startswith("deltaflow_late_records")]
    assert metric == [
        'deltaflow_late_records_dropped_total{operator="IntervalJoin",operator_id="2"} 2'
    ]
