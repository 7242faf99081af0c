"""Nexmark q0..q22: events/s and peak memory per query, deltaflow beside Flink 2.3, in one run.

    python -m bench.nexmark [--events 200000] [--rate 1000] [--queries q0,q1,...]
                            [--flink-python /work/flinkvenv/bin/python] [--parallelism 1]

The events come from ``bench/nexmark_gen.py`` (seed 1), written once to a file and produced
once to a topic of an embedded tansu broker on a free loopback port. For each query:

- deltaflow: ``python -m bench.nexmark deltaflow Q ...`` in its own process, reading the
  topic from earliest to its end (plain JSON, Nexmark's nested layout) into a ``blackhole``
  sink; timed as the whole process (interpreter start, imports, planning, the run; it ends
  as ``deltaflow run``'s job process does, with ``os._exit`` once its output is flushed, so
  not freeing the job's objects one by one), its peak RSS and CPU sampled from /proc over
  the process tree;
- Flink: ``bench/nexmark_flink.py`` in the PyFlink venv, a ``filesystem`` source of the same
  lines into ``blackhole``, at the given parallelism; timed as the job only, after a warm-up
  job of the same query in the same JVM; peak RSS of its process tree (the JVM and, for q14,
  the Python UDF worker).

Both rates are input events (all three kinds) per second; deltaflow's job rate (planning to
the end of the run, in the process) is shown beside its whole-process rate. Prints a
Markdown table (``--from-json FILE`` prints it again from a ``--json`` file).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench import measure, nexmark_gen
from bench import nexmark_queries as nq

ROOT = Path(__file__).resolve().parent.parent
UDF = "CREATE TEMPORARY FUNCTION count_char AS 'nexmark_udfs.count_char' LANGUAGE PYTHON"
SIDE_KEYS = 10000
TIMEOUT_S = 1800


def deltaflow_sql(query: str, bootstrap: str, topic: str, side_topic: str) -> str:
    common = f"'properties.bootstrap.servers' = '{bootstrap}'"
    bounded = "'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset'"
    source = f"'connector' = 'kafka', 'topic' = '{topic}', {common}, {bounded}, 'format' = 'json'"
    side = (
        f"'connector' = 'kafka', 'topic' = '{side_topic}', {common}, {bounded}, 'format' = 'json'"
    )
    return ";\n".join(nq.statements(query, source, "'connector' = 'blackhole'", side, UDF)) + ";"


def child(argv: list[str]) -> int:
    """The deltaflow side of one query (a process of its own): prints events and seconds."""
    query, bootstrap, topic, side_topic, state = argv
    sys.path.insert(0, str(ROOT / "bench"))  # q14's nexmark_udfs.count_char
    from deltaflow.processor.job import Job, JobOptions
    from deltaflow.processor.planner.api import plan_job

    started = time.perf_counter()
    planned = plan_job(deltaflow_sql(query, bootstrap, topic, side_topic))
    job = Job(planned.plan, JobOptions(state_dir=Path(state), bootstrap=bootstrap))
    job.run()
    seconds = time.perf_counter() - started
    print(json.dumps({"events": job.stats.total_in, "seconds": seconds}), flush=True)
    return 0


def produce(bootstrap: str, topic: str, lines: list[bytes]) -> None:
    from bench.kafka_io import create_topics, producer

    create_topics(bootstrap, [topic])
    out = producer(bootstrap)
    for line in lines:
        out.produce(topic, value=line)
        out.poll(0)
    out.flush(120)


def _result(got: measure.Measured) -> dict:
    lines = [ln for ln in got.stdout.splitlines() if ln.startswith("{")]
    if got.returncode != 0 or not lines:
        tail = " | ".join(got.stderr.strip().splitlines()[-2:])
        return {"error": f"exited {got.returncode}: {tail[:300]}"}
    result = json.loads(lines[-1])
    result.update(wall_s=got.wall_s, peak_rss_mb=got.peak_rss_mb, cpu_s=got.cpu_s)
    return result


def run_query(query: str, ctx: dict, work: Path) -> dict:
    cmd = [sys.executable, "-m", "bench.nexmark", "deltaflow", query, ctx["bootstrap"],
           ctx["topic"], ctx["side_topic"], str(work / f"state-{query}")]  # fmt: skip
    ours = _result(measure.run(cmd, str(ROOT), TIMEOUT_S))
    if "seconds" in ours:
        ours["rate"] = ctx["events"] / ours["wall_s"]  # the whole process
    cmd = [ctx["flink_python"], str(ROOT / "bench" / "nexmark_flink.py"), query,
           str(ctx["file"]), str(ctx["side"]), str(ctx["parallelism"])]  # fmt: skip
    flink = _result(measure.run(cmd, str(ROOT), TIMEOUT_S))
    if "seconds" in flink:
        flink["rate"] = flink["events"] / flink["seconds"]  # the warm job
    return {"query": query, "deltaflow": ours, "flink": flink, "load": measure.load()}


def _rate(side: dict, key: str = "rate") -> str:
    if key not in side:
        return "refused" if "error" in side else "n/a"
    return f"{side[key]:,.0f}"


def table(rows: list[dict]) -> str:
    out = ["| query | deltaflow events/s (whole process) | deltaflow events/s (job) | "
           "Flink events/s (warm job) | deltaflow / Flink | deltaflow CPU s | Flink job CPU s | "
           "deltaflow peak RSS MB | Flink peak RSS MB | load (1/5/15 min) |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    for row in rows:
        ours, theirs = row["deltaflow"], row["flink"]
        if "seconds" in ours:
            ours["job_rate"] = ours["events"] / ours["seconds"]
        a, b = ours.get("rate"), theirs.get("rate")
        ratio = f"{a / b:.2f}x" if a and b else "-"
        cpu = f"{ours['cpu_s']:.1f}" if "rate" in ours else "n/a"
        job_cpu = f"{theirs['job_cpu_s']:.1f}" if "job_cpu_s" in theirs else "n/a"
        mb = [f"{s['peak_rss_mb']:,.0f}" if "rate" in s else "n/a" for s in (ours, theirs)]
        out.append(f"| {row['query']} | {_rate(ours)} | {_rate(ours, 'job_rate')} | "
                   f"{_rate(theirs)} | {ratio} | {cpu} | {job_cpu} | {mb[0]} | {mb[1]} | {row['load']} |")  # fmt: skip
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if argv[:1] == ["deltaflow"]:
        return child(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m bench.nexmark")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--queries", default=",".join(nq.NAMES))
    parser.add_argument("--flink-python", default="/work/flinkvenv/bin/python")
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--json", default="", help="also write the raw results here")
    parser.add_argument("--from-json", default="", help="only print the table of a --json file")
    args = parser.parse_args(argv)
    if args.from_json:
        print(table(json.loads(Path(args.from_json).read_text())))
        return 0
    from deltaflow.connectors.broker import EmbeddedBroker

    with tempfile.TemporaryDirectory(prefix="nexmark-bench-") as folder:
        work = Path(folder)
        events, side = work / "nexmark.jsonl", work / "side_input.csv"
        nexmark_gen.write(str(events), args.events, nexmark_gen.Config(seed=1, rate=args.rate))
        side.write_text("".join(f"{k},v{k}\n" for k in range(SIDE_KEYS)))
        broker = EmbeddedBroker(port=0).start()
        try:
            ctx = {"bootstrap": broker.bootstrap, "topic": "nexmark", "side_topic": "side",
                   "events": args.events, "file": events, "side": side,
                   "flink_python": args.flink_python, "parallelism": args.parallelism}  # fmt: skip
            produce(broker.bootstrap, "nexmark", events.read_bytes().splitlines())
            sides = [json.dumps({"key": k, "value": f"v{k}"}).encode() for k in range(SIDE_KEYS)]
            produce(broker.bootstrap, "side", sides)
            rows = []
            for query in args.queries.split(","):
                rows.append(run_query(query, ctx, work))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        finally:
            broker.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(table(rows))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["deltaflow"]:
        # the job's process ends as `deltaflow run`'s does (supervise._child): streams
        # flushed, then os._exit, without freeing the job's objects one by one
        code = main(sys.argv[1:])
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(main(sys.argv[1:]))
