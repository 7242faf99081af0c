"""One Nexmark query on Flink 2.3 in a local mini-cluster, run by the PyFlink interpreter.

``<flink-python> bench/nexmark_flink.py QUERY EVENTS.jsonl SIDE.csv [parallelism]`` prints one
JSON line: ``events`` (lines of the file), ``seconds`` (the timed job, submit to finish) and
``warmup_seconds``, ``job_cpu_s`` (CPU seconds of the JVM and its workers during the timed
job, read from /proc), or ``error`` with Flink's refusal. The ``datagen`` table is a
``filesystem`` source of the JSON lines, the sink Nexmark's ``blackhole``. The same query
first runs over the file's first 2,000 lines in the same JVM, so the timed job does not pay
for class loading and JIT warm-up. Imports only PyFlink, the standard library and
``nexmark_queries``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import nexmark_queries as nq  # noqa: E402

WARMUP_LINES = 2000
UDF = "CREATE TEMPORARY FUNCTION count_char AS 'nexmark_udfs.count_char' LANGUAGE PYTHON"


def prepared(query: str, events: str, side: str, parallelism: int, db: str):
    """A table environment with the query's tables in database ``db``; returns (env, insert)."""
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("parallelism.default", str(parallelism))
    conf.set("table.local-time-zone", "UTC")
    conf.set("python.executable", sys.executable)
    conf.set("python.files", str(HERE / "nexmark_udfs.py"))
    env.execute_sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    env.use_database(db)
    source = f"'connector' = 'filesystem', 'path' = '{events}', 'format' = 'json'"
    side_with = f"'connector' = 'filesystem', 'path' = '{side}', 'format' = 'csv'"
    *ddl, insert = nq.statements(query, source, "'connector' = 'blackhole'", side_with, UDF)
    for stmt in ddl:
        env.execute_sql(stmt)
    return env, insert


def timed(env, insert: str) -> float:
    started = time.perf_counter()
    env.execute_sql(insert).wait()
    return time.perf_counter() - started


def tree_cpu() -> float:
    """CPU seconds used so far by this process and its descendants (the JVM, UDF workers)."""
    parents: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        try:
            stat = Path(entry.path, "stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if stat:
            parents.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
    stack, total = [os.getpid()], 0.0
    while stack:
        pid = stack.pop()
        stack.extend(parents.get(pid, ()))
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def main(argv: list[str]) -> int:
    query, events, side = argv[0], argv[1], argv[2]
    parallelism = int(argv[3]) if len(argv) > 3 else 1
    env, insert = prepared(query, events, side, parallelism, "timed")
    try:
        env.explain_sql(insert)
    except Exception as err:  # noqa: BLE001 - the planner's refusal, reported as data
        causes = [ln for ln in str(err).splitlines() if "Exception" in ln] or [str(err)]
        print(json.dumps({"error": causes[-1].strip()[:300]}), flush=True)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        head = Path(folder) / "head.jsonl"
        with open(events, "rb") as src, open(head, "wb") as dst:
            for _, line in zip(range(WARMUP_LINES), src, strict=False):
                dst.write(line)
        warmup = timed(*prepared(query, str(head), side, parallelism, "warmup"))
    count = sum(1 for _ in open(events, "rb"))
    cpu = tree_cpu()
    seconds = timed(env, insert)
    result = {"events": count, "seconds": seconds, "warmup_seconds": warmup,
              "job_cpu_s": tree_cpu() - cpu}  # fmt: skip
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
