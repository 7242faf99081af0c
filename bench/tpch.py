"""``python -m bench.tpch``: TPC-H per query, deltaflow against Flink 2.3 on the same events.

The tables come from ``tests/tpch`` (DuckDB's dbgen at ``--sf``, then a snapshot, RF1
inserts, updates and RF2 deletes as Debezium events). They are produced to one topic per
table on an embedded tansu broker and written to one debezium-json file per table (the
same events in the same order). Then, in one run:

1. Flink answers every query in one JVM (``bench/tpch_flink_job.py`` answer mode, print sinks):
   its final tables are compared with DuckDB's answer on the final snapshot;
2. per query, interleaved: deltaflow in its own process (``bench.tpch_child``: Kafka topics
   in, a kafka sink out, events/s from the job's run; its sink folded and compared with
   DuckDB; with ``--blackhole`` the timed figures come from a second run of the job into a
   blackhole sink, as Flink's), then the same query in one long-lived Flink JVM at
   parallelism 1 (a warm-up job over the first 2,000 lines of each file, then the timed job
   into a blackhole sink).

Peak RSS: deltaflow's process tree; Flink's JVM (with the Python driver) during the timed
job. CPU seconds: each engine's process in its timed span. State is the LMDB MB
deltaflow's job left. ``--markdown`` writes the table as docs/PERFORMANCE.md shows it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench import measure
from deltaflow.connectors.broker import EmbeddedBroker, ensure_topics

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "tpch"))  # the TPC-H data, queries and judge
import tpch_data  # noqa: E402
import tpch_flink  # noqa: E402
import tpch_queries  # noqa: E402
import tpch_run  # noqa: E402

from bench.__main__ import snapshot_env  # noqa: E402
from bench.tpch_plans import flink_shape, our_shape, table_markdown, tables_read  # noqa: E402

TIMEOUT_S = 1800


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.tpch", description=__doc__)
    p.add_argument("--sf", type=float, default=0.01, help="TPC-H scale factor (default 0.01)")
    p.add_argument("--queries", default="", help="comma-separated query numbers (default all)")
    p.add_argument("--flink-python", default="/work/flinkvenv/bin/python")
    p.add_argument("--work", default="", help="folder for files and state (default: a temp dir)")
    p.add_argument(
        "--answers",
        default="",
        help="reuse Flink's answers from an earlier run's "
        "flink-answers.result.json (same --sf) instead of answering again",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT_S,
        help="seconds a deltaflow job may run before it is stopped (default 1800)",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="cProfile each deltaflow job into WORK/qN.prof (slows it down)",
    )
    p.add_argument(
        "--no-flink",
        action="store_true",
        help="run deltaflow's jobs only (with --profile: profiles without Flink's runs)",
    )
    p.add_argument(
        "--blackhole",
        action="store_true",
        help="time deltaflow into a blackhole sink, as Flink's timed job is (a second run of "
        "each query; the answer is still checked from the kafka sink's run)",
    )
    p.add_argument(
        "--base",
        default="",
        help="a commit whose deltaflow runs each query too, just before this code (A/B)",
    )
    p.add_argument(
        "--before-image",
        choices=("state", "message"),
        default="",
        help="deltaflow's 'debezium-json.before-image' for every table (default: the "
        "format's own, 'state' with a primary key; 'message' is Flink's behaviour)",
    )
    p.add_argument("--results", default="bench-tpch.json")
    p.add_argument("--markdown", default="")
    return p.parse_args(argv)


def run_flink(args, work: Path, request: dict, tag: str) -> tuple[dict, measure.Measured]:
    cmd, result_path = tpch_flink.command(args.flink_python, work, request, tag)
    got = measure.run(cmd, str(ROOT), TIMEOUT_S)
    if not result_path.exists():
        tail = " | ".join(got.stderr.strip().splitlines()[-3:])
        return {str(q["q"]): {"error": f"exited {got.returncode}: {tail}"}
                for q in request["queries"]}, got  # fmt: skip
    return json.loads(result_path.read_text(encoding="utf-8")), got


def judge(data, q: int, folded) -> str:
    expected = tpch_run.continuous_answer(tpch_run.duckdb_answer(data, q), q)
    wrong = tpch_run.differences(folded, expected)
    return "y" if not wrong else f"n ({wrong[0][:80]})"


def run_ours(ctx: dict, q: int, env: dict | None = None) -> dict:
    sink = f"tpch-bench-q{q}-{uuid.uuid4().hex[:6]}"
    ensure_topics(ctx["bootstrap"], [sink])
    tag = "-base" if env is not None else ""  # --base: its own job file and state
    sql = tpch_run.job_sql(q, ctx["sources"], ctx["bootstrap"], sink)
    out = _child(ctx, f"q{q}{tag}", sql, env)
    if "error" in out:
        return out
    out["match"] = judge(ctx["data"], q, tpch_run.fold(ctx["bootstrap"], sink))
    out["shape"] = our_shape(out.pop("plan"))
    if ctx["args"].blackhole:  # the timed run: the same job into a blackhole sink
        head, _, rest = sql.partition("CREATE TABLE result (")
        columns, _, tail = rest.partition(") WITH (")
        sql = f"{head}CREATE TABLE result ({columns}) WITH ('connector' = 'blackhole');\n"
        sql += tail.partition(";\n")[2]
        timed = _child(ctx, f"q{q}{tag}-blackhole", sql, env)
        if "error" in timed:
            return timed
        timed.pop("plan")
        out.update(timed, sink="blackhole")
    return out


def _child(ctx: dict, name: str, sql: str, env: dict | None) -> dict:
    """One run of ``bench.tpch_child`` over the job ``sql`` (file and state named ``name``)."""
    job = ctx["work"] / f"{name}.sql"
    job.write_text(sql, encoding="utf-8")
    state = ctx["work"] / f"state-{name}"
    cmd = [sys.executable, "-m", "bench.tpch_child", str(job), str(state), ctx["bootstrap"]]
    if ctx["args"].profile:
        cmd.append(str(ctx["work"] / f"{name}.prof"))
    got = measure.run(cmd, str(ROOT), ctx["args"].timeout, env)
    lines = [ln for ln in got.stdout.splitlines() if ln.startswith("{")]
    if got.returncode != 0 or not lines:
        tail = " | ".join(got.stderr.strip().splitlines()[-3:])
        return {"error": f"exited {got.returncode}: {tail}", "rss_mb": got.peak_rss_mb}
    out = json.loads(lines[-1])
    out.update(rss_mb=got.peak_rss_mb, wall_s=got.wall_s, process_cpu_s=got.cpu_s,
               load=measure.load())  # fmt: skip
    return out


class FlinkServer:
    """One Flink JVM (tpch_flink_job.py's bench mode) answering one query at a time."""

    def __init__(self, args, work: Path, request: dict) -> None:
        cmd, _ = tpch_flink.command(args.flink_python, work, dict(request, mode="bench"), "bench")
        self.stderr = open(work / "flink-bench.stderr", "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, start_new_session=True)  # fmt: skip

    def ask(self, query: dict) -> dict:
        self.proc.stdin.write(json.dumps(query) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            return {"error": f"Flink exited {self.proc.wait()} (see flink-bench.stderr)"}
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=120)
        self.stderr.close()


def run_one(ctx: dict, q: int, answers: dict) -> dict:
    tables = tables_read(tpch_run.job_sql(q, ctx["sources"], ctx["bootstrap"], "x"))
    events = sum(len(ctx["data"].events[t]) for t in tables)
    row = {"q": q, "events": events}
    if ctx.get("base_env") is not None:  # --base: that commit's job first, then this code's
        row["base"] = run_ours(ctx, q, ctx["base_env"])
    row["deltaflow"] = run_ours(ctx, q)
    if ctx["flink"] is None:
        row["flink"] = {"match": "-"}
        print(f"  q{q}: {json.dumps(row)[:600]}", flush=True)
        _keep(ctx, row)
        return row
    flink = ctx["flink"].ask(tpch_flink.queries(ctx["sources"], [q])[0])
    flink["load"] = measure.load()
    answer = answers.get(str(q), {})
    flink["match"] = (
        f"n ({answer.get('error')})"
        if answer.get("error") or "lines" not in answer
        else judge(ctx["data"], q, tpch_flink.fold_lines(answer["lines"]))
    )
    flink["shape"] = flink_shape(flink.get("plan") or answer.get("plan") or "")
    flink.pop("plan", None)
    row["flink"] = flink
    print(f"  q{q}: {json.dumps(row)[:600]}", flush=True)
    _keep(ctx, row)
    return row


def _keep(ctx: dict, row: dict) -> None:
    """Append the row to RESULTS.jsonl as it is measured (a long run stopped midway keeps
    the queries it finished)."""
    with open(ctx["args"].results + "l", "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    queries = (
        [int(q) for q in args.queries.split(",")] if args.queries else sorted(tpch_queries.QUERIES)
    )
    work = Path(args.work or tempfile.mkdtemp(prefix="deltaflow-tpch-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.time()
    print(f"bench.tpch: sf={args.sf}, load {measure.load()}, work {work}", flush=True)
    data = tpch_data.generate(args.sf)
    files, heads = tpch_flink.write_files(data, work / "data")
    with EmbeddedBroker() as broker:
        topics = {t: f"tpch-{t}" for t in tpch_data.PRIMARY_KEYS}
        tpch_run.produce(data, broker.bootstrap, topics)
        extra = f"'debezium-json.before-image' = '{args.before_image}'" if args.before_image else ""
        sources = tpch_run.source_ddl(data, broker.bootstrap, topics, extra)
        request = {
            "ddl": tpch_flink.file_ddl(data, files),
            "warmup_ddl": tpch_flink.file_ddl(data, heads),
        }
        answer_req = dict(request, mode="answer", queries=tpch_flink.queries(sources, queries))
        if args.no_flink:
            answers = {}
        elif args.answers:
            answers = json.loads(Path(args.answers).read_text(encoding="utf-8"))
        else:
            answers, _ = run_flink(args, work, answer_req, "answers")
        print(f"bench.tpch: Flink answered {len(answers)} queries", flush=True)
        ctx = {"bootstrap": broker.bootstrap, "data": data, "sources": sources, "work": work,
               "request": request, "args": args}  # fmt: skip
        ctx["flink"] = None if args.no_flink else FlinkServer(args, work, request)
        ctx["base_env"] = snapshot_env(args.base, work / "base") if args.base else None
        try:
            rows = [run_one(ctx, q, answers) for q in queries]
        finally:
            if ctx["flink"] is not None:
                ctx["flink"].close()
    result = {"command": "python -m bench.tpch " + " ".join(sys.argv[1:]), "sf": args.sf,
              "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
              "rows": rows}  # fmt: skip
    Path(args.results).write_text(json.dumps(result, indent=1), encoding="utf-8")
    text = table_markdown(rows)
    print("\n" + text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
