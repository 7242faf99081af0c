"""Generated code can be seen and traced (formats/generated.py).

A runtime error inside a generated function names its plan node and where the failing
expression is in the job's SQL; a traceback or a profile of generated code shows the
generated lines under a file name per node and function; ``deltaflow explain --code``
prints every generated function without opening anything.
"""

from __future__ import annotations

import cProfile
import linecache
import pstats
import subprocess
import sys
import traceback

import pytest

from deltaflow.formats.changelog import Batch
from deltaflow.formats.generated import collecting, define, owner
from deltaflow.processor import plan as p
from deltaflow.processor.code_listing import generated_code
from deltaflow.processor.exprs.errors import EvalError
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph, topological
from deltaflow.state.backend import StateBackend

CMD = [sys.executable, "-m", "deltaflow.processor"]

JOB = """CREATE TABLE t (id INT, a INT, b INT, s STRING)
  WITH ('connector' = 'filesystem', 'path' = '{data}', 'format' = 'json');
CREATE TABLE out (id INT, q INT, n INT) WITH ('connector' = 'print');
INSERT INTO out
SELECT id,
       a / b,
       CAST(s AS INT)
FROM t;
"""


def where(text: str, needle: str) -> tuple[int, int]:
    """1-based (line, column) of the first ``needle`` in ``text``."""
    at = text.index(needle)
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def node_id(plan: p.JobPlan, kind: type) -> int:
    (found,) = [n.node_id for n in topological(plan.sinks) if type(n) is kind]
    return found


def push_one(sql: str, row: tuple) -> tuple[p.JobPlan, Graph, Batch]:
    plan = plan_job(sql).plan
    graph = Graph(plan, None)
    scan = node_id(plan, p.TableSourceScan)
    return plan, graph, graph.push(scan, Batch([0], [row]))


