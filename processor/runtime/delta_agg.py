"""DeltaAggregate: GroupAggregate's results computed from the source's mirror, with no
accumulator state.

Its input is the source scan: a batch is applied to the table's mirror (see ``mirror``) and
passed through the Calc before the aggregate. Each group the batch touches is read once
from the mirror as it was before the batch, its rows folded into a fresh accumulator (the
group's old result), then the batch's changes of that group are folded in order (its new
result); the group then emits what GroupAggregate emits under mini-batch (one comparison
per group per batch): ``+I`` for a new group, ``-U``/``+U`` for a changed result (``-U`` only
when the node's changelog mode has UB), nothing for an unchanged one, ``-D`` when the group
empties. Groups come out in the order the batch first touches them.

So the changelog is MiniBatchGroupAggFunction's (several changes of one group in a batch
fold into one update), and the final table equals GroupAggregate's. The aggregate functions
are the runtime's own (``aggs``). LISTAGG, FIRST_VALUE and LAST_VALUE depend on the order
values arrived in; for them the operator keeps one arrival number per source row and call
(``delta_agg_order``), its only state, and rebuilds each group's list in Flink's order.
"""

from __future__ import annotations

from deltaflow.formats.changelog import ADDS, DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor.plan import DeltaAggregate
from deltaflow.processor.runtime.aggs import Aggregates
from deltaflow.processor.runtime.base import Operator
from deltaflow.processor.runtime.delta_agg_order import ArrivalOrder, ordered_calls
from deltaflow.processor.runtime.mirror import SourceReader


class DeltaAggOperator(Operator):
    def __init__(self, node: DeltaAggregate, backend, ctx) -> None:
        self.reader = SourceReader(node.source, node.group_keys, backend, ctx, node.inputs[0].types)
        self.aggs = Aggregates(node.aggs, list(node.input_types))
        self.update_before = node.emits_update_before
        self.order = ArrivalOrder(node, backend, ctx) if ordered_calls(node.aggs) else None

    def process(self, batch: Batch, port: int = 0) -> Batch:
        out = Batch()
        if not batch:
            return out
        order, reader = self.order, self.reader
        kinds, rows = order.changes(reader, batch) if order else reader.changes(batch)
        if not rows:
            return out
        key_of = reader.key_of
        grouped: dict[tuple, list[int]] = {}
        for i, row in enumerate(rows):
            grouped.setdefault(key_of(row), []).append(i)
        if order is None:
            before = reader.rows(list(grouped), batch)
        else:
            before = order.rows(reader, list(grouped), batch)
        for key, positions in grouped.items():
            self._group(out, key, before[key], positions, kinds, rows)
        if order is not None:
            order.finish(len(rows))
        return out

    def _group(self, out: Batch, key: tuple, before: list, positions: list, kinds, rows) -> None:
        """A group's old result from its rows before the batch, the batch's changes folded in
        order, and what the group emits."""
        aggs, order = self.aggs, self.order
        acc = aggs.init()
        for row in before:
            aggs.accumulate(acc, row)
        group = None
        if order is not None:
            group = order.open(key, before)
            order.fill(group, acc)
        prev = key + aggs.values(acc) if acc[0] > 0 else None
        for i in positions:
            if ADDS[kinds[i]]:
                aggs.accumulate(acc, rows[i])
            elif acc[0] > 0:
                aggs.retract(acc, rows[i])
            else:  # a retraction for an empty group: dropped, as GroupAggFunction does
                continue
            if group is not None:
                order.fold(group, kinds[i], rows[i], i)  # type: ignore[union-attr]
        if group is not None:
            order.fill(group, acc)  # type: ignore[union-attr]
            order.close(group)  # type: ignore[union-attr]
        self._emit(out, key, acc, prev)

    def _emit(self, out: Batch, key: tuple, acc: list, prev: tuple | None) -> None:
        if acc[0] <= 0:
            if prev is not None:
                out.append(DELETE, prev)
            return
        new = key + self.aggs.values(acc)
        if prev is None:
            out.append(INSERT, new)
        elif new != prev:
            if self.update_before:
                out.append(UPDATE_BEFORE, prev)
            out.append(UPDATE_AFTER, new)
