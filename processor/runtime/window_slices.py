"""HOP and CUMULATE windows kept per slice: each row is folded once, into its slice, and
a window's slices are added up when it fires (as Flink's slicing window operator keeps
them).

A HOP window of size ``n * slide`` is the union of ``n`` consecutive slices of one slide
each, and every time of a slice lies in the same ``n`` windows; a CUMULATE window of size
``n * step`` ending at its ``k``-th step is the union of its first ``k`` slices of one step.
Folding a row into its slice instead of into each of its windows does one fold, state
read and write where there were up to ``n``; a firing window adds up its slices'
accumulators per key (``Aggregates.merge``). A CUMULATE window keeps a running total per
key (the slices of the windows fired so far, added up): each of its firings adds the
slices up to its end into it, so a window of ``n`` steps is added up once, not ``n``
times.

Used by ``WindowAggOperator`` (``sliced``) when the result cannot tell: HOP or CUMULATE on
event time with ``n > 1``, over the input's rows (not an earlier window's bounds), live
accumulators (no state TTL), aggregates that add up (COUNT, SUM, SUM0, AVG without
DISTINCT) over exact types (``any_order``: a float sum depends on the grouping), and no
window state kept the other way (a job restarted on an older state directory goes on as
before).

Which windows fire: those whose ``end - 1`` passed with this watermark (after the last
one, before or at this one), as without slices; a slice (a running total) is forgotten
once its last window fired (once it is added into the total). A row late for its slice's
first windows (fired already) still counts in the later ones, and only there, as before.

State: ``(slice_end, slice_start, *keys) -> accumulator`` in a table of its own, and
``(window_start, window_start, *keys)`` for a CUMULATE window's running total.
"""

from __future__ import annotations

from bisect import bisect_right

from deltaflow.formats.changelog import INSERT, Batch
from deltaflow.processor.plan import WindowSpec
from deltaflow.processor.runtime.aggs import Aggregates, LiveAccs
from deltaflow.processor.runtime.base import key_prefixes
from deltaflow.state.keys import decode_key, encode_key


def can_slice(spec: WindowSpec, any_order: bool, aggs: Aggregates, live: bool) -> bool:
    """Whether the windows of ``spec`` may be kept per slice (module docstring)."""
    unit = (spec.slide_ms if spec.kind == "HOP" else spec.step_ms) or 0
    return (
        spec.kind in ("HOP", "CUMULATE")
        and not spec.proctime
        and spec.start_column is None
        and unit > 0
        and spec.size_ms % unit == 0
        and spec.size_ms > unit
        and any_order
        and live
        and aggs.merge is not None
    )


