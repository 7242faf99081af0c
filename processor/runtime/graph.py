"""The operator graph of a job: one operator per plan node, batches run in topological order.

Nodes shared by several INSERTs (same ``node_id``) get one operator whose output
fans out to every consumer. A batch pushed at a source scan runs through every
node downstream of it, in topological order, within the call; what reaches each
sink is returned per sink ``node_id``.

Watermarks: a scan with a ``WATERMARK`` clause evaluates the watermark expression
on a batch (``scan_watermark``: the rowtime per row, an interval step once) and,
after the batch, advances its watermark to the batch's maximum (never backwards; with several source partitions, to the minimum
over the partitions of each one's maximum, see ``source_marks``: assigned partitions
without data hold it back, idle and finished ones do not). A node's watermark is the minimum of its
inputs'. Each node handles its pending data first, then the new watermark, so
rows fired by one window operator reach the next before the watermark does, as in
Flink. ``finish`` raises every watermark to the maximum, which fires every open
window (end of bounded input).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from deltaflow.formats.changelog import Batch
from deltaflow.formats.errors import PlanError
from deltaflow.formats.generated import for_node
from deltaflow.processor import plan as p
from deltaflow.processor.runtime.base import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    Operator,
    RuntimeContext,
)
from deltaflow.processor.runtime.changelog_ptf import FromChangelogOperator, ToChangelogOperator
from deltaflow.processor.runtime.collection_keys import FrozenKeys, collection_keys
from deltaflow.processor.runtime.correlate import CorrelateOperator
from deltaflow.processor.runtime.delta_agg import DeltaAggOperator
from deltaflow.processor.runtime.delta_cascade import DeltaCascadeOperator
from deltaflow.processor.runtime.delta_join import DeltaJoinOperator
from deltaflow.processor.runtime.delta_semi_join import DeltaSemiJoinOperator
from deltaflow.processor.runtime.group_agg import GroupAggOperator
from deltaflow.processor.runtime.interval_join import IntervalJoinOperator
from deltaflow.processor.runtime.join import JoinOperator
from deltaflow.processor.runtime.keyed import (
    ChangelogNormalizeOperator,
    DeduplicateOperator,
    SinkUpsertMaterializerOperator,
)
from deltaflow.processor.runtime.lookup import LookupJoinOperator
from deltaflow.processor.runtime.over_agg import OverAggOperator
from deltaflow.processor.runtime.rank import rank_operator
from deltaflow.processor.runtime.scan_watermark import ScanWatermark
from deltaflow.processor.runtime.semi_join import SemiJoinOperator
from deltaflow.processor.runtime.session_window import window_operator
from deltaflow.processor.runtime.simple import (
    CalcOperator,
    DropUpdateBeforeOperator,
    PassThrough,
    SinkOperator,
)
from deltaflow.processor.runtime.source_marks import SourceMarks, idle_timeout_ms
from deltaflow.processor.runtime.temporal_join import TemporalJoinOperator
from deltaflow.processor.runtime.ttl import TtlBackend
from deltaflow.processor.runtime.window_join import WindowJoinOperator
from deltaflow.processor.runtime.window_rank import WindowRankOperator
from deltaflow.processor.runtime.window_tvf import window_tvf_operator

__all__ = ["Graph", "RuntimeContext", "build_operator"]

# An operator output larger than this goes down a chain of the operators below in slices
# of this many rows (``Graph.chains``), so that one batch's output (an ON TRUE join's
# one-row side changing: every joined row again) is not held at every step at once.
SLICE_ROWS = 20_000
# Operators whose output for a batch is their outputs for its slices, in order (each
# change handled in turn: Flink's changelog), exactly these node types: the delta
# operators (subclasses) fold per batch, as does mini-batch (no slicing then).
_SLICEABLE = frozenset({p.Calc, p.Join, p.SemiJoin, p.GroupAggregate, p.SinkUpsertMaterializer,
                        p.DropUpdateBefore, p.Sink})  # fmt: skip

_BUILDERS: dict[type, Callable[..., Operator]] = {
    p.Calc: CalcOperator,
    p.GroupAggregate: GroupAggOperator,
    p.Join: JoinOperator,
    p.DeltaJoin: DeltaJoinOperator,
    p.DeltaJoinCascade: DeltaCascadeOperator,
    p.DeltaAggregate: DeltaAggOperator,
    p.ChangelogNormalize: ChangelogNormalizeOperator,
    p.Deduplicate: DeduplicateOperator,
    p.SinkUpsertMaterializer: SinkUpsertMaterializerOperator,
    p.Rank: rank_operator,
    p.WindowAggregate: window_operator,
    p.Sink: SinkOperator,
    p.LookupJoin: LookupJoinOperator,
    p.ToChangelog: ToChangelogOperator,
    p.FromChangelog: FromChangelogOperator,
    p.Correlate: CorrelateOperator,
    p.IntervalJoin: IntervalJoinOperator,
    p.OverAggregate: OverAggOperator,
    p.WindowJoin: WindowJoinOperator,
    p.WindowRank: WindowRankOperator,
    p.WindowTableFunction: window_tvf_operator,
    p.TemporalJoin: TemporalJoinOperator,
    p.SemiJoin: SemiJoinOperator,
    p.DeltaSemiJoin: DeltaSemiJoinOperator,
}


# Operators built with a fused column-selecting Calc (the plan's ``fused_calc``)
_FUSING = {
    p.GroupAggregate: GroupAggOperator,
    p.Join: JoinOperator,
    p.DeltaJoin: DeltaJoinOperator,
    p.DeltaJoinCascade: DeltaCascadeOperator,
}

# Operators whose keyed state expires with table.exec.state.ttl, as in Flink (window
# operators clean up by watermark; delta operators' mirrors are source tables).
_TTL_NODES = (
    p.GroupAggregate, p.Join, p.ChangelogNormalize, p.Deduplicate, p.Rank,
    p.SinkUpsertMaterializer, p.Sink,
)  # fmt: skip


def build_operator(node: p.Node, backend, ctx: RuntimeContext) -> Operator:
    """The runtime operator for one plan node."""
    if isinstance(node, (p.TableSourceScan, p.Union)):
        return PassThrough()
    if isinstance(node, p.DropUpdateBefore):
        return DropUpdateBeforeOperator()
    builder = _BUILDERS.get(type(node))
    if builder is None:
        raise PlanError(
            f"the streaming runtime cannot run {type(node).__name__} (node {node.node_id}) yet; "
            "rewrite the query without it",
            node=type(node).__name__,
        )
    op = builder(node, backend, ctx)
    if type(node) is p.GroupAggregate and collection_keys(node):
        return FrozenKeys(op, node)  # ARRAY / MAP group keys, grouped by content
    return op


def topological(sinks: tuple[p.Node, ...]) -> list[p.Node]:
    """Every node reachable from the sinks once (by node_id), inputs before consumers."""
    seen: set[int] = set()
    order: list[p.Node] = []

    def visit(node: p.Node) -> None:
        if node.node_id in seen:
            return
        seen.add(node.node_id)
        for child in node.inputs:
            visit(child)
        order.append(node)

    for sink in sinks:
        visit(sink)
    return order


class Graph:
    def __init__(self, plan: p.JobPlan, backend, ctx: RuntimeContext | None = None) -> None:
        self.ctx = ctx or RuntimeContext.from_settings(plan.settings)
        nodes = topological(plan.sinks)
        self.order = [n.node_id for n in nodes]
        self.nodes = {n.node_id: n for n in nodes}
        self.ttl = None
        if self.ctx.state_ttl_ms > 0 and backend is not None:
            self.ttl = TtlBackend(backend, self.ctx.state_ttl_ms, self.ctx.clock)
        self.inputs = {n.node_id: [c.node_id for c in n.inputs] for n in nodes}
        self.consumers: dict[int, list[tuple[int, int]]] = {nid: [] for nid in self.order}
        for n in nodes:
            for port, child in enumerate(n.inputs):
                self.consumers[child.node_id].append((n.node_id, port))
        self.sink_ids = [s.node_id for s in plan.sinks]
        self.ops: dict[int, Operator] = {}
        for n in nodes:
            with for_node(n):  # generated code is named after its node
                self.ops[n.node_id] = self._operator(n, backend)
        self.watermarks = dict.fromkeys(self.order, MIN_WATERMARK)
        # node -> the (node, port) chain its large outputs go down in slices, to a sink
        self.chains = {} if self.ctx.mini_batch else self._chains()
        # the job's writer of sink changes: sliced outputs reach it as they come
        self.deliver: Callable[[dict[int, Batch]], None] | None = None
        # operators with processing-time timers (processing-time windows)
        self.timed = {nid for nid, op in self.ops.items() if op.timed}
        self.source_watermarks: dict[int, int] = {}
        self.source_marks: dict[int, SourceMarks] = {}
        self.watermark_fns = {}
        for n in nodes:
            if isinstance(n, p.TableSourceScan):
                self.source_watermarks[n.node_id] = MIN_WATERMARK
                if n.watermark is not None:
                    with for_node(n):
                        self.watermark_fns[n.node_id] = ScanWatermark(
                            n.watermark.expr, self.ctx.eval_context()
                        )
                    idle_ms = idle_timeout_ms(n.options, plan.settings, n.table)
                    self.source_marks[n.node_id] = SourceMarks(idle_ms)

    def _operator(self, n: p.Node, backend) -> Operator:  # noqa: ANN001
        """The operator of a node, with the fusions the plan records (physical rules)."""
        if isinstance(n, p.Calc) and n.fused_into is not None:
            return PassThrough()  # its fused operator reads its input columns
        fused = getattr(n, "fused_calc", None)
        if fused is None:
            return build_operator(n, self._backend_of(n, backend), self.ctx)
        make = _FUSING[type(n)]
        return make(n, self._backend_of(n, backend), self.ctx, fused=self.nodes[fused])  # type: ignore[arg-type]

    def _chains(self) -> dict[int, list[tuple[int, int]]]:
        """Each node whose consumers, one after the other, form a chain of sliceable
        operators ending at a sink (each the only consumer of the one before)."""
        chains = {}
        for nid in self.order:
            chain, at = [], nid
            while len(self.consumers[at]) == 1 and at not in self.sink_ids:
                at, port = self.consumers[at][0]
                if type(self.nodes[at]) not in _SLICEABLE:
                    break
                chain.append((at, port))
            if chain and at in self.sink_ids and not self.consumers[at]:
                chains[nid] = chain
        return chains

    def _sliced(self, produced: Batch, chain: list, outputs: dict[int, Batch]) -> Batch:
        """Runs all but the last slice of ``produced`` down ``chain`` (its sink's changes
        to ``deliver``, else to ``outputs``); returns the last slice, which goes on as any
        output (the chain's watermarks and flushes after it, as without slicing)."""
        kinds, rows, size = produced.kinds, produced.rows, len(produced)
        last = (size - 1) // SLICE_ROWS * SLICE_ROWS
        for start in range(0, last, SLICE_ROWS):
            part = Batch(kinds[start : start + SLICE_ROWS], rows[start : start + SLICE_ROWS])
            for nid, port in chain:
                part = self.ops[nid].process(part, port)
                if not part:
                    break
            else:
                sink = chain[-1][0]
                if self.deliver is not None:
                    self.deliver({sink: part})
                else:
                    outputs.setdefault(sink, Batch()).extend(part)
        return Batch(kinds[last:], rows[last:])

    def _backend_of(self, node: p.Node, backend):  # noqa: ANN001, ANN202
        return self.ttl if self.ttl is not None and type(node) in _TTL_NODES else backend

    def push(
        self, scan_node_id: int, batch: Batch, partition: Hashable = 0, runs: list | None = None
    ) -> dict[int, Batch]:
        """Runs one batch of a source scan through the graph; returns each sink's changes.

        ``runs``: (partition, row count) of consecutive rows of the batch, when it holds
        several partitions' records (else all are ``partition``'s). With several source
        partitions the scan's watermark is the minimum of the partitions' watermarks
        (each the maximum its rows gave), as in Flink.
        """
        if scan_node_id not in self.source_watermarks:
            raise PlanError(f"node {scan_node_id} is not a source scan of this job")
        fn = self.watermark_fns.get(scan_node_id)
        moved = False
        if fn is not None and batch:
            marks = self.source_marks[scan_node_id]
            spans = runs or ((partition, len(batch.rows)),)
            marks_of = fn(batch.rows, [c for _, c in spans])
            for (part, _), mark in zip(spans, marks_of, strict=True):
                marks.observe(part, mark)
            moved = self._raise_to(scan_node_id, marks.combined())
        return self._run({scan_node_id: [(0, batch)]}, watermarks=moved)

    def partitions(self, scan_node_id: int) -> SourceMarks | None:
        """The per-partition watermarks of a scan with a WATERMARK clause (None without)."""
        return self.source_marks.get(scan_node_id)

    def refresh_watermark(self, scan_node_id: int) -> dict[int, Batch]:
        """Raises a scan's watermark to its partitions' present minimum (partitions gone
        idle or finished since the last batch no longer hold it back)."""
        marks = self.source_marks.get(scan_node_id)
        if marks is None or not self._raise_to(scan_node_id, marks.combined()):
            return {}
        return self._run({}, watermarks=True)

    def lookup_tables(self) -> dict[str, p.LookupJoin]:
        """The tables lookup joins probe (qualified name -> node): their changes go to ``push_lookup``."""
        return {n.table: n for n in self.nodes.values() if isinstance(n, p.LookupJoin)}

    def push_lookup(self, table: str, batch: Batch) -> None:
        """Applies changes of a looked-up table to the mirror of every lookup join on it."""
        targets = [
            op
            for op in self.ops.values()
            if isinstance(op, LookupJoinOperator) and op.table == table
        ]
        if not targets:
            raise PlanError(f"no lookup join of this job reads table {table!r}")
        for op in targets:
            op.apply_table(batch)

    def advance_watermark(self, scan_node_id: int, ts_ms: int) -> dict[int, Batch]:
        """Raises a scan's watermark (epoch ms); returns what fired windows emit."""
        moved = self._raise(scan_node_id, ts_ms)
        return self._run({}, watermarks=moved)

    def advance_processing_time(self) -> dict[int, Batch]:
        """Lets processing-time operators fire on the wall clock; what they emit goes on."""
        if not self.timed:
            return {}
        return self._run({}, now=self.ctx.clock())

    def finish(self) -> dict[int, Batch]:
        """End of bounded input: the final watermark fires every open window."""
        for scan in self.source_watermarks:
            self.source_watermarks[scan] = MAX_WATERMARK
        return self._run({}, watermarks=True, flush=True)

    def flush(self) -> dict[int, Batch]:
        """Empties operator buffers (before a checkpoint); with state TTL, sweeps a bounded
        number of stored entries for expired state."""
        out = self._run({}, flush=True)
        if self.ttl is not None:
            self.ttl.sweep()
        return out

    def _raise_to(self, scan: int, ts: int | None) -> bool:
        return ts is not None and self._raise(scan, ts)

    def _raise(self, scan: int, ts: int) -> bool:
        if ts <= self.source_watermarks[scan]:
            return False
        self.source_watermarks[scan] = ts
        return True

    def _watermark_of(self, nid: int) -> int:
        if nid in self.source_watermarks:
            return self.source_watermarks[nid]
        return min(self.watermarks[i] for i in self.inputs[nid])

    def _run(
        self,
        pending: dict[int, list],
        watermarks: bool = False,
        flush: bool = False,
        now: int | None = None,
    ) -> dict[int, Batch]:
        outputs: dict[int, Batch] = {}
        for nid in self.order:
            op = self.ops[nid]
            produced = Batch()
            for port, batch in pending.pop(nid, ()):
                produced.extend(op.process(batch, port))
            if watermarks:
                mark = self._watermark_of(nid)
                if mark > self.watermarks[nid]:
                    self.watermarks[nid] = mark
                    produced.extend(op.on_watermark(mark))
            if now is not None and nid in self.timed:
                produced.extend(op.on_processing_time(now))
            if flush:
                produced.extend(op.flush())
            if not produced:
                continue
            chain = self.chains.get(nid)
            if chain and len(produced) > SLICE_ROWS and not any(c in pending for c, _ in chain):
                produced = self._sliced(produced, chain, outputs)
            if nid in self.sink_ids:
                outputs.setdefault(nid, Batch()).extend(produced)
            for consumer, port in self.consumers[nid]:
                pending.setdefault(consumer, []).append((port, produced))
        return outputs