def test_a_division_by_zero_in_a_job_names_the_calc_and_the_sql_position(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.json").write_text(
        '{"id": 1, "a": 4, "b": 2, "s": "7"}\n{"id": 2, "a": 4, "b": 0, "s": "8"}\n'
    )
    text = JOB.format(data=data)
    job = tmp_path / "job.sql"
    job.write_text(text)
    done = subprocess.run([*CMD, "run", str(job), "--state-dir", str(tmp_path / "st")],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    ready, line = done.stderr.strip().splitlines()  # the readiness line, then the error
    assert ready.startswith("deltaflow: ready")
    calc = node_id(plan_job(text).plan, p.Calc)
    sql_line, sql_col = where(text, "a / b")
    assert line.startswith(f"deltaflow: error: Calc#{calc} failed on (a / b) at SQL line "
                           f"{sql_line}, column {sql_col}, for the row (2, 4, 0, '8'): ")  # fmt: skip
    assert "division by zero" in line and "NULLIF" in line


def test_a_failed_cast_names_the_node_and_the_line_of_its_expression(tmp_path):
    text = JOB.format(data=tmp_path)
    plan = plan_job(text).plan
    with pytest.raises(EvalError) as caught:
        push_one(text, (1, 4, 2, "x"))
    err = caught.value
    assert err.node == f"Calc#{node_id(plan, p.Calc)}"
    # the CAST is located by its first column reference, the s inside it
    assert (err.line, err.col) == where(text, "s AS INT")
    assert "CAST(s AS INT)" in str(err) and "'x'" in str(err)


def test_a_traceback_frame_of_generated_code_shows_the_generated_line(tmp_path):
    text = JOB.format(data=tmp_path)
    plan = plan_job(text).plan
    with pytest.raises(EvalError) as caught:
        push_one(text, (1, 4, 0, "7"))
    # "<deltaflow Calc#2 _calc>", or "... _calc 2>" when this process compiled another
    named = f"<deltaflow Calc#{node_id(plan, p.Calc)} _calc"
    cause = caught.value.__cause__  # the division's own error, raised inside the loop
    tb = traceback.extract_tb(cause.__traceback__)
    frames = [f for f in tb if f.filename.startswith(named)]
    assert frames, traceback.format_exception(cause)
    frame = frames[-1]
    filename = frame.filename
    assert frame.line == linecache.getline(filename, frame.lineno).strip()
    assert "r[1]" in frame.line and "r[2]" in frame.line  # a / b: input columns 1 and 2
    assert "r[3]" not in frame.line  # not the CAST of s on the next line
    # the error's own frame is the generated function's guard, shown too
    assert filename in "".join(traceback.format_exception(caught.value))


def test_a_profile_names_the_aggregate_s_generated_loop(tmp_path):
    sql = """CREATE TABLE t (k INT, v BIGINT) WITH ('connector' = 'datagen');
CREATE TABLE out (k INT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED)
  WITH ('connector' = 'blackhole');
INSERT INTO out SELECT k, SUM(v) FROM t GROUP BY k;
"""
    plan = plan_job(sql).plan
    with StateBackend(tmp_path / "state") as backend:
        graph = Graph(plan, backend)
        scan = node_id(plan, p.TableSourceScan)
        profile = cProfile.Profile()
        out = profile.runcall(graph.push, scan, Batch([0, 0, 0], [(1, 5), (2, 7), (1, 3)]))
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    agg = node_id(plan, p.GroupAggregate)
    files = {filename for filename, _, _ in stats}
    assert any(f.startswith(f"<deltaflow GroupAggregate#{agg} ") for f in files), files
    for filename in (f for f in files if f.startswith("<deltaflow ")):
        assert linecache.getline(filename, 1).startswith("def "), filename
    table = {row[0]: row for row in out[node_id(plan, p.Sink)].rows}  # upserts by key
    assert table == {1: (1, 8), 2: (2, 7)}


def test_one_file_name_never_shows_two_sources():
    with owner("Test#1"), collecting() as found:
        one = define("def f():\n    return 1\n", "f")
        two = define("def f():\n    return 2\n", "f")
        again = define("def f():\n    return 1\n", "f")
    assert (one(), two(), again()) == (1, 2, 1)
    names = [g.filename for g in found]
    assert names[0] == names[2] == "<deltaflow Test#1 f>"
    assert names[1] == "<deltaflow Test#1 f 2>"
    assert linecache.getline(names[1], 2).strip() == "return 2"


def test_explain_code_prints_the_plan_then_every_generated_function(tmp_path):
    sink_dir = tmp_path / "out"
    sql = f"""CREATE TABLE t (k INT, v BIGINT, note STRING) WITH ('connector' = 'datagen');
CREATE TABLE out (k INT, total BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '{sink_dir}', 'format' = 'json');
INSERT INTO out SELECT k, v * 2 FROM t WHERE note <> 'skip';
"""
    job = tmp_path / "job.sql"
    job.write_text(sql)
    plain = subprocess.run([*CMD, "explain", str(job)], capture_output=True, text=True,
                           timeout=60)  # fmt: skip
    coded = subprocess.run([*CMD, "explain", "--code", str(job)], capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert plain.returncode == coded.returncode == 0, coded.stderr
    assert coded.stdout.startswith(plain.stdout)
    assert "== Generated code ==" not in plain.stdout
    listing = coded.stdout[len(plain.stdout) :]
    plan = plan_job(sql).plan
    calc, sink = node_id(plan, p.Calc), node_id(plan, p.Sink)
    assert f"-- <deltaflow Calc#{calc} _calc>\ndef _calc(kinds, rows):" in listing
    assert "'skip'" in listing  # the WHERE test, inline in the Calc's loop
    assert f"-- <deltaflow Sink#{sink} " in listing  # the json writer of the sink
    assert not sink_dir.exists()  # the sink was never opened
    sources = [g.source.rstrip() for g in generated_code(plan)]  # built here, in-process
    assert len(sources) == listing.count("\n-- <deltaflow ")
    assert all(source in listing for source in sources)
