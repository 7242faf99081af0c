"""Running a job: sources -> operator graph -> sinks, with checkpoints.

The loop is the whole daemon: poll each source for a batch, push it through the
graph, write what reaches each sink, and every checkpoint interval flush the sinks
and commit state plus source positions in one LMDB transaction. With exactly-once
sinks the epoch's output is one Kafka transaction tied to that LMDB commit. The
checkpoint is one function of numbered steps, ``Job.checkpoint``; ARCHITECTURE.md
section 3 and the crash points (``processor/crash.py``) share its numbering.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from deltaflow.connectors import kafka_logs
from deltaflow.connectors.base import (
    PartitionedSource,
    Sink,
    create_sink,
    create_source,
    for_new_run,
)
from deltaflow.connectors.kafka_offsets import check_named_partitions
from deltaflow.connectors.transactions import (
    EpochTransactions,
    Patience,
    TransactionStuck,
    open_transactions,
)
from deltaflow.formats.generated import for_node
from deltaflow.processor import crash, progress
from deltaflow.processor.brokers import BrokerWatch, cluster_configs
from deltaflow.processor.collector import JobCollector
from deltaflow.processor.identity import bind_identity, bind_plan
from deltaflow.processor.job_inputs import Inputs, install_checks
from deltaflow.processor.job_tables import (
    LOOKUP_PREFIX,
    describe_plan,
    lookup_spec,
    scans_of,
    sink_spec,
    source_spec,
)
from deltaflow.processor.plan import JobPlan
from deltaflow.processor.planner.prefilter import state_prefilters
from deltaflow.processor.runtime import key_presence
from deltaflow.processor.settings import (
    broker_timeout_s,
    checkpoint_interval_s,
    progress_interval_s,
)
from deltaflow.state.backend import StateBackend
from deltaflow.state.checkpoint import PENDING_KEY, Checkpointer
from deltaflow.state.lock import StateLock

if TYPE_CHECKING:  # imported when the job starts (``explain`` never needs it)
    from deltaflow.processor.runtime.graph import Graph

POLL_RECORDS = 5000
POLL_TIMEOUT_S = 0.05
TOKEN_KEY = "transactions.token"


@dataclass
class JobOptions:
    state_dir: Path
    bootstrap: str | None = None
    start: str | None = None  # --from
    quiet: bool = True
    progress_log: bool = False  # stderr is no terminal: a line every deltaflow.progress.interval
    metrics_port: int | None = None
    out: TextIO | None = None  # stream for print sinks (default stdout)
    job_file: str | None = None  # the job's file, for the advice in messages


@dataclass(frozen=True)
class Epoch:
    """The last checkpointed epoch, and whether output went into the open Kafka
    transaction since (an epoch that wrote nothing there skips steps 3 and 4)."""

    number: int = 0
    dirty: bool = False


class Job:
    """One running job: its sources, graph, sinks and state."""

    graph: Graph

    def __init__(
        self, plan: JobPlan, options: JobOptions, stop: threading.Event | None = None
    ) -> None:
        self.plan = plan
        self.options = options
        self.stats = progress.JobStats()
        self.stop = stop or threading.Event()
        self.interval_s = checkpoint_interval_s(plan.settings)
        self.broker_timeout_s = broker_timeout_s(plan.settings)
        self.scans = scans_of(plan)
        self.inputs = Inputs()  # the open sources, renewed when a stuck transaction is settled
        self.sinks: dict[int, Sink] = {}
        self.txn: EpochTransactions | None = None  # the exactly-once sinks' one transaction
        self.epoch = Epoch()
        self.watch: BrokerWatch | None = None
        self.backend: StateBackend | None = None  # None until the state directory is open
        self.lock = StateLock(options.state_dir).acquire()  # one process per directory
        try:
            self.backend = StateBackend(options.state_dir)
            self._start()
        except BaseException:
            self.close()
            raise

    @property
    def state(self) -> StateBackend:
        assert self.backend is not None, "the state directory is not open"
        return self.backend

    def _start(self) -> None:
        """Sinks first (the transaction fences an earlier incarnation), then the state is
        restored to the epoch the sinks committed, then the sources open at its offsets."""
        bind_identity(self.state, self.plan, self.options.bootstrap, self.options.job_file)
        bind_plan(self.state, self.plan, describe_plan(self.plan))
        self._open_sinks()
        self._open_transaction()
        self._resume()
        self.watch = BrokerWatch(self._clusters(), self.broker_timeout_s).start()

    def _resume(self, new_run: bool = True) -> None:
        """Start-up recovery (also after a stuck transaction, not a ``new_run``: bounded
        reads keep their end offsets): the state is settled to the epoch the sinks
        committed, a new graph reads it, the sources open at its offsets."""
        from deltaflow.processor.runtime.graph import Graph, RuntimeContext

        restored = Checkpointer(self.state).restore(self._sink_committed if self.txn else None)
        epoch, resume = restored or (0, {})
        self.epoch = Epoch(epoch)
        self.graph = Graph(self.plan, self.state, RuntimeContext.from_settings(self.plan.settings))
        self.graph.deliver = self._emit  # a large output's slices reach the sinks as they come
        if new_run:
            resume = {k: for_new_run(v) for k, v in resume.items()}
        self._open_sources(resume)

    def _open_sinks(self) -> None:
        for sink in self.plan.sinks:
            spec = sink_spec(sink)
            with for_node(sink):  # its encoders' generated code is named after it
                opened = create_sink(spec, bootstrap=self.options.bootstrap, out=self.options.out)
            self.sinks[sink.node_id] = opened
            opened.bind_patience(self._patience_for)  # Kafka sinks: their waits end on a stop
            self.stats.events_out[sink.table] = 0

    def _patience_for(self, servers: str | None) -> Patience:
        """How long a wait for the cluster ``servers`` lasts: the broker timeout, less once
        the broker watch finds it away, and a few seconds after a stop is asked."""
        return Patience(
            self.broker_timeout_s,
            self.stop,
            lambda: self._down_for(servers),
            lambda: self.watch.outage_count(servers) if self.watch is not None else 0,
        )

    def _open_transaction(self) -> None:
        """The Kafka transaction of the exactly-once sinks (``self.txn``; None without any)."""
        asked = [(s, s.transaction_request()) for s in self.sinks.values()]
        requests = [(s, r) for s, r in asked if r is not None]
        if not requests:
            return
        token = self.state.meta(TOKEN_KEY)
        if token is None:  # names this state directory's epoch markers (a replay gets its own)
            token = uuid.uuid4().hex[:12]
            self.state.commit({TOKEN_KEY: token})
        servers = requests[0][1].conf.get("bootstrap.servers")
        self.txn = open_transactions(
            [r for _, r in requests], self.broker_timeout_s, str(token), self._patience_for(servers)
        )
        if self.txn is not None:
            self.txn.start()
            for sink, _ in requests:
                sink.join_transaction(self.txn.producer)

    def _down_for(self, servers: str | None) -> float:
        """Seconds the transaction's cluster has been unreachable (0: reachable)."""
        return self.watch.down_for(servers) if self.watch is not None else 0.0

    def _sink_committed(self, epoch: int) -> bool:
        return self.txn is not None and self.txn.committed_epoch() == epoch

    def _open_sources(self, resume: dict) -> None:
        start = None if resume else self.options.start
        inputs = self.inputs
        unknown_keys = key_presence.presence_mode(self.plan.settings)
        prefilters = state_prefilters(self.plan.sinks)  # before-images from state
        for scan in self.scans:
            spec = source_spec(scan)
            with for_node(scan):  # its decoders' generated code is named after it
                source = create_source(spec, bootstrap=self.options.bootstrap, start=start)
                inputs.sources[scan.node_id] = source
                inputs.route_dead_letters(source, self._patience_for, self.txn)
                check = install_checks(
                    source, scan, self.state, unknown_keys, not resume,
                    prefilters.get(scan.node_id),
                )  # fmt: skip
            if check is not None:
                inputs.presence[scan.table] = check
            source.open(resume.get(str(scan.node_id)))
            self.stats.events_in.setdefault(scan.table, 0)
            marks = self.graph.partitions(scan.node_id)
            if marks is not None and isinstance(source, PartitionedSource):
                inputs.partitioned[scan.node_id] = marks
        for table, node in self.graph.lookup_tables().items():
            spec = lookup_spec(node)
            source = create_source(spec, bootstrap=self.options.bootstrap, start=start)
            inputs.route_dead_letters(source, self._patience_for, self.txn)
            position = resume.get(LOOKUP_PREFIX + table)
            inputs.open_lookup(table, source, position, self.graph, POLL_RECORDS, POLL_TIMEOUT_S)
        check_named_partitions(start, [*inputs.sources.values(), *inputs.lookups.values()])

    def _clusters(self) -> dict:
        tables = [(s.table, dict(s.options)) for s in self.scans]
        tables += [(s.table, dict(s.options)) for s in self.plan.sinks]
        return cluster_configs(tables, self.options.bootstrap)

    # -- the loop -----------------------------------------------------------------

    def run(self) -> int:
        """Runs until every source is finished (bounded) or a stop is asked; returns 0."""
        with JobCollector() as collector:
            return self._run(collector)

    def _run(self, collector: JobCollector) -> int:
        last_checkpoint = time.monotonic()
        display = progress.Display(self, enabled=not self.options.quiet)
        observer = progress.Observer(self, self._progress_every())
        try:
            if self.txn is not None:
                self.txn.begin()
            while not self.stop.is_set():
                busy = self._poll_once()
                collector.settle()
                self._emit(self.graph.advance_processing_time())
                if self.inputs.all_finished():
                    self._emit(self.graph.finish())
                    break
                if time.monotonic() - last_checkpoint >= self.interval_s:
                    self._checkpoint()
                    last_checkpoint = time.monotonic()
                if self.watch is not None:
                    self.watch.check()
                display.tick()
                observer.tick()
                if not busy:
                    time.sleep(0.005)
            self._checkpoint()
        finally:
            display.close()
            observer.close()
            self.close()
        return 0

    def _progress_every(self) -> float | None:
        """Seconds between progress log lines (None: none); see settings.py."""
        if not self.options.progress_log:
            return None
        daemon = any(s.progress()[1] is None for s in self.inputs.sources.values())
        return progress_interval_s(self.plan.settings, daemon)

    def _poll_once(self) -> bool:
        busy = False
        self.inputs.poll_lookups(self.graph, POLL_RECORDS)
        for scan in self.scans:
            source = self.inputs.sources[scan.node_id]
            if source.finished():
                continue
            marks = self.inputs.partitioned.get(scan.node_id)
            dropped = source.filtered  # changes its format's pre-filter dropped
            if marks is None or not isinstance(source, PartitionedSource):
                batch, runs = source.poll(POLL_RECORDS, POLL_TIMEOUT_S), None
            else:
                batch, runs = source.poll_runs(POLL_RECORDS, POLL_TIMEOUT_S)
                assigned, finished = source.partition_states()
                marks.assign(assigned)
                marks.finish(finished)
            dropped = source.filtered - dropped
            if batch or dropped:  # read changes, even if the WHERE drops them all
                busy = True
                self.stats.events_in[scan.table] += len(batch) + dropped
            if batch:
                self._emit(self.graph.push(scan.node_id, batch, runs=runs))
                crash.point("batch")
            elif marks is not None:  # partitions gone idle or finished move the watermark
                self._emit(self.graph.refresh_watermark(scan.node_id))
        return busy

    def _emit(self, outputs: dict) -> None:
        for sink_id, batch in outputs.items():
            if batch:
                self.sinks[sink_id].write(batch)
                self.stats.events_out[self._sink_table(sink_id)] += len(batch)
                self.epoch = Epoch(self.epoch.number, dirty=True)

    def _sink_table(self, sink_id: int) -> str:
        for sink in self.plan.sinks:
            if sink.node_id == sink_id:
                return sink.table
        raise AssertionError(sink_id)

    def checkpoint(self) -> None:
        """The checkpoint: its numbered steps are those of ARCHITECTURE.md section 3, and
        ``crash.point("stepN")`` comes right after step N (the crash tests' points).

        A crash before step 2 redoes the epoch from the previous positions; a crash
        between 2 and 4 is settled on restart by asking the broker whether the epoch
        committed (``Checkpointer.restore``).
        """
        started = time.monotonic()
        # 0. flush the graph (mini-batch buffers) and write its output to the sinks
        self._emit(self.graph.flush())
        crash.point("step0")
        # 1. flush every sink and the sources' dead letters: the broker acknowledged all
        #    output of this epoch (with exactly-once: inside its open Kafka transaction,
        #    dead letters on its cluster too; letters in it make the epoch worth a commit)
        for sink in self.sinks.values():
            sink.flush(self.broker_timeout_s)
        letters = self.inputs.flush_dead_letters(self.broker_timeout_s)
        if any(writer.transactional for writer, _ in letters):
            self.epoch = Epoch(self.epoch.number, dirty=True)
        crash.point("step1")
        # 2. ONE LMDB transaction: the state changes, the sources' positions, the epoch;
        #    when the epoch wrote to the Kafka transaction: also its pending mark and undo log
        epoch, txn = self.epoch.number + 1, self.txn if self.epoch.dirty else None
        checkpointer = Checkpointer(self.state)
        checkpointer.commit(epoch, self.inputs.positions(), pending=txn is not None)
        if txn is not None:
            crash.point("step2")
            # 3. (exactly-once) commit the Kafka transaction with the epoch marker
            txn.commit(epoch)
            crash.point("step3")
            # 4. (exactly-once) the checkpoint is final: drop the undo log and pending mark
            checkpointer.finalize()
        self.epoch = Epoch(epoch)
        crash.point("step4")
        # the next epoch: its transaction, and what this one reports
        if self.txn is not None:
            self.txn.begin()
        self.stats.checkpointed(time.monotonic() - started)
        for writer, count in letters:  # one line per checkpoint that wrote dead letters
            print(f"deltaflow: {writer.report(count)}", file=sys.stderr, flush=True)
        progress.report_skipped(self)
        self.inputs.report_presence()

    def _checkpoint(self) -> None:
        try:
            self.checkpoint()
        except TransactionStuck as stuck:
            self._recover_transaction(stuck)

    def _recover_transaction(self, stuck: TransactionStuck) -> None:
        """A transactional call that the brokers' return did not end (docs/GUARANTEES.md,
        "librdkafka version"): the job does in process what a restart would. The producer
        is abandoned, the sources closed and the state directory reopened (no table or
        operator keeps what the unfinished epoch wrote); a new producer with the same
        transactional id fences the old one and aborts its open transaction, and
        ``_resume`` settles the epoch: kept if the broker committed it, else rolled back
        and redone from the last checkpoint's source offsets."""
        assert self.txn is not None
        self.txn.abandon()
        self.txn = None
        self.inputs.close()
        self.inputs = Inputs()
        self.state.close()
        self.backend = StateBackend(self.options.state_dir)
        pending = self.state.meta(PENDING_KEY)
        self._open_transaction()
        self._resume(new_run=False)
        assert self.txn is not None  # the same sinks ask for it again
        self.txn.begin()
        print(stuck.settled(pending, self.epoch.number), file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.watch is not None:
            self.watch.stop()
        self.inputs.report_presence(force=True)
        self.inputs.close()  # kept: the metrics endpoint reads their progress after the run
        for sink in self.sinks.values():
            sink.close()
        if self.txn is not None:
            self.txn.close()
        if self.backend is not None:  # None: the state failed to open
            self.backend.close()
        self.lock.release()
        kafka_logs.LIMITER.flush()  # how many librdkafka lines were left out, if any
