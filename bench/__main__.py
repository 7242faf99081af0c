"""``python -m bench``: load the events, run every system on every workload, print the table.

Quick run: ``python -m bench --orders 100000 --items 10000 --repeat 1``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import measure, report
from bench.data import Shape
from bench.jobs import skewed
from bench.kafka_io import create_topics
from bench.load import produce_files, write_files
from bench.runner import ROOT, Context, Run, child_command, run_once

PLAN = {  # workload -> systems that run it
    "W0": ["floor"], "W0b": ["floor"],
    "W1": ["deltaflow", "hand", "hand-tuned", "quix", "flink"],
    "W2": ["deltaflow", "hand", "hand-tuned", "quix", "flink"],
    "W2M": ["deltaflow", "flink"],
    "W1msg": ["deltaflow"], "W2msg": ["deltaflow"],
    "W3": ["deltaflow", "hand", "hand-tuned", "flink"],
    "W3D": ["deltaflow", "flink"],
    "W3R": ["deltaflow"],
    "W3S": ["deltaflow", "hand", "hand-tuned"],
    "W3SR": ["deltaflow"],
    "W4": ["deltaflow", "flink"],
    "W4R": ["deltaflow"],
}  # fmt: skip


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--orders", type=int, default=1_000_000, help="order changes (default 1M)")
    p.add_argument("--items", type=int, default=100_000, help="item changes (default 100k)")
    p.add_argument("--repeat", type=int, default=3, help="runs per cell; the median is reported")
    p.add_argument("--repeat-slow", type=int, default=0, help="runs per cell for Quix and Flink")
    p.add_argument(
        "--workloads",
        default=",".join(w for w in PLAN if not w.endswith("msg")),
        help="comma-separated subset of " + ",".join(PLAN),
    )
    p.add_argument("--systems", default="floor,deltaflow,hand,hand-tuned,quix,flink")
    p.add_argument(
        "--flink-python",
        default="/work/flinkvenv/bin/python",
        help="an interpreter with apache-flink==2.3.0 (skipped if missing)",
    )
    p.add_argument("--flink-parallelism", type=int, default=1)
    p.add_argument(
        "--profile", action="store_true", help="one extra cProfile run of deltaflow per workload"
    )
    p.add_argument(
        "--latency", action="store_true", help="also run the steady-rate latency workload"
    )
    p.add_argument("--latency-rate", type=int, default=20_000)
    p.add_argument("--latency-seconds", type=float, default=15.0)
    p.add_argument(
        "--work", default="", help="folder for data, state and results (default: a temp dir)"
    )
    p.add_argument(
        "--code",
        default="",
        help="a git ref (e.g. HEAD) to benchmark from a snapshot instead of the working tree",
    )
    p.add_argument("--results", default="bench-results.json", help="where the JSON results go")
    p.add_argument("--markdown", default="", help="also write the tables and profiles as Markdown")
    return p.parse_args(argv)  # fmt: skip


def cells(args: argparse.Namespace) -> list[tuple[str, str]]:
    wanted = set(args.systems.split(","))
    if not Path(args.flink_python).exists():
        print(f"bench: no Flink interpreter at {args.flink_python}; Flink skipped", file=sys.stderr)
        wanted.discard("flink")
    return [(w, s) for w in args.workloads.split(",") for s in PLAN[w] if s in wanted]


def system_of(system: str) -> str:
    """The child that runs ``system``: the floor is the hand loop's W0 with tuned fetching."""
    return "hand-tuned" if system == "floor" else system


