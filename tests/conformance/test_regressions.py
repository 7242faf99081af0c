"""Shrunk reproducers of differences from Flink, kept as permanent regression tests.

Each file under regressions/ holds a job's SQL (paths relative to the work directory),
the Debezium histories it reads, and the lines Apache Flink 2.3 printed for it (a delta
pass reproducer also its source batch size, ``poll_records``). The
test runs deltaflow over the same files and compares as the suite did; no Flink needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conf_compare import compare_output
from conf_engines import run_deltaflow
from conf_histories import events_from_json, write_history, write_rows

pytestmark = pytest.mark.conformance

FILES = sorted((Path(__file__).resolve().parent / "regressions").glob("*.json"))


def check_regression(path: Path, tmp_path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    case_dir = None
    for table, events in data["histories"].items():
        stmt = next(s for s in data["sql"].split(";") if f"CREATE TABLE {table} " in s)
        relative = stmt.split("'path' = '", 1)[1].split("'", 1)[0]
        case_dir = (tmp_path / relative).parent
        case_dir.mkdir(parents=True, exist_ok=True)
        if "'format' = 'json'" in stmt:  # an append-only template's rows (conf_cases)
            write_rows(tmp_path / relative, events_from_json(events))
        else:
            write_history(tmp_path / relative, events_from_json(events), table)
    assert case_dir is not None
    ours = run_deltaflow(data["sql"], tmp_path, runs=True, poll_records=data.get("poll_records"))
    assert ours["plan_error"] is None and ours["run_error"] is None, ours
    verdict = compare_output(data["flink_lines"], ours["lines"], data["compare"])
    assert verdict.agree, verdict.detail


if FILES:  # an empty parameter list would be reported as a skip

    @pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
    def test_regression(path, tmp_path):
        check_regression(path, tmp_path)
