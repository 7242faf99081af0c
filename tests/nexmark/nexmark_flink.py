"""Nexmark's queries on Apache Flink 2.3 over one events file (run by the PyFlink venv's Python).

    <flink-python> tests/nexmark/nexmark_flink.py EVENTS.jsonl SIDE.csv OUT.json q0 q1 ...

One JVM, one TableEnvironment (parallelism 1, UTC), one database per query. The ``datagen``
table is a ``filesystem`` source of the JSON file, the sink a ``print`` table whose
print-identifier is the query's name, q13's side input a ``filesystem`` CSV table. For each
query the optimized plan (or the planning error) is recorded, then its INSERT runs as its own
job and its printed changelog is kept. The print lines go to the JVM's stdout, which this
script points at a capture file first. Writes ``{query: {plan, plan_error, run_error,
lines}}`` as JSON. Imports only PyFlink, the standard library and ``bench/nexmark_queries``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import nexmark_queries as nq  # noqa: E402

UDF = "CREATE TEMPORARY FUNCTION count_char AS 'nexmark_udfs.count_char' LANGUAGE PYTHON"


def _message(err: BaseException) -> str:
    lines = [ln for ln in str(err).splitlines() if ln.strip() and not ln.lstrip().startswith("at ")]
    return "\n".join(lines)[:3000]


def environment():
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", "1")
    config.set("table.local-time-zone", "UTC")
    config.set("table.exec.sink.require-on-conflict", "false")
    config.set("python.executable", sys.executable)
    config.set("python.files", str(ROOT / "bench" / "nexmark_udfs.py"))
    return env


def declare(env, name: str, events: str, side: str, sink: str) -> str:
    """Creates the query's tables and views in its own database; returns its INSERT."""
    env.use_database("default_database")
    env.execute_sql(f"CREATE DATABASE IF NOT EXISTS db_{name}")
    env.use_database(f"db_{name}")
    source = f"'connector' = 'filesystem', 'path' = '{events}', 'format' = 'json'"
    side_with = f"'connector' = 'filesystem', 'path' = '{side}', 'format' = 'csv'"
    *ddl, insert = nq.statements(name, source, sink, side_with, UDF)
    for stmt in ddl:
        env.execute_sql(stmt)
    return insert


def printed(capture) -> list[str]:
    """The print lines written since the last call (read until the capture stops growing)."""
    text = ""
    while True:
        time.sleep(0.2)
        more = capture.read()
        text += more
        if not more and (not text or text.endswith("\n")):
            return text.splitlines()


def run_query(env, name: str, events: str, side: str, capture) -> dict:
    from pyflink.table.explain_detail import ExplainDetail

    insert = declare(
        env, name, events, side, f"'connector' = 'print', 'print-identifier' = '{name}'"
    )
    result: dict = {"plan": None, "plan_error": None, "run_error": None, "lines": []}
    try:
        result["plan"] = env.explain_sql(insert, ExplainDetail.CHANGELOG_MODE)
    except Exception as err:  # noqa: BLE001 - a planning error is a result here
        result["plan_error"] = _message(err)
        return result
    printed(capture)
    try:
        env.execute_sql(insert).wait()
    except Exception as err:  # noqa: BLE001
        result["run_error"] = _message(err)
    prefix = f"{name}> "
    result["lines"] = [ln[len(prefix) :] for ln in printed(capture) if ln.startswith(prefix)]
    return result


def main(argv: list[str]) -> int:
    events, side, out, names = argv[0], argv[1], argv[2], argv[3:]
    capture_path = tempfile.mkstemp(prefix="nexmark-flink-")[1]
    fd = os.open(capture_path, os.O_WRONLY | os.O_TRUNC)
    sys.stdout.flush()
    os.dup2(fd, 1)  # the JVM started below inherits this stdout
    sys.stdout = os.fdopen(os.dup(2), "w")
    env = environment()
    results = {}
    with open(capture_path, encoding="utf-8", errors="replace") as capture:
        for name in names:
            started = time.monotonic()
            results[name] = run_query(env, name, events, side, capture)
            results[name]["seconds"] = time.monotonic() - started
            print(f"flink {name}: {len(results[name]['lines'])} lines", file=sys.stderr)
    Path(out).write_text(json.dumps(results))
    os.unlink(capture_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