class WindowSlices:
    """The slices of one HOP or CUMULATE window operator: folded by ``fold``, fired by
    ``fire``."""

    def __init__(self, op, backend, table: str, keep: int) -> None:  # noqa: ANN001
        self.op = op
        spec = op.spec
        self.size, self.offset = spec.size_ms, spec.offset_ms
        self.cumulate = spec.kind == "CUMULATE"
        self.unit = spec.step_ms if self.cumulate else spec.slide_ms
        self.state = backend.table(table, LiveAccs(op.aggs), keep=keep)
        # what has state, read from it at the first firing, then kept: slices (end, start),
        # and for CUMULATE the running totals of windows (start, start)
        self.slices: set[tuple[int, int]] | None = None

    def fold(self, groups: dict[tuple, list]) -> None:
        """``groups``: ``(slice_start, *key) -> [(kind, row), ...]``, each into its slice."""
        unit = self.unit
        touched = {(head[0] + unit, *head): rows for head, rows in groups.items()}
        self.op.fold_into(self.state, touched, self.slices)

    def fire(self, after: int, limit: int) -> Batch:
        """Emits every window whose ``end - 1`` (UTC) is in ``(after, limit]``, in order of
        (end, start), each window's groups in key order; then forgets what no window to
        come reads."""
        if self.slices is None:
            self.slices = key_prefixes(self.state, 2)  # type: ignore[assignment]
        due = sorted(self._due(after, limit))
        if self.cumulate:
            return self._fire_cumulate(due, limit)
        return self._fire_hop(due, limit)

    def _due(self, after: int, limit: int) -> set[tuple[int, int]]:
        """The windows (end, start) holding a slice or a running total, due now."""
        utc, size, unit = self.op.zone.utc, self.size, self.unit
        due: set[tuple[int, int]] = set()
        for first_end, start in self.slices:  # type: ignore[union-attr]
            if self.cumulate:
                window = start - (start - self.offset) % size
                if first_end == start:  # a running total: from the window's first end
                    first_end = start + unit
            else:
                window = None
            last = (start if window is None else window) + size
            ends = range(first_end, last + 1, unit)
            # past the ends fired already at once (a day of minutes has 1,440 of them)
            for end in ends[bisect_right(ends, after, key=lambda e: utc(e) - 1) :]:
                if utc(end) - 1 > limit:
                    break
                due.add((end, end - size if window is None else window))
        return due

    def _fire_hop(self, due: list[tuple[int, int]], limit: int) -> Batch:
        """Each HOP window: its slices' accumulators added up per key (a key in one slice
        alone reads that slice's accumulator, unchanged). A slice goes after its last
        window."""
        slices: set[tuple[int, int]] = self.slices  # type: ignore[assignment]
        unit, aggs = self.unit, self.op.aggs
        merge, init = aggs.merge, aggs.init
        out = Batch()
        read: dict[tuple[int, int], tuple[int, list]] = {}
        for end, start in due:
            parts = [(s + unit, s) for s in range(start, end, unit) if (s + unit, s) in slices]
            self._read(read, [p for p in parts if p not in read])
            accs: dict[bytes, list] = {}
            for cut, entries in (read[p] for p in parts):
                for kb, acc in entries:
                    accs.setdefault(kb[cut:], []).append(acc)
            per_key = {}
            for tail, some in accs.items():
                acc = some[0]
                if len(some) > 1:
                    acc = init()
                    for part in some:
                        merge(acc, part)
                per_key[tail] = acc
            out.extend(self._emit(start, end, per_key))
        utc, size = self.op.zone.utc, self.size
        gone = sorted(s for s in slices if utc(s[1] + size) - 1 <= limit)
        self._forget(read, gone)
        return out

    def _fire_cumulate(self, due: list[tuple[int, int]], limit: int) -> Batch:
        """Each CUMULATE window: its running total (the window's slices fired so far, kept
        as ``(start, start, *key)``) with the slices up to its end added in; those slices
        go, the total is written back, and goes after the window's last end."""
        slices: set[tuple[int, int]] = self.slices  # type: ignore[assignment]
        unit, merge, state = self.unit, self.op.aggs.merge, self.state
        out = Batch()
        totals: dict[int, dict[bytes, list]] = {}
        for end, start in due:
            total = totals.get(start)
            if total is None:
                total = totals[start] = self._total(start)
            parts = [(s + unit, s) for s in range(start, end, unit) if (s + unit, s) in slices]
            read: dict[tuple[int, int], tuple[int, list]] = {}
            self._read(read, parts)
            for cut, entries in read.values():
                for kb, acc in entries:
                    tail = kb[cut:]
                    have = total.get(tail)
                    if have is None:
                        total[tail] = acc  # the slice's accumulator, taken over: it goes
                    else:
                        merge(have, acc)
            self._forget(read, parts)
            out.extend(self._emit(start, end, total))
        utc, size = self.op.zone.utc, self.size
        for start, total in totals.items():
            head = encode_key((start, start))
            if utc(start + size) - 1 <= limit:
                if (start, start) in slices:
                    read = {}
                    self._read(read, [(start, start)])
                    self._forget(read, [(start, start)])
                continue
            for tail, acc in total.items():
                state.put_encoded(head + tail, acc)
            slices.add((start, start))
        return out

    def _total(self, start: int) -> dict[bytes, list]:
        """The running total of the CUMULATE window starting at ``start``, by key bytes."""
        if (start, start) not in self.slices:  # type: ignore[operator]
            return {}
        read: dict[tuple[int, int], tuple[int, list]] = {}
        self._read(read, [(start, start)])
        cut, entries = read[(start, start)]
        return {kb[cut:]: acc for kb, acc in entries}

    def _read(self, read: dict, parts: list[tuple[int, int]]) -> None:
        """Each of ``parts``: (its key prefix's length, its (key bytes, acc) entries)."""
        if not parts:
            return
        heads = sorted((encode_key(part), part) for part in parts)
        found = self.state.scan_many([head for head, _ in heads])
        for (head, part), entries in zip(heads, found, strict=True):
            read[part] = (len(head), entries)

    def _forget(self, read: dict, parts: list[tuple[int, int]]) -> None:
        """Deletes ``parts`` from the state (read first where ``read`` lacks them)."""
        self._read(read, [p for p in parts if p not in read])
        delete = self.state.delete_encoded
        for part in parts:
            self.slices.discard(part)  # type: ignore[union-attr]
            for kb, _ in read[part][1]:
                delete(kb)

    def _emit(self, start: int, end: int, per_key: dict[bytes, list]) -> Batch:
        """One window's rows from its accumulators by key bytes, in key order."""
        values, groups = self.op.aggs.values, self.op.groups
        columns = self.op.bounds_of(start, end, None)
        out = Batch()
        for tail in sorted(per_key):
            acc = per_key[tail]
            if acc[0] <= 0:
                continue  # every row of the window was retracted
            key = groups.get(tail)
            if key is None:
                key = decode_key(tail)
            out.append(INSERT, key + values(acc) + columns)
        return out
