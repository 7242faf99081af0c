"""Rank 1 of an insert-only input ordered by a rowtime ASC: Flink's Deduplicate keep-first on
event time, which emits inserts only.

Per partition key the row of the smallest time waits for the watermark (of equal times
the first arrival: a later row replaces it only with a strictly smaller time). Once the
watermark reaches its time it is emitted (``+I``) and the key is done: later rows of the
key are dropped, as are rows older than the watermark when they arrive (late, counted in
``late_rows``). Checked against Flink 2.3 by the conformance template
``topn_ties_rowtime_first``.

State: ``waiting`` holds the waiting rows by (time, key), so a watermark reads only those
it fires, ``held`` each waiting key's time, ``done`` the keys whose row was emitted (the
only table that state TTL expires, as in Flink).
"""

from __future__ import annotations

from deltaflow.formats.changelog import ADDS, INSERT, Batch
from deltaflow.processor.plan import Rank
from deltaflow.processor.runtime.base import Operator, epoch_ms, key_getter
from deltaflow.processor.runtime.ttl import TtlBackend

MIN_WATERMARK = -(1 << 63)


class FirstOnWatermarkOperator(Operator):
    def __init__(self, node: Rank, backend, ctx) -> None:  # noqa: ARG002 - the builders' signature
        self.partition_of = key_getter(node.partition_keys)
        self.column = node.order_keys[0][0]
        self.number = (1,) if node.output_rank_number else ()
        # with state TTL only the keys' marks expire, as in Flink: a waiting row that
        # expired before its watermark would be lost
        lasting = backend.backend if isinstance(backend, TtlBackend) else backend
        self.waiting = lasting.table(f"{node.node_id}:Rank:waiting")
        self.held = lasting.table(f"{node.node_id}:Rank:held")
        self.done = backend.table(f"{node.node_id}:Rank:done")
        self.progress = lasting.table(f"{node.node_id}:Rank:watermark")
        stored = self.progress.get(("watermark",))
        self.watermark = MIN_WATERMARK if stored is None else int(stored)  # type: ignore[call-overload]
        self.late_rows: int = 0

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        parts = [self.partition_of(r) for r in batch.rows]
        distinct = list(dict.fromkeys(parts))
        emitted = dict(zip(distinct, self.done.get_many(distinct), strict=True))
        known = dict(zip(distinct, self.held.get_many(distinct), strict=True))
        for kind, row, part in zip(batch.kinds, batch.rows, parts, strict=True):
            value = row[self.column]
            if not ADDS[kind] or value is None:
                continue  # the input is insert-only; a row without a time never fires
            ts = epoch_ms(value)
            if ts < self.watermark:
                self.late_rows += 1
                continue
            held = known[part]
            if emitted[part] or (held is not None and ts >= held):  # type: ignore[operator]
                continue
            if held is not None:
                self.waiting.delete((held, *part))
            self.waiting.put((ts, *part), row)
            self.held.put(part, ts)
            known[part] = ts
        return Batch()

    def on_watermark(self, watermark: int) -> Batch:
        if watermark <= self.watermark:
            return Batch()
        self.watermark = watermark
        self.progress.put(("watermark",), watermark)
        fired = []
        for skey, row in self.waiting.scan_prefix(()):
            if skey[0] > watermark:
                break
            fired.append((skey, row))
        out = Batch()
        for skey, row in fired:
            out.append(INSERT, row + self.number)  # type: ignore[operator]
            self.waiting.delete(skey)
            self.held.delete(skey[1:])
            self.done.put(skey[1:], True)
        return out
