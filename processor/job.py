"""Running a job: sources -> operator graph -> sinks, with checkpoints.

The loop is the whole daemon: poll each source for a batch, push it through the
graph, write what reaches each sink, and every checkpoint interval flush the sinks
and commit state plus source positions in one LMDB transaction. With exactly-once
sinks the epoch's output is one Kafka transaction tied to that LMDB commit (see
``Job.checkpoint`` and ARCHITECTURE.md section 3).
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from deltaflow.connectors import kafka_logs
from deltaflow.connectors.base import PartitionedSource, create_sink, create_source, for_new_run
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
from deltaflow.processor.collector import quiet_collector
from deltaflow.processor.identity import bind_identity
from deltaflow.processor.job_tables import (
    LOOKUP_PREFIX,
    describe_plan,
    lookup_spec,
    scans_of,
    sink_spec,
    source_spec,
)
from deltaflow.processor.plan import JobPlan
from deltaflow.processor.runtime import key_presence, normalize_source
from deltaflow.processor.runtime.demand import demanded_columns
from deltaflow.processor.runtime.prefilter import prefilters
from deltaflow.processor.settings import (
    broker_timeout_s,
    checkpoint_interval_s,
    progress_interval_s,
)
from deltaflow.state.backend import StateBackend
from deltaflow.state.checkpoint import PENDING_KEY, Checkpointer
from deltaflow.state.lock import StateLock

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
    out: object = None  # stream for print sinks (default stdout)
    job_file: str | None = None  # the job's file, for the advice in messages


class Job:
    """One running job: its sources, graph, sinks and state."""

    def __init__(
        self, plan: JobPlan, options: JobOptions, stop: threading.Event | None = None
    ) -> None:
        self.plan = plan
        self.options = options
        self.stats = progress.JobStats()
        self.stop = stop or threading.Event()
        self.interval_s = checkpoint_interval_s(plan.settings)
        self.broker_timeout_s = broker_timeout_s(plan.settings)
        self.sources: dict = {}
        self.lookups: dict = {}  # looked-up table -> source feeding its lookup-join mirror
        self.presence: dict = {}  # table -> its check of unknown primary keys
        self.presence_report: key_presence.PresenceReport | None = None
        self.sinks: dict = {}
        self.dead_letters: list = []  # the sources' dead-letter writers, flushed with the sinks
        self.partitioned: dict = {}  # scan -> its per-partition watermarks (Kafka, WATERMARK)
        self.txn: EpochTransactions | None = None
        self.watch: BrokerWatch | None = None
        self.lock = StateLock(options.state_dir).acquire()  # one process per directory
        try:
            self.backend = StateBackend(options.state_dir)
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        """Sinks first (the transaction fences an earlier incarnation), then the state is
        restored to the epoch the sinks committed, then the sources open at its offsets."""
        bind_identity(self.backend, self.plan, self.options.bootstrap, self.options.job_file)
        self.backend.check_plan(self.plan.fingerprint, describe_plan(self.plan))
        self._open_sinks()
        self._open_transaction()
        self._resume()
        self.watch = BrokerWatch(self._clusters(), self.broker_timeout_s).start()

    def _resume(self, new_run: bool = True) -> None:
        """Start-up recovery (also after a stuck transaction, not a ``new_run``: bounded
        reads keep their end offsets): the state is settled to the epoch the sinks
        committed, a new graph reads it, the sources open at its offsets."""
        from deltaflow.processor.runtime.graph import Graph, RuntimeContext

        restored = Checkpointer(self.backend).restore(self._sink_committed if self.txn else None)
        self.epoch, resume = restored or (0, {})
        self._txn_dirty = False
        self.graph = Graph(
            self.plan, self.backend, RuntimeContext.from_settings(self.plan.settings)
        )
        self.scans = scans_of(self.plan)
        if new_run:
            resume = {k: for_new_run(v) for k, v in resume.items()}
        self._open_sources(resume)

    def _open_sinks(self) -> None:
        for sink in self.plan.sinks:
            spec = sink_spec(sink)
            with for_node(sink):  # its encoders' generated code is named after it
                opened = create_sink(spec, bootstrap=self.options.bootstrap, out=self.options.out)
            self.sinks[sink.node_id] = opened
            if hasattr(opened, "bind_patience"):  # Kafka sinks: their waits end on a stop
                opened.bind_patience(self._patience_for)
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
        joining = [s for s in self.sinks.values() if hasattr(s, "transaction_request")]
        requests = [(s, s.transaction_request()) for s in joining]
        requests = [(s, r) for s, r in requests if r is not None]
        if not requests:
            return
        token = self.backend.meta(TOKEN_KEY)
        if token is None:  # names this state directory's epoch markers (a replay gets its own)
            token = uuid.uuid4().hex[:12]
            self.backend.commit({TOKEN_KEY: token})
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
        demanded = demanded_columns(self.plan)
        filters = prefilters(self.plan)
        unknown_keys = key_presence.presence_mode(self.plan.settings)
        for scan in self.scans:
            spec = source_spec(scan, demanded.get(scan.node_id), filters.get(scan.node_id))
            with for_node(scan):  # its decoders' generated code is named after it
                source = create_source(spec, bootstrap=self.options.bootstrap, start=start)
                self.sources[scan.node_id] = source
                self._route_dead_letters(source)
                check = self._install_checks(source, scan, unknown_keys, not resume)
            if check is not None:
                self.presence[scan.table] = check
            source.open(resume.get(str(scan.node_id)))
            self.stats.events_in.setdefault(scan.table, 0)
            marks = self.graph.partitions(scan.node_id)
            if marks is not None and isinstance(source, PartitionedSource):
                self.partitioned[scan.node_id] = marks
        for table, node in self.graph.lookup_tables().items():
            spec = lookup_spec(node)
            source = create_source(spec, bootstrap=self.options.bootstrap, start=start)
            self.lookups[table] = source
            self._route_dead_letters(source)
            source.open(resume.get(LOOKUP_PREFIX + table))
            self._drain_lookup(table)
        check_named_partitions(start, [*self.sources.values(), *self.lookups.values()])

    def _install_checks(self, source, scan, unknown_keys: str, fresh: bool):  # noqa: ANN001, ANN202
        """The source's before-images from state (its normalizer checks keys too), or
        its unknown-key check; the check to report, or None."""
        if scan.normalize:
            check = normalize_source.install(source, scan, self.backend, unknown_keys, fresh)
            return check if unknown_keys != "ignore" else None
        return key_presence.install(source, scan, self.backend, unknown_keys, fresh)

    def _route_dead_letters(self, source) -> None:
        """A source's dead letters wait for the brokers as the sinks do, and go into the
        job's exactly-once transaction when it is on their cluster (GUARANTEES.md)."""
        writer = getattr(source, "dead_letter_writer", None)
        if writer is not None:
            writer.bind_patience(self._patience_for)
            self.dead_letters.append(writer)
            if self.txn is not None and not writer.join_transaction(self.txn):
                print(f"deltaflow: {writer.at_least_once_note()}", file=sys.stderr)

    def _drain_lookup(self, table: str) -> None:
        """Reads a looked-up table up to its present end, so probes see it loaded."""
        source = self.lookups[table]
        while not source.finished():
            batch = source.poll(POLL_RECORDS, POLL_TIMEOUT_S)
            if not batch:
                return
            self.graph.push_lookup(table, batch)

    def _poll_lookups(self) -> None:
        for table, source in self.lookups.items():
            if not source.finished():
                batch = source.poll(POLL_RECORDS, 0.0)
                if batch:
                    self.graph.push_lookup(table, batch)

    def _clusters(self) -> dict:
        tables = [(s.table, dict(s.options)) for s in self.scans]
        tables += [(s.table, dict(s.options)) for s in self.plan.sinks]
        return cluster_configs(tables, self.options.bootstrap)

    # -- the loop -----------------------------------------------------------------

    def run(self) -> int:
        """Runs until every source is finished (bounded) or a stop is asked; returns 0."""
        with quiet_collector():
            return self._run()

    def _run(self) -> int:
        last_checkpoint = time.monotonic()
        display = progress.Display(self, enabled=not self.options.quiet)
        observer = progress.Observer(self, self._progress_every())
        try:
            if self.txn is not None:
                self.txn.begin()
            while not self.stop.is_set():
                busy = self._poll_once()
                if self._all_finished():
                    self._emit(self.graph.finish())
                    break
                if time.monotonic() - last_checkpoint >= self.interval_s:
                    self._checkpoint()
                    last_checkpoint = time.monotonic()
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
        daemon = any(s.progress()[1] is None for s in self.sources.values())
        return progress_interval_s(self.plan.settings, daemon)

    def _poll_once(self) -> bool:
        busy = False
        self._poll_lookups()
        for scan in self.scans:
            source = self.sources[scan.node_id]
            if source.finished():
                continue
            marks = self.partitioned.get(scan.node_id)
            dropped = getattr(source, "filtered", 0)  # changes its format's pre-filter dropped
            if marks is None:
                batch, runs = source.poll(POLL_RECORDS, POLL_TIMEOUT_S), None
            else:
                batch, runs = source.poll_runs(POLL_RECORDS, POLL_TIMEOUT_S)
                assigned, finished = source.partition_states()
                marks.assign(assigned)
                marks.finish(finished)
            dropped = getattr(source, "filtered", 0) - dropped
            if batch or dropped:  # read changes, even if the WHERE drops them all
                busy = True
                self.stats.events_in[scan.table] += len(batch) + dropped
            if batch:
                self._emit(self.graph.push(scan.node_id, batch, runs=runs))
                crash.point("batch")
            elif marks is not None:  # partitions gone idle or finished move the watermark
                self._emit(self.graph.refresh_watermark(scan.node_id))
        return busy

    def _all_finished(self) -> bool:
        return all(s.finished() for s in self.sources.values())

    def _emit(self, outputs: dict) -> None:
        for sink_id, batch in outputs.items():
            if batch:
                self.sinks[sink_id].write(batch)
                self.stats.events_out[self._sink_table(sink_id)] += len(batch)
                self._txn_dirty = True

    def _sink_table(self, sink_id: int) -> str:
        for sink in self.plan.sinks:
            if sink.node_id == sink_id:
                return sink.table
        raise AssertionError(sink_id)

    def checkpoint(self) -> None:
        """The checkpoint (ARCHITECTURE.md section 3; ``crash`` names its points):

        0. flush the graph (mini-batch buffers) and write its output to the sinks;
        1. flush every sink and the sources' dead letters: all output of this epoch is
           acknowledged by the broker (with exactly-once: inside the epoch's open Kafka
           transaction, dead letters on its cluster too);
        2-4. ``Checkpointer.checkpoint``: ONE LMDB transaction with the state changes,
           the source positions and the epoch; with a Kafka transaction holding output,
           that LMDB transaction marks the epoch pending with an undo log, the Kafka
           transaction commits with the epoch marker, and the pending mark is cleared.
        A crash before 2 redoes the epoch from the previous positions; a crash between
        2 and 4 is settled on restart by asking the broker whether the epoch committed.
        """
        started = time.monotonic()
        self._emit(self.graph.flush())
        crash.point("step0")
        for sink in self.sinks.values():
            sink.flush(self.broker_timeout_s)
        letters = self._flush_dead_letters()
        crash.point("step1")
        epoch = self.epoch + 1
        offsets = {str(k): s.position() for k, s in self.sources.items()}
        offsets.update({LOOKUP_PREFIX + t: s.position() for t, s in self.lookups.items()})
        commit_sink = None
        if self.txn is not None and self._txn_dirty:
            commit_sink = lambda: self._commit_transaction(epoch)  # noqa: E731
        Checkpointer(self.backend).checkpoint(epoch, offsets, commit_sink=commit_sink)
        self.epoch = epoch
        self._txn_dirty = False
        crash.point("step4")
        if self.txn is not None:
            self.txn.begin()
        self.stats.checkpointed(time.monotonic() - started)
        for writer, count in letters:  # one line per checkpoint that wrote dead letters
            print(f"deltaflow: {writer.report(count)}", file=sys.stderr, flush=True)
        progress.report_skipped(self)
        if self.presence:
            self._presence_report().tick()

    def _flush_dead_letters(self) -> list:
        """Step 1 for the sources' dead letters: (writer, letters written) of each that
        wrote some; letters in the transaction make it worth a commit."""
        written = []
        for writer in self.dead_letters:
            count = writer.flush(self.broker_timeout_s)
            if count:
                written.append((writer, count))
                self._txn_dirty = self._txn_dirty or writer.transactional
        return written

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
        self.txn.abandon()  # type: ignore[union-attr]
        self.txn = None
        self._close_sources()
        self.backend.close()
        self.backend = StateBackend(self.options.state_dir)
        pending = self.backend.meta(PENDING_KEY)
        self._open_transaction()
        self._resume(new_run=False)
        self.txn.begin()  # type: ignore[union-attr]
        if pending is None:
            outcome = f"epoch {self.epoch + 1} was not checkpointed, redone from epoch {self.epoch}"
        elif self.epoch == pending:
            outcome = f"epoch {pending} was committed by the broker, kept"
        else:
            outcome = f"epoch {pending} was not committed, redone from epoch {self.epoch}"
        print(
            f"deltaflow: {stuck.reason}; replaced the transactional producer and settled "
            f"the epoch in process: {outcome}",
            file=sys.stderr,
            flush=True,
        )

    def _close_sources(self) -> None:
        for source in [*self.sources.values(), *self.lookups.values()]:
            source.close()
        self.sources, self.lookups, self.partitioned = {}, {}, {}
        self.presence, self.presence_report, self.dead_letters = {}, None, []

    def _presence_report(self) -> key_presence.PresenceReport:
        if self.presence_report is None:
            self.presence_report = key_presence.PresenceReport(self.presence)
        return self.presence_report

    def _commit_transaction(self, epoch: int) -> None:
        crash.point("step2")
        self.txn.commit(epoch)  # type: ignore[union-attr]
        crash.point("step3")

    def close(self) -> None:
        if self.watch is not None:
            self.watch.stop()
        if self.presence:
            self._presence_report().tick(force=True)
        for source in [*self.sources.values(), *self.lookups.values()]:
            source.close()  # kept: the metrics endpoint reads their progress after the run
        for sink in self.sinks.values():
            sink.close()
        if self.txn is not None:
            self.txn.close()
        backend = getattr(self, "backend", None)  # None: the state failed to open
        if backend is not None:
            backend.close()
        self.lock.release()
        kafka_logs.LIMITER.flush()  # how many librdkafka lines were left out, if any
