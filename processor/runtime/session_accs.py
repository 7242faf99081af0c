"""A session's accumulator, kept instead of its rows when the aggregates can merge.

Over an insert-only input, COUNT (with or without FILTER, not DISTINCT) and SUM and AVG
of exact types (integers and DECIMAL, whose sums in the 80-digit ``WIDE`` context are
exact) give the same results whatever the order the rows are folded in and however the
rows are split into parts folded apart and added together. For those a session keeps one
accumulator: a row is folded in when it joins the session, two sessions a row bridges
add their accumulators, and firing reads the results. The state of a long session is
then a few numbers, not every row re-encoded at each checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable

from deltaflow.formats.types import DECIMAL
from deltaflow.processor.runtime.agg_functions import Avg, Count, Sum
from deltaflow.processor.runtime.aggs import Aggregates

__all__ = ["SessionAccs", "session_accs"]

_INEXACT = frozenset({"FLOAT", "DOUBLE"})


class SessionAccs:
    """``new(row)``, ``add(acc, row)`` and ``merge(into, other)`` of one operator's aggregates."""

    def __init__(self, aggs: Aggregates) -> None:
        self.init = aggs.init
        fold = aggs.fold_lines(False, "    ", "acc", "row")
        self.add: Callable[[list, tuple], None] = aggs.build(["def add(acc, row):", *fold], "add")
        self.merge: Callable[[list, list], None] = aggs.build(_merge_lines(aggs), "merge")

    def new(self, row: tuple) -> list:
        acc = self.init()
        self.add(acc, row)
        return acc


def session_accs(aggs: Aggregates | None, insert_only: bool) -> SessionAccs | None:
    """The accumulators of a session window's aggregates, None when they cannot merge
    exactly (a retracting input, DISTINCT, MIN/MAX, LISTAGG, floating sums, ...)."""
    if aggs is None or not insert_only or not aggs.plain:
        return None
    for fn in aggs.fns:
        if type(fn) is Count:
            continue
        if type(fn) not in (Sum, Avg) or fn.dtype.root in _INEXACT:
            return None
    return SessionAccs(aggs)


def _merge_lines(aggs: Aggregates) -> list[str]:
    lines = ["def merge(a, b):", "    a[0] += b[0]"]
    for slot, fn in enumerate(aggs.fns, start=1):
        if type(fn) is Count:
            lines.append(f"    a[{slot}] += b[{slot}]")
            continue
        if fn.dtype.root == DECIMAL:
            lines.append(f"    a[{slot}][0] = _dadd(a[{slot}][0], b[{slot}][0])")
        else:
            lines.append(f"    a[{slot}][0] += b[{slot}][0]")
        lines.append(f"    a[{slot}][1] += b[{slot}][1]")
    return lines
