"""GroupAggregate: Flink's GroupAggFunction (and MiniBatchGroupAggFunction), on batches.

Without mini-batch the output is exactly Flink's at parallelism 1: every input
record is folded on its own, in order, and the group's result is compared before
and after it:

- the first row of a group (no accumulator in state) emits ``+I``;
- a changed result emits ``-U(old)`` (when the node's changelog mode has UB) and
  ``+U(new)``; an unchanged result emits nothing, unless state TTL is on: then Flink emits
  it anyway, so downstream state of the key is written (and kept alive) too;
- a group whose row count reaches 0 emits ``-D(old)`` and forgets its state;
- a retraction for a group that has no state is ignored.

State is read once per distinct key of the batch (``get_many``) and written once per
key at the end. With mini-batch, all records of one key in the batch are folded
first and the result is compared once (so a -U/+U pair gives at most one pair).
"""

from __future__ import annotations

from deltaflow.formats.changelog import ADDS, DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor.plan import GroupAggregate
from deltaflow.processor.runtime.aggs import Aggregates
from deltaflow.processor.runtime.base import Operator, StateKeys, key_getter


class GroupAggOperator(Operator):
    def __init__(self, node: GroupAggregate, backend, ctx) -> None:
        self.node = node
        self.key_of = key_getter(node.group_keys)
        self.aggs = Aggregates(node.aggs, node.inputs[0].types)
        self.state = backend.table(f"{node.node_id}:GroupAggregate:acc")
        self.state_keys = StateKeys()
        self.update_before = node.emits_update_before
        self.mini_batch = ctx.mini_batch
        self.emit_unchanged = ctx.state_ttl_ms > 0

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        keys = [self.key_of(r) for r in batch.rows]
        encoded = self.state_keys.of(keys)  # each key encoded once
        accs = self._load(encoded)
        if self.mini_batch:
            out = self._fold_per_key(batch, keys, accs)
        else:
            out = self._per_record(batch, keys, accs)
        self._store(accs, encoded)
        return out

    def _load(self, encoded: dict[tuple, bytes]) -> dict[tuple, list | None]:
        load = self.aggs.load
        stored = self.state.get_many_encoded(list(encoded.values()))
        return {
            k: None if raw is None else load(raw) for k, raw in zip(encoded, stored, strict=True)
        }

    def _store(self, accs: dict[tuple, list | None], encoded: dict[tuple, bytes]) -> None:
        dump = self.aggs.dump
        for key, acc in accs.items():
            if acc is None:
                self.state.delete_encoded(encoded[key])
            else:
                self.state.put_encoded(encoded[key], dump(acc))

    def _per_record(self, batch: Batch, keys: list[tuple], accs: dict) -> Batch:
        aggs = self.aggs
        ub, emit_unchanged = self.update_before, self.emit_unchanged
        out_kinds: list[int] = []
        out_rows: list[tuple] = []
        results = {k: None if a is None else k + aggs.values(a) for k, a in accs.items()}
        for kind, row, key in zip(batch.kinds, batch.rows, keys, strict=True):
            acc = accs[key]
            adds = ADDS[kind]
            if acc is None:
                if not adds:
                    continue
                acc = accs[key] = aggs.init()
            prev = results[key]
            if adds:
                aggs.accumulate(acc, row)
            else:
                aggs.retract(acc, row)
            if acc[0] > 0:
                new = key + aggs.values(acc)
                if prev is None:
                    out_kinds.append(INSERT)
                    out_rows.append(new)
                elif new != prev or emit_unchanged:
                    if ub:
                        out_kinds.append(UPDATE_BEFORE)
                        out_rows.append(prev)
                    out_kinds.append(UPDATE_AFTER)
                    out_rows.append(new)
                results[key] = new
            else:
                if prev is not None:
                    out_kinds.append(DELETE)
                    out_rows.append(prev)
                accs[key] = None
                results[key] = None
        return Batch(out_kinds, out_rows)

    def _fold_per_key(self, batch: Batch, keys: list[tuple], accs: dict) -> Batch:
        grouped: dict[tuple, list[int]] = {}
        for i, key in enumerate(keys):
            grouped.setdefault(key, []).append(i)
        aggs = self.aggs
        out = Batch()
        kinds, rows = batch.kinds, batch.rows
        for key, positions in grouped.items():
            acc = accs[key]
            first = acc is None
            if first:
                # leading retractions for a group without state are dropped, as Flink does
                while positions and not ADDS[kinds[positions[0]]]:
                    positions = positions[1:]
                if not positions:
                    continue
                acc = aggs.init()
            prev = None if first else key + aggs.values(acc)
            for i in positions:
                if ADDS[kinds[i]]:
                    aggs.accumulate(acc, rows[i])
                else:
                    aggs.retract(acc, rows[i])
            accs[key] = self._emit_folded(out, key, acc, prev)
        return out

    def _emit_folded(self, out: Batch, key: tuple, acc: list, prev: tuple | None) -> list | None:
        if acc[0] <= 0:
            if prev is not None:
                out.append(DELETE, prev)
            return None
        new = key + self.aggs.values(acc)
        if prev is None:
            out.append(INSERT, new)
        elif new != prev or self.emit_unchanged:
            if self.update_before:
                out.append(UPDATE_BEFORE, prev)
            out.append(UPDATE_AFTER, new)
        return acc
