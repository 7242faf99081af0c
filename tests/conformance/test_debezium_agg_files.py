"""Flink's recorded GROUP BY output over real Debezium files, reproduced by deltaflow's Job.

For each events file F under tests/data/debezium, ``F.sql`` holds the statements Flink
2.3 ran; ``F.agg.changelog.txt`` is what its print sink wrote for
``SELECT name, SUM(weight), COUNT(*) FROM products GROUP BY name`` and ``F.agg.final.txt``
that changelog applied. deltaflow runs the same statements (the ``products`` table with
its options, the ``agg_out`` print sink, the INSERT) through the filesystem connector
and must print the same lines in the same order. Needs no Flink: runs in ``make test``.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

DATA = Path(__file__).resolve().parent.parent / "data" / "debezium"
FILES = sorted(p.name.removesuffix(".agg.changelog.txt") for p in DATA.glob("*.agg.changelog.txt"))


def _statements(sql_file: Path) -> list[str]:
    text = "\n".join(
        ln for ln in sql_file.read_text().splitlines() if not ln.lstrip().startswith("--")
    )
    return [s.strip() for s in text.split(";") if s.strip()]


def agg_job_sql(events_file: str) -> str:
    """The SETs, the products table, the agg_out sink and its INSERT from ``F.sql``."""
    wanted = []
    for stmt in _statements(DATA / f"{events_file}.sql"):
        head = " ".join(stmt.split()[:3]).upper()
        if head.startswith("SET") or head in ("CREATE TABLE PRODUCTS", "CREATE TABLE AGG_OUT",
                                              "INSERT INTO AGG_OUT"):  # fmt: skip
            wanted.append(stmt + ";")
    assert len(wanted) == 6, wanted  # 3 SETs, 2 tables, 1 INSERT
    return "\n".join(wanted)


def run_job(sql: str, state_dir: Path) -> list[str]:
    out = io.StringIO()
    Job(plan_job(sql).plan, JobOptions(state_dir=state_dir, out=out)).run()
    return out.getvalue().splitlines()


def applied(lines: list[str]) -> list[str]:
    rows: list[str] = []
    for line in lines:
        if line[:2] in ("+I", "+U"):
            rows.append(line[2:])
        else:
            rows.remove(line[2:])
    return sorted("+I" + r for r in rows)


def test_every_events_file_has_an_agg_expectation():
    assert len(FILES) == 5


@pytest.mark.parametrize("events_file", FILES)
def test_agg_changelog_matches_flink(events_file, tmp_path, monkeypatch):
    monkeypatch.chdir(DATA)  # 'path' in F.sql is relative to the data folder
    lines = run_job(agg_job_sql(events_file), tmp_path / "state")
    expected = (DATA / f"{events_file}.agg.changelog.txt").read_text().splitlines()
    assert lines == expected


@pytest.mark.parametrize("events_file", FILES)
def test_agg_final_table_matches_flink(events_file, tmp_path, monkeypatch):
    monkeypatch.chdir(DATA)
    lines = run_job(agg_job_sql(events_file), tmp_path / "state")
    assert applied(lines) == (DATA / f"{events_file}.agg.final.txt").read_text().splitlines()
