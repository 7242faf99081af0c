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
- ``bench``: per query, a warm-up job over the small files first (class loading and JIT
  in the same JVM), then the timed job into a ``blackhole`` sink: ``seconds`` from
  submit to the job's end.

Either way each query's optimized physical plan (``EXPLAIN`` of its SELECT) is recorded,
or the planning error. Only the standard library and pyflink are imported.
"""

from __future__ import annotations

import json
import os
import re
import sys
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


def blackhole(env, name: str, query: dict) -> float:
    started = time.perf_counter()
    sql = f"CREATE TABLE {name} WITH ('connector' = 'blackhole') AS {query['sql']}"
    env.execute_sql(sql).wait()
    return time.perf_counter() - started


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


def run_bench(env, request: dict) -> dict:
    out = {}
    for query in request["queries"]:
        q = query["q"]
        result = {"plan": None, "error": None}
        try:
            declare(env, f"warm_q{q}", request["warmup_ddl"], query["views"])
            result["warmup_seconds"] = blackhole(env, "bh", query)
            declare(env, f"db_q{q}", request["ddl"], query["views"])
            result["plan"] = physical(env, query["sql"])
            result["seconds"] = blackhole(env, "bh", query)
        except Exception as err:  # noqa: BLE001 - a planning or run error is a result here
            result["error"] = message(err)
        out[str(q)] = result
    return out


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
        if request["mode"] == "answer":
            result = run_answers(env, request, capture)
        else:
            result = run_bench(env, request)
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    os.write(saved, b'{"done": true}\n')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
