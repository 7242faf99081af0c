"""WindowTableFunction: each row with window_start, window_end and window_time appended, once
per window holding its time (rows whose time attribute is NULL are dropped, as in Flink).

TUMBLE, HOP and CUMULATE rows go out in the batch they came in (no state; windows of a
TIMESTAMP_LTZ column are aligned in the session time zone). SESSION rows are kept per
partition key, merged into sessions as the session window aggregate merges them, and go out
with their session's bounds when the watermark reaches its end - 1; a row whose merged
session has already ended is late: dropped and counted.
"""

from __future__ import annotations

from deltaflow.formats.changelog import INSERT, Batch
from deltaflow.processor.plan import WindowTableFunction
from deltaflow.processor.runtime.base import Operator, epoch_ms, from_epoch_ms
from deltaflow.processor.runtime.session_window import SessionWindowOperator
from deltaflow.processor.runtime.window import _Zone, check_window, windows_of


def window_tvf_operator(node: WindowTableFunction, backend, ctx) -> Operator:
    if node.window.kind == "SESSION":
        return SessionRowsOperator(node, backend, ctx)
    return AlignedWindowsOperator(node, backend, ctx)


class AlignedWindowsOperator(Operator):
    def __init__(self, node: WindowTableFunction, backend, ctx) -> None:
        check_window(node.window)
        self.spec = node.window
        self.ltz = node.inputs[0].types[node.window.time_column].root == "TIMESTAMP_LTZ"
        self.zone = _Zone(ctx.time_zone, self.ltz)

    def process(self, batch: Batch, port: int = 0) -> Batch:
        out = Batch()
        col, zone = self.spec.time_column, self.zone
        for kind, row in zip(batch.kinds, batch.rows, strict=True):
            value = row[col]
            if value is None:
                continue
            for start, end in windows_of(self.spec, zone.local(epoch_ms(value))):
                last = zone.utc(end) - 1
                out.append(kind, row + (from_epoch_ms(start, False), from_epoch_ms(end, False),
                                        from_epoch_ms(last, True) if self.ltz else from_epoch_ms(end - 1, False)))  # fmt: skip
        return out


class SessionRowsOperator(SessionWindowOperator):
    """The session window aggregate's sessions, emitting their rows instead of aggregates."""

    def __init__(self, node: WindowTableFunction, backend, ctx) -> None:
        super().__init__(node, backend, ctx, keys=node.window.partition_keys, aggs=None)

    def _emit(self, key: tuple, session: list, out: Batch) -> None:
        start, end, rows = session
        bounds = (
            from_epoch_ms(start, False),
            from_epoch_ms(end, False),
            from_epoch_ms(end - 1, False),
        )
        for _kind, row in rows:  # an insert-only input
            out.append(INSERT, tuple(row) + bounds)
