"""HOP windows kept per slice: each row is folded once, into its slice, and a window's
slices are merged when it fires (as Flink's slicing window operator keeps them).

A HOP window of size ``n * slide`` is the union of ``n`` consecutive slices of one slide
each, and every time of a slice lies in the same ``n`` windows. Folding a row into its
slice instead of into its ``n`` windows does ``1/n`` of the folds, state reads and writes;
a firing window then adds up its slices' accumulators per key (``Aggregates.merge``).

Used by ``WindowAggOperator`` (``sliced``) when the result cannot tell: HOP on event time
with ``n > 1``, over the input's rows (not an earlier window's bounds), live accumulators
(no state TTL), aggregates that add up (COUNT, SUM, SUM0, AVG without DISTINCT) over
exact types (``any_order``: a float sum depends on the grouping), and no window state
kept the other way (a job restarted on an older state directory goes on as before).

Which windows fire: those whose ``end - 1`` passed with this watermark (after the last
one, before or at this one), as without slices; a slice is forgotten once its last
window fired. A row late for its slice's first windows (fired already) still counts in
the later ones, and only there, as before.

State: ``(slice_end, slice_start, *keys) -> accumulator`` in a table of its own.
"""

from __future__ import annotations

from deltaflow.formats.changelog import INSERT, Batch
from deltaflow.processor.plan import WindowSpec
from deltaflow.processor.runtime.aggs import Aggregates, LiveAccs
from deltaflow.processor.runtime.base import key_prefixes
from deltaflow.state.keys import decode_key, encode_key


def can_slice(spec: WindowSpec, any_order: bool, aggs: Aggregates, live: bool) -> bool:
    """Whether the windows of ``spec`` may be kept per slice (module docstring)."""
    slide = spec.slide_ms or 0
    return (
        spec.kind == "HOP"
        and not spec.proctime
        and spec.start_column is None
        and slide > 0
        and spec.size_ms % slide == 0
        and spec.size_ms > slide
        and any_order
        and live
        and aggs.merge is not None
    )


class HopSlices:
    """The slices of one HOP window operator: folded by ``fold``, fired by ``fire``."""

    def __init__(self, op, backend, table: str, keep: int) -> None:  # noqa: ANN001
        self.op = op
        self.size, self.slide = op.spec.size_ms, op.spec.slide_ms
        self.state = backend.table(table, LiveAccs(op.aggs), keep=keep)
        # the slices (end, start) with state: read from it at the first firing, then kept
        self.slices: set[tuple[int, int]] | None = None

    def fold(self, groups: dict[tuple, list]) -> None:
        """``groups``: ``(slice_start, *key) -> [(kind, row), ...]``, each into its slice."""
        slide = self.slide
        touched = {(head[0] + slide, *head): rows for head, rows in groups.items()}
        self.op.fold_into(self.state, touched, self.slices)

    def fire(self, after: int, limit: int) -> Batch:
        """Emits every window whose ``end - 1`` (UTC) is in ``(after, limit]``, in order of
        (end, start), each window's groups in key order; then forgets the slices whose
        last window has fired."""
        utc, size, slide = self.op.zone.utc, self.size, self.slide
        if self.slices is None:
            self.slices = key_prefixes(self.state, 2)  # type: ignore[assignment]
        slices: set[tuple[int, int]] = self.slices  # type: ignore[assignment]
        due: set[tuple[int, int]] = set()
        for first_end, start in slices:
            for end in range(first_end, start + size + 1, slide):
                moment = utc(end) - 1
                if moment > limit:
                    break
                if moment > after:
                    due.add((end, end - size))
        out = Batch()
        read: dict[tuple[int, int], tuple[int, list]] = {}
        for end, start in sorted(due):
            parts = [(s + slide, s) for s in range(start, end, slide) if (s + slide, s) in slices]
            self._read(read, [p for p in parts if p not in read])
            out.extend(self._window(start, end, [read[p] for p in parts]))
        gone = sorted(s for s in slices if utc(s[1] + size) - 1 <= limit)
        self._read(read, [s for s in gone if s not in read])
        delete = self.state.delete_encoded
        for part in gone:
            slices.discard(part)
            for kb, _ in read[part][1]:
                delete(kb)
        return out

    def _read(self, read: dict, parts: list[tuple[int, int]]) -> None:
        """Each slice of ``parts``: (its key prefix's length, its (key bytes, acc) entries)."""
        if not parts:
            return
        heads = sorted((encode_key(part), part) for part in parts)
        found = self.state.scan_many([head for head, _ in heads])
        for (head, part), entries in zip(heads, found, strict=True):
            read[part] = (len(head), entries)

    def _window(self, start: int, end: int, parts: list[tuple[int, list]]) -> Batch:
        """One window's rows: its slices' accumulators added up per key (a key in one
        slice alone reads that slice's accumulator, unchanged)."""
        aggs, groups = self.op.aggs, self.op.groups
        merge, init, values = aggs.merge, aggs.init, aggs.values
        per_key: dict[bytes, list] = {}
        for cut, entries in parts:
            for kb, acc in entries:
                per_key.setdefault(kb[cut:], []).append(acc)
        columns = self.op.bounds_of(start, end, None)
        out = Batch()
        for tail in sorted(per_key):
            accs = per_key[tail]
            acc = accs[0]
            if len(accs) > 1:
                acc = init()
                for part in accs:
                    merge(acc, part)
            if acc[0] <= 0:
                continue  # every row of the window was retracted
            key = groups.get(tail)
            if key is None:
                key = decode_key(tail)
            out.append(INSERT, key + values(acc) + columns)
        return out
