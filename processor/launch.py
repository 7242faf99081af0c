"""The ``deltaflow run`` and ``deltaflow explain`` commands: read and plan the job file,
choose its state directory, start an embedded broker when asked, install the stop
handlers and the metrics endpoint, and run the job (``processor/job.py``)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

from deltaflow.formats.errors import DeltaflowError, StateError
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.job_tables import scans_of
from deltaflow.processor.plan import JobPlan, Node


def read_job(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DeltaflowError(f"job file {path!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as err:
        raise DeltaflowError(f"cannot read job file {path!r}: {err}") from None


def plan_file(path: str):
    from deltaflow.processor.planner.api import plan_job

    return plan_job(read_job(path), source_name=path)


def explain_cli(args: argparse.Namespace) -> int:
    planned = plan_file(args.job)
    for text in planned.explains:
        print(text)
    if planned.plan.sinks:
        print(planned.explain())
    return 0


def default_state_dir(job_path: str) -> Path:
    return Path.cwd() / "deltaflow-state" / Path(job_path).stem


def names_bootstrap(plan: JobPlan) -> bool:
    nodes: list[Node] = [*scans_of(plan), *plan.sinks]
    return any("properties.bootstrap.servers" in getattr(n, "options", {}) for n in nodes)


def run_cli(args: argparse.Namespace) -> int:
    stop = install_stop_handlers()
    planned = plan_file(args.job)
    state_dir = Path(args.state_dir) if args.state_dir else default_state_dir(args.job)
    if args.start_from and has_checkpoint(state_dir):
        raise StateError(
            f"--from {args.start_from} replays into a fresh state directory, but {state_dir} "
            "already holds a checkpoint; pass a new --state-dir (or delete that one)"
        )
    broker = None
    bootstrap = args.bootstrap_servers
    if args.embedded and not bootstrap and not names_bootstrap(planned.plan):
        from deltaflow.connectors.broker import EmbeddedBroker

        broker = EmbeddedBroker().start()
        bootstrap = broker.bootstrap
        print(f"deltaflow: embedded broker on {bootstrap}", file=sys.stderr)
    options = JobOptions(
        state_dir=state_dir,
        bootstrap=bootstrap,
        start=args.start_from,
        quiet=args.quiet or not sys.stderr.isatty(),
        progress_log=not args.quiet and not sys.stderr.isatty(),
        metrics_port=args.metrics_port,
    )
    try:
        job = Job(planned.plan, options, stop=stop)
        if args.metrics_port:
            from deltaflow.processor.metrics import serve_metrics

            serve_metrics(job, args.metrics_port)
        return job.run()
    finally:
        if broker is not None:
            broker.stop()


def has_checkpoint(state_dir: Path) -> bool:
    return (state_dir / "data.mdb").exists() and os.path.getsize(state_dir / "data.mdb") > 0


def install_stop_handlers() -> threading.Event:
    """SIGTERM/SIGINT: finish the current batch, checkpoint, exit 0.

    Installed first thing, so a signal during start-up also ends the job cleanly.
    """
    stop = threading.Event()

    def handle(signum, frame):  # noqa: ARG001
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    return stop