def snapshot_env(ref: str, work: Path) -> dict | None:
    """With ``ref``: extract that commit's packages and put them first on PYTHONPATH, so
    the children import that code, not the working tree others may be editing."""
    if not ref:
        return None
    src, ns = work / "src", work / "ns" / "deltaflow"
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(ns, ignore_errors=True)
    src.mkdir(parents=True, exist_ok=True)
    ns.mkdir(parents=True, exist_ok=True)
    folders = ["formats", "state", "connectors", "processor"]
    archive = subprocess.run(["git", "archive", ref, *folders], cwd=ROOT, check=True,
                             capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    for folder in folders:
        (ns / folder).symlink_to(src / folder)
    # bytecode now, as pip does at install: children may run with PYTHONDONTWRITEBYTECODE
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
    return dict(os.environ, PYTHONPATH=str(ns.parent))


def code_version(ref: str) -> str:
    rev = subprocess.run(["git", "rev-parse", "--short", ref or "HEAD"], cwd=ROOT,
                         capture_output=True, text=True).stdout.strip()  # fmt: skip
    return f"{rev} (snapshot)" if ref else f"{rev} + working tree"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from deltaflow.connectors.broker import EmbeddedBroker

    work = Path(args.work or tempfile.mkdtemp(prefix="deltaflow-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.time()
    args.code_version = code_version(args.code)  # before others commit during the run
    print(f"bench: code {args.code_version}; load {measure.load()}")
    print(f"bench: generating {args.orders:,} order and {args.items:,} item changes in {work}")
    data = write_files(Shape(args.orders, args.items), work / "data")
    with EmbeddedBroker() as broker:
        topics = {"orders": "orders", "items": "items"}
        create_topics(broker.bootstrap, list(topics.values()))
        produce_files(data, broker.bootstrap, topics)
        env = snapshot_env(args.code, work)
        ctx = Context(broker.bootstrap, data, topics, work, args.flink_python,
                      args.flink_parallelism, env)  # fmt: skip
        if any(skewed(w) for w in args.workloads.split(",")):
            ctx.skewed = skewed_data(args, work, broker.bootstrap)
        runs = run_all(ctx, args)
        profiles = run_profiles(ctx, args) if args.profile else {}
        latency = None
        if args.latency:
            from bench.latency import measure_latency

            latency = measure_latency(
                broker.bootstrap, work, args.latency_rate, args.latency_seconds, env
            )
    summary = report.summarise(runs)
    print("\n" + report.table(summary) + "\n\n" + report.ratios(summary) + "\n\n"
          + report.state_table(runs))  # fmt: skip
    if latency:
        print(f"\nlatency (W1 daemon at {args.latency_rate:,}/s): {json.dumps(latency)}")
    save(args, work, runs, profiles, latency, started)
    if args.markdown:
        text = report.markdown(summary, profiles, latency, args.latency_rate, runs)
        Path(args.markdown).write_text(text, encoding="utf-8")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def skewed_data(args: argparse.Namespace, work: Path, bootstrap: str):
    """W3S's orders (hot items, ``bench.data``) in their own topic; the items are W3's."""
    data = write_files(Shape(args.orders, args.items, skew=True), work / "data-skewed")
    topics = {"orders": "orders-skewed", "items": "items-skewed"}
    create_topics(bootstrap, list(topics.values()))
    produce_files(data, bootstrap, topics)
    return data, topics


def run_all(ctx: Context, args: argparse.Namespace) -> list[Run]:
    runs = []
    for workload, system in cells(args):
        slow = system in ("quix", "flink") and args.repeat_slow
        for i in range(args.repeat_slow if slow else args.repeat):
            run = run_once(ctx, system_of(system), workload, check=i == 0)
            run.system = system
            runs.append(run)
            print(f"  {workload:4} {system:9} {run.rate:>10,.0f} ev/s  {run.peak_rss_mb:6.0f} MB  "
                  f"{run.cpu_s:6.1f} cpu-s  correct={run.correct}  load={run.load} {run.note}",
                  flush=True)  # fmt: skip
    return runs


def run_profiles(ctx: Context, args: argparse.Namespace) -> dict[str, str]:
    """cProfile of deltaflow per workload: the top functions by own time."""
    out = {}
    for workload in [w for w in args.workloads.split(",") if "deltaflow" in PLAN[w]]:
        path = ctx.work / f"profile-{workload}.txt"
        topic = f"out-profile-{workload}-{int(time.time())}"
        create_topics(ctx.bootstrap, [topic])
        cmd = child_command(ctx, "deltaflow", workload, topic, str(path))
        measure.run(cmd, str(ROOT), 1800, ctx.env)
        out[workload] = path.read_text(encoding="utf-8") if path.exists() else "(no profile)"
        print(f"\n-- cProfile, deltaflow {workload} --\n{out[workload]}")
    return out


def save(args, work: Path, runs: list[Run], profiles: dict, latency, started: float) -> None:
    result = {
        "command": "python -m bench " + " ".join(sys.argv[1:]),
        "code": args.code_version,
        "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
        "runs": [vars(r) | {"rate": r.rate} for r in runs],
        "profiles": profiles,
        "latency": latency,
    }
    Path(args.results).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    print(f"\nbench: results in {args.results}")


if __name__ == "__main__":
    sys.exit(main())
