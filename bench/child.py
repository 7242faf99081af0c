"""One system running one workload, in its own process: ``python -m bench.child``.

Prints one JSON line on stdout: ``events`` processed and ``seconds`` from the moment
the system is ready to read (imports and SQL planning excluded) to the moment its
output is flushed. ``--profile FILE`` writes the cProfile top functions instead of
timing cleanly.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time


def run_deltaflow(args: argparse.Namespace, topics: dict[str, str]) -> dict:
    from pathlib import Path

    from bench.jobs import kafka_job
    from deltaflow.processor.job import Job, JobOptions
    from deltaflow.processor.planner.api import plan_job

    planned = plan_job(kafka_job(args.workload, args.bootstrap, topics), source_name=args.workload)
    plan_text = planned.explain()
    started, main_cpu = time.perf_counter(), time.thread_time()
    job = Job(planned.plan, JobOptions(state_dir=Path(args.state_dir), bootstrap=args.bootstrap))
    profile(args, job.run)
    main_cpu = time.thread_time() - main_cpu  # the job's own thread: not librdkafka's
    import deltaflow.processor.job as job_module

    seconds = time.perf_counter() - started
    from bench.measure import state_mb

    return {"events": job.stats.total_in, "seconds": seconds,
            "delta_join": "DeltaJoin" in plan_text, "plan": plan_text,
            "code": job_module.__file__, "state_mb": state_mb(args.state_dir),
            "main_thread_cpu_s": main_cpu}  # fmt: skip


def run_hand(args: argparse.Namespace, topics: dict[str, str]) -> dict:
    from bench.baselines import RUN

    started = time.perf_counter()
    events = profile(args, lambda: RUN[args.workload](args.bootstrap, topics))
    return {"events": events, "seconds": time.perf_counter() - started}


def run_hand_tuned(args: argparse.Namespace, topics: dict[str, str]) -> dict:
    """The hand loop reading with the fetch settings deltaflow's source uses."""
    from bench import kafka_io

    kafka_io.FETCH = kafka_io.TUNED_FETCH
    return run_hand(args, topics)


def run_quix(args: argparse.Namespace, topics: dict[str, str]) -> dict:
    from bench.quix import run

    return run(args.workload, args.bootstrap, topics, args.events, args.state_dir)


def profile(args: argparse.Namespace, fn):
    if not args.profile:
        return fn()
    prof = cProfile.Profile()
    result = prof.runcall(fn)
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
    with open(args.profile, "w", encoding="utf-8") as out:
        out.write(text.getvalue())
    return result


SYSTEMS = {"deltaflow": run_deltaflow, "hand": run_hand, "hand-tuned": run_hand_tuned,
           "quix": run_quix}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.child")
    parser.add_argument("system", choices=sorted(SYSTEMS))
    parser.add_argument("workload")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--orders", required=True)
    parser.add_argument("--items", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--events", type=int, default=0, help="input events (quix stops there)")
    parser.add_argument("--state-dir", default="")
    parser.add_argument("--profile", default="")
    args = parser.parse_args(argv)
    topics = {"orders": args.orders, "items": args.items, "out": args.out}
    result = SYSTEMS[args.system](args, topics)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
