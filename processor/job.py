"""Running a job: sources -> operator graph -> sinks, with checkpoints.

The loop is the whole daemon: poll each source for a batch, push it through the
graph, write what reaches each sink, and every checkpoint interval flush the sinks
and commit state plus source positions in one LMDB transaction (at-least-once:
after a crash the job redoes at most one epoch, and upsert sinks end identical).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from deltaflow.connectors.base import TableSpec, create_sink, create_source
from deltaflow.formats.errors import ConnectorError, DeltaflowError, StateError
from deltaflow.processor import progress
from deltaflow.processor.plan import JobPlan, Node, Sink, TableSourceScan
from deltaflow.state.backend import StateBackend

POLL_RECORDS = 5000
POLL_TIMEOUT_S = 0.05
DEFAULT_CHECKPOINT_MS = 1000


@dataclass
class JobOptions:
    state_dir: Path
    bootstrap: str | None = None
    start: str | None = None  # --from
    quiet: bool = True
    metrics_port: int | None = None
    out: object = None  # stream for print sinks (default stdout)


@dataclass
class JobStats:
    events_in: dict[str, int] = field(default_factory=dict)
    events_out: dict[str, int] = field(default_factory=dict)
    checkpoints: int = 0
    last_checkpoint_s: float = 0.0
    started: float = field(default_factory=time.monotonic)

    @property
    def total_in(self) -> int:
        return sum(self.events_in.values())


def scans_of(plan: JobPlan) -> list[TableSourceScan]:
    """Every source scan of the plan, once each (scans are shared by node_id)."""
    seen: dict[int, TableSourceScan] = {}
    stack: list[Node] = list(plan.sinks)
    while stack:
        node = stack.pop()
        if isinstance(node, TableSourceScan):
            seen.setdefault(node.node_id, node)
        stack.extend(node.inputs)
    return [seen[k] for k in sorted(seen)]


def source_spec(scan: TableSourceScan) -> TableSpec:
    return TableSpec(
        name=scan.table,
        options=dict(scan.options),
        physical=[(f.name, f.type) for f in scan.physical],
        metadata=list(scan.metadata),
        primary_key=list(scan.primary_key),
    )


def sink_spec(sink: Sink) -> TableSpec:
    return TableSpec(
        name=sink.table,
        options=dict(sink.options),
        physical=[(f.name, f.type) for f in sink.physical],
        primary_key=list(sink.primary_key),
    )


def checkpoint_interval_s(settings: dict[str, str]) -> float:
    text = settings.get("execution.checkpointing.interval")
    if not text:
        return DEFAULT_CHECKPOINT_MS / 1000
    return parse_duration_ms(text, "execution.checkpointing.interval") / 1000


_UNITS_MS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "min": 60_000, "m": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
}  # fmt: skip


def parse_duration_ms(text: str, option: str) -> int:
    """Flink durations: ``1 s``, ``500ms``, ``10 min``, a bare number is milliseconds."""
    raw = text.strip().lower()
    digits = raw.rstrip("abcdefghijklmnopqrstuvwxyz ").strip()
    unit = raw[len(digits) :].strip() or "ms"
    if not digits.isdigit() or unit not in _UNITS_MS:
        raise DeltaflowError(
            f"option {option!r}: cannot read duration {text!r}; write e.g. '1 s', '500 ms' or '10 min'"
        )
    return int(digits) * _UNITS_MS[unit]


class Job:
    """One running job: its sources, graph, sinks and state."""

    def __init__(self, plan: JobPlan, options: JobOptions, stop: threading.Event | None = None) -> None:
        from deltaflow.processor.runtime.graph import Graph, RuntimeContext

        self.plan = plan
        self.options = options
        self.stats = JobStats()
        self.stop = stop or threading.Event()
        self.backend = StateBackend(options.state_dir)
        self.backend.check_plan(plan.fingerprint, describe_plan(plan))
        self.interval_s = checkpoint_interval_s(plan.settings)
        self.epoch = int(self.backend.meta("epoch") or 0)
        ctx = RuntimeContext.from_settings(plan.settings)
        self.graph = Graph(plan, self.backend, ctx)
        self.scans = scans_of(plan)
        self.sources = {}
        self.sinks = {}
        self._open_connectors()

    def _open_connectors(self) -> None:
        resume = self.backend.meta("offsets") or {}
        start = None if resume else self.options.start
        for scan in self.scans:
            source = create_source(source_spec(scan), bootstrap=self.options.bootstrap, start=start)
            source.open(resume.get(str(scan.node_id)))
            self.sources[scan.node_id] = source
            self.stats.events_in[scan.table] = 0
        for sink in self.plan.sinks:
            spec = sink_spec(sink)
            self.sinks[sink.node_id] = create_sink(spec, bootstrap=self.options.bootstrap, out=self.options.out)
            self.stats.events_out[sink.table] = 0

    # -- the loop -----------------------------------------------------------------

    def run(self) -> int:
        """Runs until every source is finished (bounded) or a stop is asked; returns 0."""
        last_checkpoint = time.monotonic()
        display = progress.Display(self, enabled=not self.options.quiet)
        try:
            while not self.stop.is_set():
                busy = self._poll_once()
                if self._all_finished():
                    self._emit(self.graph.finish())
                    break
                if time.monotonic() - last_checkpoint >= self.interval_s:
                    self.checkpoint()
                    last_checkpoint = time.monotonic()
                display.tick()
                if not busy:
                    time.sleep(0.005)
            self.checkpoint()
        finally:
            display.close()
            self.close()
        return 0

    def _poll_once(self) -> bool:
        busy = False
        for scan in self.scans:
            source = self.sources[scan.node_id]
            if source.finished():
                continue
            batch = source.poll(POLL_RECORDS, POLL_TIMEOUT_S)
            if batch:
                busy = True
                self.stats.events_in[scan.table] += len(batch)
                self._emit(self.graph.push(scan.node_id, batch))
        return busy

    def _all_finished(self) -> bool:
        return all(s.finished() for s in self.sources.values())

    def _emit(self, outputs: dict) -> None:
        for sink_id, batch in outputs.items():
            if batch:
                self.sinks[sink_id].write(batch)
                self.stats.events_out[self._sink_table(sink_id)] += len(batch)

    def _sink_table(self, sink_id: int) -> str:
        for sink in self.plan.sinks:
            if sink.node_id == sink_id:
                return sink.table
        raise AssertionError(sink_id)

    def checkpoint(self) -> None:
        """The checkpoint, in order:

        1. flush the graph (mini-batch buffers) and write its output to the sinks;
        2. flush every sink: all output of this epoch is acknowledged by the broker;
        3. commit, in ONE LMDB write transaction, the operator state changes and the
           source positions after the last record that produced them, and the epoch.
        A crash before 3 redoes the epoch from the previous positions (at-least-once).
        """
        started = time.monotonic()
        self._emit(self.graph.flush())
        for sink in self.sinks.values():
            sink.flush(30.0)
        self.epoch += 1
        offsets = {str(k): s.position() for k, s in self.sources.items()}
        self.backend.commit({"offsets": offsets, "epoch": self.epoch})
        self.stats.checkpoints += 1
        self.stats.last_checkpoint_s = time.monotonic() - started

    def close(self) -> None:
        for source in self.sources.values():
            source.close()
        for sink in self.sinks.values():
            sink.close()
        self.backend.close()


def describe_plan(plan: JobPlan) -> str:
    return ", ".join(s.table for s in plan.sinks)


# -- CLI entry points -------------------------------------------------------------


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
        metrics_port=args.metrics_port,
    )
    try:
        job = Job(planned.plan, options, stop=stop)
        if args.metrics_port:
            from deltaflow.processor.metrics import serve_metrics

            serve_metrics(job, args.metrics_port)
        return job.run()
    except ConnectorError:
        raise
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
