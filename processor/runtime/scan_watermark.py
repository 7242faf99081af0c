"""A scan's watermark expression over one batch: the largest value per partition run.

The scan's watermark after a batch is, per source partition, the largest non-NULL value
the ``WATERMARK`` expression gives on that partition's rows (``epoch_ms`` of it). Most
expressions are ``rowtime - INTERVAL constant`` (or ``+``, or the rowtime itself) over a
TIMESTAMP or TIMESTAMP_LTZ: a day-time interval moves every value by the same
milliseconds, which keeps their order, so the largest result is the result of the
largest rowtime. For those the rowtime is evaluated per row in one generated loop (a
plain column is only read), the interval step once per run; other expressions keep the
per-row path (each row through the compiled expression).

Exactly as the per-row path, errors included: the interval step is applied to the
run's smallest and largest rowtime; when both succeed every row's does (a datetime's
range is an interval, and a fixed step maps [lo, hi] onto [lo + d, hi + d]). When the
step or the rowtime fails on any row the batch goes through the per-row path, which
raises the error the row gives.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from operator import is_not, itemgetter

from deltaflow.processor.exprs.compile import EvalContext, compile_calc, compile_scalar
from deltaflow.processor.exprs.errors import EvalError
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, Literal
from deltaflow.processor.runtime.base import epoch_ms

__all__ = ["ScanWatermark", "split_monotone"]

_TIME_ROOTS = frozenset({"TIMESTAMP", "TIMESTAMP_LTZ"})
_present = partial(is_not, None)


def _interval(expr: Expr) -> bool:
    return (
        isinstance(expr, Literal)
        and expr.type.root == "INTERVAL_DAY_TIME"
        and type(expr.value) is int
    )


def _step(expr: Expr) -> int | None:
    """The operand index of the time value when ``expr`` is ``time +/- day-time literal``."""
    if not (isinstance(expr, Call) and expr.type.root in _TIME_ROOTS and len(expr.operands) == 2):
        return None
    left, right = expr.operands
    if expr.op in ("-", "+") and _interval(right) and left.type.root in _TIME_ROOTS:
        return 0
    if expr.op == "+" and _interval(left) and right.type.root in _TIME_ROOTS:
        return 1
    return None


def split_monotone(expr: Expr) -> tuple[Expr, Expr] | None:
    """``(inner, outer)``: ``expr`` is ``outer`` applied to ``inner``'s value (``outer``
    reads it as column 0), ``outer`` a chain of day-time interval steps; None when
    ``expr`` is not of that shape (its result type not a timestamp)."""
    if expr.type.root not in _TIME_ROOTS:
        return None
    chain: list[tuple[Call, int]] = []
    inner = expr
    while (at := _step(inner)) is not None:
        chain.append((inner, at))  # type: ignore[arg-type]
        inner = inner.operands[at]  # type: ignore[attr-defined]
    outer: Expr = InputRef(inner.type, 0)
    for call, at in reversed(chain):
        operands = list(call.operands)
        operands[at] = outer
        outer = dataclasses.replace(call, operands=tuple(operands))
    return inner, outer


class ScanWatermark:
    """``marks(rows, counts)``: per run of ``counts`` consecutive rows, the epoch ms of the
    largest non-NULL watermark value (None when the run has none)."""

    def __init__(self, expr: Expr, ctx: EvalContext) -> None:
        self.per_row = compile_scalar(expr, ctx)
        split = split_monotone(expr)
        self.column: Callable[[list[tuple]], list] | None = None
        self.outer: Callable[[tuple], object] | None = None
        if split is None:
            return
        inner, outer = split
        if isinstance(inner, InputRef):
            self.column = partial(_read, itemgetter(inner.index))
        else:
            self.column = partial(_evaluate, compile_calc([inner], None, ctx))
        self.outer = None if isinstance(outer, InputRef) else compile_scalar(outer, ctx)

    def __call__(self, rows: list[tuple], counts: list[int]) -> list[int | None]:
        if self.column is not None:
            try:
                return self._batched(rows, counts)
            except EvalError:
                pass  # the per-row path raises the row's own error
        return self._rows(rows, counts)

    def _rows(self, rows: list[tuple], counts: list[int]) -> list[int | None]:
        stamps: list = list(map(self.per_row, rows))
        out: list[int | None] = []
        start = 0
        for count in counts:
            present = [v for v in stamps[start : start + count] if v is not None]
            out.append(epoch_ms(max(present)) if present else None)
            start += count
        return out

    def _batched(self, rows: list[tuple], counts: list[int]) -> list[int | None]:
        values = self.column(rows)  # type: ignore[misc]
        outer = self.outer
        out: list[int | None] = []
        start = 0
        for count in counts:
            present = list(filter(_present, values[start : start + count]))
            start += count
            if not present:
                out.append(None)
            elif outer is None:
                out.append(epoch_ms(max(present)))
            else:
                outer((min(present),))  # raises when a row's step would
                out.append(epoch_ms(outer((max(present),))))
        return out


def _read(get: Callable[[tuple], object], rows: list[tuple]) -> list:
    return list(map(get, rows))


def _evaluate(calc: Callable, rows: list[tuple]) -> list:  # type: ignore[type-arg]
    return list(map(itemgetter(0), calc((), rows)[1]))
