"""TPC-H queries in a local Flink mini-cluster, run by the Flink interpreter.

    <flink-python> bench/tpch_flink_job.py REQUEST.json RESULT.json

The request (written by ``bench.tpch``) holds the tables' DDL (filesystem connector,
debezium-json files: the same events, table by table in the same order, as the Kafka
topics deltaflow reads), the DDL of small warm-up copies of those files, and the queries
(``q``, ``sql``, ``views``, ``columns``). ``mode`` is

- ``answer``: each query into a ``print`` sink of one column, ``JSON_ARRAY`` of the
  query's columns (so strings with commas and NULLs stay readable); the JVM's stdout is
  pointed at a capture file before the JVM starts and its lines are split by
  print-identifier (``q<n>``) into each query's changelog;
- ``bench``: one JVM serving queries one at a time (a JSON line on stdin, a JSON line of
  results back on the original stdout), so the caller can interleave them with its own
  runs: per query a warm-up job over the small files first (class loading and JIT in the
  same JVM), then the timed job into a ``blackhole`` sink: ``seconds`` from submit to the
  job's end, the CPU seconds of this process and the JVM in that time, and their peak
  summed RSS during the job (a JVM keeps its heap, so this grows with earlier queries).

Either way each query's optimized physical plan (``EXPLAIN`` of its SELECT) is recorded,
or the planning error. Only the standard library and pyflink are imported.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time


def environment():
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("parallelism.default", "1")
    conf.set("table.local-time-zone", "UTC")
    return env


def declare(env, database: str, ddl: list[str], views: list[str]) -> None:
    """A fresh database holding the tables and the query's views."""
    env.use_database("default_database")
    env.execute_sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
    env.execute_sql(f"CREATE DATABASE `{database}`")
    env.use_database(database)
    for statement in ddl + views:
        env.execute_sql(statement)


def message(err: BaseException) -> str:
    lines = [ln for ln in str(err).splitlines() if ln.strip() and not ln.lstrip().startswith("at ")]
    causes = [ln for ln in lines if "Exception" in ln] or lines
    return causes[0].strip()[:400] if causes else repr(err)


def physical(env, sql: str) -> str:
    from pyflink.table.explain_detail import ExplainDetail

    text = env.explain_sql(sql, ExplainDetail.CHANGELOG_MODE)
    found = re.search(r"== Optimized Physical Plan ==\n(.*?)\n\n", text, re.S)
    return found.group(1) if found else text


def blackhole(env, name: str, query: dict) -> tuple[float, float]:
    """Seconds from submit to the job's end, and the CPU seconds of this process and the
    JVM (its child) in that time."""
    started, cpu = time.perf_counter(), tree_cpu(os.getpid())
    sql = f"CREATE TABLE {name} WITH ('connector' = 'blackhole') AS {query['sql']}"
    env.execute_sql(sql).wait()
    return time.perf_counter() - started, tree_cpu(os.getpid()) - cpu


def tree(pid: int) -> set[int]:
    """``pid`` and its descendants (each once), from /proc."""
    found, stack = set(), [pid]
    while stack:
        p = stack.pop()
        if p in found:
            continue
        found.add(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                stack += [int(k) for k in open(f"/proc/{p}/task/{tid}/children").read().split()]
        except OSError:
            pass
    return found


def tree_cpu(pid: int) -> float:
    """utime + stime of ``pid`` and its live descendants, from /proc."""
    total = 0
    for p in tree(pid):
        try:
            fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def answer_sql(query: dict) -> str:
    names = [f"c{i}" for i in range(query["columns"])]
    values = [f"CAST({n} AS STRING)" if i in query["dates"] else n for i, n in enumerate(names)]
    return (
        f"INSERT INTO ans_q{query['q']} SELECT JSON_ARRAY({', '.join(values)} NULL ON NULL) "
        f"FROM ({query['sql']}) AS t ({', '.join(names)})"
    )


def run_answers(env, request: dict, capture) -> dict:
    out = {}
    for query in request["queries"]:
        q = query["q"]
        declare(env, f"db_q{q}", request["ddl"], query["views"])
        env.execute_sql(
            f"CREATE TABLE ans_q{q} (j STRING) WITH ('connector' = 'print', "
            f"'print-identifier' = 'q{q}')"
        )
        result = {"plan": None, "error": None, "lines": []}
        started = time.perf_counter()
        try:
            result["plan"] = physical(env, query["sql"])
            env.execute_sql(answer_sql(query)).wait()
        except Exception as err:  # noqa: BLE001 - a planning or run error is a result here
            result["error"] = message(err)
        result["seconds"] = time.perf_counter() - started
        result["lines"] = [ln for ln in capture.read().splitlines() if ln.startswith(f"q{q}> ")]
        out[str(q)] = result
        print(f"flink q{q}: {len(result['lines'])} changes", file=sys.stderr, flush=True)
    return out


def bench_one(env, request: dict, query: dict) -> dict:
    q = query["q"]
    result = {"plan": None, "error": None}
    try:
        declare(env, f"warm_q{q}", request["warmup_ddl"], query["views"])
        result["warmup_seconds"], _ = blackhole(env, "bh", query)
        declare(env, f"db_q{q}", request["ddl"], query["views"])
        result["plan"] = physical(env, query["sql"])
        with PeakRss(os.getpid()) as peak:
            result["seconds"], result["cpu_s"] = blackhole(env, "bh", query)
        result["rss_mb"] = peak.mb
    except Exception as err:  # noqa: BLE001 - a planning or run error is a result here
        result["error"] = message(err)
    return result


def serve(env, request: dict, saved: int) -> None:
    """Bench mode: one query (a JSON line) at a time from stdin, one JSON line back."""
    for line in sys.stdin:
        result = bench_one(env, request, json.loads(line))
        os.write(saved, (json.dumps(result) + "\n").encode())


class PeakRss(threading.Thread):
    """The peak summed VmRSS of a process tree (this process and the JVM), sampled."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0, threading.Event()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join()

    def run(self) -> None:
        while not self.done.wait(0.1):
            self.peak = max(self.peak, tree_rss(self.pid))

    @property
    def mb(self) -> float:
        return max(self.peak, tree_rss(self.pid)) / 2**20


def tree_rss(pid: int) -> int:
    total = 0
    for p in tree(pid):
        try:
            status = open(f"/proc/{p}/status").read()
            total += int(status.split("VmRSS:")[1].split()[0]) * 1024
        except (OSError, IndexError):
            continue
    return total


def main(argv: list[str]) -> int:
    request_path, result_path = argv[0], argv[1]
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    capture_path = result_path + ".stdout"
    fd = os.open(capture_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    saved = os.dup(1)
    os.dup2(fd, 1)  # the JVM started below inherits this stdout
    env = environment()
    with open(capture_path, encoding="utf-8", errors="replace") as capture:
        if request["mode"] != "answer":
            serve(env, request, saved)
            return 0
        result = run_answers(env, request, capture)
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    os.write(saved, b'{"done": true}\n')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
