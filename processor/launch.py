"""The ``deltaflow run`` and ``deltaflow explain`` commands: read and plan the job file,
choose its state directory, start an embedded broker when asked, install the stop
handlers and the metrics endpoint, and run the job (``processor/job.py``)."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
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
    if not planned.explains:
        require_inserts(planned, args.job)
    for text in planned.explains:
        print(text)
    if planned.plan.sinks:
        print(planned.explain())
    if getattr(args, "code", False) and planned.plan.sinks:
        from deltaflow.processor.code_listing import code_text

        print()
        print(code_text(planned.plan), end="")
    return 0


def default_state_dir(job_path: str) -> Path:
    return Path.cwd() / "deltaflow-state" / Path(job_path).stem


def names_bootstrap(plan: JobPlan) -> bool:
    nodes: list[Node] = [*scans_of(plan), *plan.sinks]
    return any("properties.bootstrap.servers" in getattr(n, "options", {}) for n in nodes)


def require_inserts(planned, path: str) -> None:
    """A job file without an INSERT INTO has nothing to run: an error, not a silent exit 0."""
    if planned.plan.sinks:
        return
    if not planned.declared:
        raise DeltaflowError(
            f"job file {path!r} holds no SQL statements; write the job's CREATE TABLE and "
            "INSERT INTO <table> SELECT ... statements in it"
        )
    raise DeltaflowError(
        f"job file {path!r} has no INSERT INTO statement, so it computes nothing; add "
        "INSERT INTO <table> SELECT ... (a table with 'connector' = 'print' shows the rows)"
    )


def run_cli(args: argparse.Namespace) -> int:
    stop = install_stop_handlers()
    if args.metrics_port is not None:
        check_metrics_port(args.metrics_port)
    planned = plan_file(args.job)
    require_inserts(planned, args.job)
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
        job_file=args.job,
    )
    try:
        job = Job(planned.plan, options, stop=stop)
        if args.metrics_port:
            start_metrics(job, args.metrics_port)
        announce_ready(args.job)
        return job.run()
    finally:
        if broker is not None:
            broker.stop()


READY = "deltaflow: ready (job {name}, sources open, signal handlers installed)"


def announce_ready(job_path: str) -> None:
    """One line on stderr once a stop is handled cleanly and the sources are open (the state
    restored, the sinks' transaction settled): what a supervisor or a test waits for before
    it signals the job, instead of guessing with a sleep."""
    print(READY.format(name=Path(job_path).stem), file=sys.stderr, flush=True)


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


def check_metrics_port(port: int) -> None:
    """``--metrics-port``: a TCP port that this process can listen on, checked before the
    job opens anything (a DeltaflowError naming the port and the reason otherwise)."""
    if not 1 <= port <= 65535:
        raise DeltaflowError(
            f"--metrics-port {port} is not a TCP port; pass a number from 1 to 65535"
        )
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server does
        probe.bind(("127.0.0.1", port))
    except OSError as err:
        raise metrics_port_error(port, err) from None
    finally:
        probe.close()


def start_metrics(job: Job, port: int) -> None:
    from deltaflow.processor.metrics import serve_metrics

    try:
        serve_metrics(job, port)
    except OSError as err:  # taken since the check: the job has not read anything yet
        job.close()
        raise metrics_port_error(port, err) from None


def metrics_port_error(port: int, err: OSError) -> DeltaflowError:
    if err.errno == errno.EADDRINUSE:
        reason = "the port is already in use (another process listens on it)"
    elif err.errno in (errno.EACCES, errno.EPERM):
        reason = "permission denied (ports below 1024 need privileges)"
    else:
        reason = err.strerror or str(err)
    return DeltaflowError(
        f"cannot serve metrics on 127.0.0.1:{port} (--metrics-port): {reason}; pass another port"
    )


def deleted_topics(args: argparse.Namespace) -> str | None:
    """After a crash of the job process: the source topics that no longer exist, as
    "topic 'x' of table 't' no longer exists on SERVERS ...", or None."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        scans = scans_of(plan_file(args.job).plan)
    except DeltaflowError:
        return None
    gone = []
    for scan in scans:
        opts = scan.options
        servers = args.bootstrap_servers or opts.get("properties.bootstrap.servers")
        if opts.get("connector") not in ("kafka", "upsert-kafka") or not servers:
            continue
        try:
            meta = AdminClient({"bootstrap.servers": servers, "log_level": 0}).list_topics(
                timeout=5
            )
        except KafkaException:
            continue
        for topic in filter(None, (t.strip() for t in opts.get("topic", "").split(";"))):
            if topic not in meta.topics:
                gone.append(
                    f"topic '{topic}' of table '{scan.table}' no longer exists on {servers}"
                )
    if not gone:
        return None
    return (
        "; ".join(gone) + ": it was deleted while the job read it (librdkafka crashes on "
        "the embedded broker's fetch answer for a deleted topic); recreate it and start the "
        "job again (its checkpointed offsets are then checked against the new topic, see "
        "'scan.offset-out-of-range'), or replay into a fresh --state-dir with --from"
    )
