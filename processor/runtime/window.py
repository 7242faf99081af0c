"""WindowAggregate: TUMBLE, HOP and CUMULATE over event time, fired by watermarks.

As Flink's slicing window operator: a row is folded into the accumulator of every
window holding it that has not fired yet; a row whose windows have all fired
(the last one ended at or before the watermark + 1 ms) is late and dropped. (For
HOP and CUMULATE a row whose first windows fired still counts in the later ones,
as Flink's "late, but maybe not need to drop" rule does.)
A window fires once the watermark reaches ``window_end - 1``: it emits ``+I[keys,
aggs, window_start, window_end, window_time]`` with ``window_time = window_end - 1
ms`` and forgets its state.

Windows of a TIMESTAMP_LTZ time column are aligned in the session time zone
(``table.local-time-zone``), as Flink does; window_start/window_end are then local
TIMESTAMPs and window_time the TIMESTAMP_LTZ instant.

HOP and CUMULATE windows whose aggregates add up (COUNT, SUM, SUM0, AVG over exact types)
are kept per slice instead: a row is folded once, into its slide's (step's) accumulator,
and a window adds up its slices when it fires (``window_slices``); the rows it emits are
the same.

State: ``(window_end, window_start, *keys) -> accumulator``. The operator knows which
windows hold state (read from it at its first firing, then kept as rows are folded), so a
firing reads the due windows' keys alone, in key order, and stops at the first window
still open.

Windows of a PROCTIME() attribute hold the rows by the wall clock when they reach the
operator (one reading per batch) and fire when the wall clock reaches ``window_end - 1``
(``on_processing_time``), with the firing time as window_time; watermarks do not move
them and no row is late. At the end of a bounded input windows still open are not fired,
as Flink 2.3 leaves them (its job ends with their timers pending).
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from deltaflow.formats.changelog import INSERT, Batch
from deltaflow.formats.errors import PlanError
from deltaflow.processor.plan import WindowAggregate, WindowSpec
from deltaflow.processor.runtime.aggs import Aggregates, LiveAccs
from deltaflow.processor.runtime.base import (
    MAX_WATERMARK,
    Operator,
    epoch_ms,
    from_epoch_ms,
    key_getter,
    key_prefixes,
)
from deltaflow.processor.runtime.window_slices import WindowSlices, can_slice
from deltaflow.state.keys import decode_key, encode_key


def check_window(spec: WindowSpec) -> None:
    if spec.kind not in ("TUMBLE", "HOP", "CUMULATE"):
        raise PlanError(f"window {spec.kind} is not supported; use TUMBLE, HOP or CUMULATE")
    if spec.size_ms <= 0 or (spec.slide_ms or 1) <= 0 or (spec.step_ms or 1) <= 0:
        raise PlanError(f"window {spec.kind} needs positive size, slide and step intervals")


def windows_of(spec: WindowSpec, ts: int) -> list[tuple[int, int]]:
    """The (start, end) of every window holding timestamp ``ts`` (local epoch ms)."""
    size, offset = spec.size_ms, spec.offset_ms
    if spec.kind == "TUMBLE":
        start = ts - (ts - offset) % size
        return [(start, start + size)]
    if spec.kind == "HOP":
        slide = spec.slide_ms or size
        last = ts - (ts - offset) % slide
        return [(s, s + size) for s in range(last, ts - size, -slide)]
    step = spec.step_ms or size
    start = ts - (ts - offset) % size
    first_end = ts - (ts - offset) % step + step
    return [(start, end) for end in range(first_end, start + size + 1, step)]


def slice_ms(spec: WindowSpec) -> int:
    """The length of the slices whose times all lie in the same windows (1 ms when the
    window's size is not a multiple of its slide or step)."""
    unit = {"TUMBLE": spec.size_ms, "HOP": spec.slide_ms, "CUMULATE": spec.step_ms}.get(spec.kind)
    unit = unit or spec.size_ms
    return unit if unit > 0 and spec.size_ms % unit == 0 else 1


def any_order(calls: tuple, arg_types: list) -> bool:
    """Whether folding the rows of a window in any order gives the same results: COUNT,
    and SUM, AVG, MIN, MAX of exact types (a float sum depends on the order; NaN's order)."""
    exact = ("COUNT", "SUM", "SUM0", "AVG", "MIN", "MAX")
    return all(
        call.function == "COUNT"
        or (call.function in exact and t is not None and t.root not in ("FLOAT", "DOUBLE"))
        for call, t in zip(calls, arg_types, strict=True)
    )


class _Zone:
    """Shifts epoch ms into the session time zone (for TIMESTAMP_LTZ windows) and back."""

    def __init__(self, name: str, enabled: bool) -> None:
        self.zone = ZoneInfo(name) if enabled and name.upper() not in ("UTC", "Z") else None

    def _offset(self, utc_ms: int) -> int:
        instant = dt.datetime.fromtimestamp(utc_ms / 1000, tz=dt.UTC)
        return int(self.zone.utcoffset(instant).total_seconds() * 1000)  # type: ignore[union-attr]

    def local(self, utc_ms: int) -> int:
        return utc_ms if self.zone is None else utc_ms + self._offset(utc_ms)

    def utc(self, local_ms: int) -> int:
        return local_ms if self.zone is None else local_ms - self._offset(local_ms)


KEEP_WINDOWS = 50_000  # committed live accumulators kept decoded
_EPOCH, _MS = dt.datetime(1970, 1, 1), dt.timedelta(milliseconds=1)  # as base.epoch_ms


def _empty(table) -> bool:  # noqa: ANN001
    """Whether a state table holds nothing (buffered writes included)."""
    return next(iter(table.scan_prefix(())), None) is None


KEPT_GROUPS = 100_000  # group keys whose bytes an operator remembers (then starts over)


def _encoded(keys: list[tuple], groups: dict[bytes, tuple]) -> list[bytes]:
    """``encode_key`` of each ``(window_end, window_start, *group key)``: a key's bytes are
    its values' bytes one after the other, so each window's and each group key's part is
    encoded once per batch (a HOP row's group key is in several windows). ``groups``
    learns each group key's bytes -> the key they decode to, so a firing finds them
    decoded (once per group key, not once per window of a HOP)."""
    windows: dict[tuple, bytes] = {}
    tails: dict[tuple, bytes] = {}
    out = []
    for skey in keys:
        window, group = skey[:2], skey[2:]
        head = windows.get(window)
        if head is None:
            head = windows[window] = encode_key(window)
        tail = tails.get(group)
        if tail is None:
            tail = tails[group] = encode_key(group)
        out.append(head + tail)
    if len(groups) + len(tails) > KEPT_GROUPS:
        groups.clear()
    for tail in tails.values():
        if tail not in groups:
            groups[tail] = decode_key(tail)
    return out


class WindowAggOperator(Operator):
    def __init__(self, node: WindowAggregate, backend, ctx) -> None:
        self.spec = node.window
        check_window(node.window)
        input_types = node.inputs[0].types
        self.ltz = input_types[node.window.time_column].root == "TIMESTAMP_LTZ"
        self.zone = _Zone(ctx.time_zone, self.ltz)
        self.key_of = key_getter(node.group_keys)
        self.aggs = Aggregates(node.aggs, input_types)
        name = f"{node.node_id}:WindowAggregate:acc"
        # accumulators stay live until their window fires (LiveAccs): folded in place
        self.live = ctx.state_ttl_ms <= 0
        if self.live:
            self.state = backend.table(name, LiveAccs(self.aggs), keep=KEEP_WINDOWS)
        else:
            self.state = backend.table(name)
        self.progress = backend.table(f"{node.node_id}:WindowAggregate:watermark")
        stored = self.progress.get(("watermark",))
        self.watermark = -(1 << 63) if stored is None else int(stored)  # type: ignore[call-overload]
        self.late_rows: int = 0
        self.clock = ctx.clock
        self.timed = node.window.proctime
        self.next_due = -(1 << 63)  # processing time: the earliest end - 1 of an open window
        self.slice_ms = slice_ms(node.window)
        self.any_order = any_order(node.aggs, self.aggs.arg_types)
        # the windows (end, start) with state, read from it at the first firing and kept
        # since, so a firing reads only the windows it fires; group key bytes -> key
        self.windows: set[tuple[int, int]] | None = None
        self.groups: dict[bytes, tuple] = {}
        # HOP and CUMULATE windows kept per slice (window_slices), unless windows were kept
        self.sliced: WindowSlices | None = None
        if can_slice(node.window, self.any_order, self.aggs, self.live) and _empty(self.state):
            table = f"{node.node_id}:WindowAggregate:slice"
            self.sliced = WindowSlices(self, backend, table, KEEP_WINDOWS)

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        if self.spec.proctime:
            return self._process_proctime(batch)
        col, zone, watermark = self.spec.time_column, self.zone, self.watermark
        bounded = self.spec.start_column is not None  # over an earlier window's bounds
        start_col, end_col = self.spec.start_column, self.spec.end_column
        touched: dict[tuple, list[tuple[int, tuple]]] = {}
        open_of: dict[int, list[tuple[int, int]]] = {}  # per slice: its open windows
        of_bounds: dict[tuple, list[tuple[int, int]]] = {}  # per earlier window: the same
        offset, unit = self.spec.offset_ms, self.slice_ms
        key_of, late_rows = self.key_of, 0
        local = None if zone.zone is None else zone.local  # TIMESTAMP_LTZ: the session zone
        # rows grouped per slice and key first when the fold's order cannot change the results
        slices: dict[tuple, list] | None = {} if self.any_order and not bounded else None
        for kind, row in zip(batch.kinds, batch.rows, strict=True):
            value = row[col]
            if value is None:
                continue  # Flink drops rows whose time attribute is NULL
            if bounded:  # the window of its bounds, worked out once per batch
                windows = of_bounds.get(bounds := (row[start_col], row[end_col]))  # type: ignore[index]
                if windows is None:
                    windows = of_bounds[bounds] = [
                        (e, s) for s, e in self._bounds(row) if zone.utc(e) - 1 > watermark
                    ]
            else:  # a naive TIMESTAMP's epoch ms inline (epoch_ms otherwise)
                naive = type(value) is dt.datetime and value.tzinfo is None
                ts = (value - _EPOCH) // _MS if naive else epoch_ms(value)  # type: ignore[operator]
                if local is not None:
                    ts = local(ts)
                ts -= (ts - offset) % unit  # every time of a slice has the same windows
                windows = open_of.get(ts)  # type: ignore[assignment]
                if windows is None:
                    windows = open_of[ts] = [
                        (e, s) for s, e in windows_of(self.spec, ts) if zone.utc(e) - 1 > watermark
                    ]
            if not windows:
                late_rows += 1
                continue
            key = key_of(row)
            if slices is not None:
                slices.setdefault((ts, *key), []).append((kind, row))
                continue
            for window in windows:
                touched.setdefault(window + key, []).append((kind, row))
        self.late_rows += late_rows
        if self.sliced is not None:
            self.sliced.fold(slices)  # type: ignore[arg-type]
            return Batch()
        for skey, rows in (slices or {}).items():  # each slice's rows into its windows at once
            key = skey[1:]
            for window in open_of[skey[0]]:
                touched.setdefault(window + key, []).extend(rows)
        self._fold(touched)
        return Batch()

    def _process_proctime(self, batch: Batch) -> Batch:
        now_windows = windows_of(self.spec, self.zone.local(self.clock()))
        bounded = self.spec.start_column is not None  # over an earlier window's bounds
        touched: dict[tuple, list[tuple[int, tuple]]] = {}
        for kind, row in zip(batch.kinds, batch.rows, strict=True):
            key = self.key_of(row)
            for start, end in self._bounds(row) if bounded else now_windows:
                touched.setdefault((end, start) + key, []).append((kind, row))
        self._fold(touched)
        if touched:
            first = min(self.zone.utc(skey[0]) - 1 for skey in touched)
            self.next_due = min(self.next_due, first)
        return Batch()

    def _bounds(self, row: tuple) -> list[tuple[int, int]]:
        """The one window of a row of an earlier window aggregate: its start and end columns."""
        start, end = row[self.spec.start_column], row[self.spec.end_column]  # type: ignore[index]
        return [(epoch_ms(start), epoch_ms(end))]

    def _fold(self, touched: dict[tuple, list[tuple[int, tuple]]]) -> None:
        self.fold_into(self.state, touched, self.windows)

    def fold_into(self, state, touched: dict[tuple, list[tuple[int, tuple]]], known) -> None:  # noqa: ANN001
        """Folds each ``(end, start, *key) -> rows`` of ``touched`` into its accumulator
        in ``state`` (windows, or slices: ``window_slices``); ``known`` (a set, or None
        before the first firing) learns each (end, start) with state."""
        aggs, live = self.aggs, self.live
        fold, init = aggs.fold_pairs, aggs.init
        keys = list(touched)
        encoded = _encoded(keys, self.groups)  # once: read and written by these bytes
        if known is not None:
            known.update({skey[:2] for skey in keys})
        for kb, skey, raw in zip(encoded, keys, state.get_many_encoded(encoded), strict=True):
            acc = init() if raw is None else raw if live else aggs.load(raw)
            fold(acc, touched[skey])
            state.put_encoded(kb, acc if live else aggs.dump(acc))

    def on_watermark(self, watermark: int) -> Batch:
        if watermark <= self.watermark or self.spec.proctime:
            return Batch()
        after, self.watermark = self.watermark, watermark
        self.progress.put(("watermark",), watermark)
        if self.sliced is not None:
            return self.sliced.fire(after, watermark)
        return self._fire(watermark)

    def on_processing_time(self, now_ms: int) -> Batch:
        if not self.spec.proctime or now_ms < self.next_due:
            return Batch()
        out = self._fire(now_ms, now_ms)
        self.next_due = MAX_WATERMARK  # no open window until a batch (or the state) has one
        for skey, _ in self.state.scan_prefix(()):
            self.next_due = self.zone.utc(skey[0]) - 1
            break
        return out

    def _fire(self, limit: int, fired_at: int | None = None) -> Batch:
        """Emits and forgets every window whose end - 1 is at or before ``limit``, in
        key order (windows by end, then start; each window's groups by their bytes)."""
        out = Batch()
        if self.windows is None:
            self.windows = key_prefixes(self.state, 2)  # type: ignore[assignment]
        due = []
        for window in sorted(self.windows):
            if self.zone.utc(window[0]) - 1 > limit:
                break
            due.append(window)
        if not due:
            return out
        values, live, load, groups = self.aggs.values, self.live, self.aggs.load, self.groups
        heads = [encode_key(window) for window in due]
        state = self.state
        for window, head, entries in zip(due, heads, state.scan_many(heads), strict=True):
            self.windows.discard(window)
            columns = self.bounds_of(window[1], window[0], fired_at)
            cut = len(head)
            for kb, raw in entries:
                state.delete_encoded(kb)
                acc = raw if live else load(raw)
                if acc[0] <= 0:
                    continue  # every row of the window was retracted
                tail = kb[cut:]
                key = groups.get(tail)
                if key is None:
                    key = decode_key(tail)
                out.append(INSERT, key + values(acc) + columns)
        return out

    def bounds_of(self, start: int, end: int, fired_at: int | None) -> tuple:
        """window_start, window_end and window_time of a firing window."""
        if fired_at is not None:
            window_time = from_epoch_ms(fired_at, aware=True)
        elif self.ltz:
            window_time = from_epoch_ms(self.zone.utc(end) - 1, aware=True)
        else:
            window_time = from_epoch_ms(end - 1, aware=False)
        return (from_epoch_ms(start, aware=False), from_epoch_ms(end, aware=False), window_time)
