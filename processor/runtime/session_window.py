"""SESSION window aggregation on event time, as Flink's merging session windows.

Per group key, each row opens the window ``[ts, ts + gap)``; windows of one key that overlap
merge into one session (``_place``). A session fires once the watermark reaches
``session_end - 1`` and emits ``+I[keys, aggs, window_start, window_end, window_time]``
with ``window_time = window_end - 1 ms``, then is forgotten. A row whose merged session
has already ended (``end - 1 <= watermark``) is late: dropped and counted in ``late_rows``;
a row behind the watermark that falls into a session still open joins it, as in Flink.

State: ``key -> [[start, end, rows], ...]`` with each open session's rows, folded into an
accumulator when it fires (a merge then needs no accumulator merging, which MIN, MAX and
LISTAGG with retraction do not have), and timers ``(end, *key, start) -> 1``: a session's
is put when it is made, at its end then; one reached while the session has grown since is
put again at the present end (so a batch that grows a session writes no timer), and firing
orders the keys as exact timers would be scanned. When the aggregates merge exactly over
an insert-only input (``session_accs``: COUNT, exact SUM and AVG) a session holds its
accumulator instead of its rows: ``[start, end, acc]``.
"""

from __future__ import annotations

from deltaflow.formats.changelog import INSERT, Batch
from deltaflow.processor.plan import WindowAggregate
from deltaflow.processor.runtime.aggs import Aggregates
from deltaflow.processor.runtime.base import Operator, epoch_ms, from_epoch_ms, key_getter
from deltaflow.processor.runtime.session_accs import session_accs
from deltaflow.processor.runtime.window import WindowAggOperator
from deltaflow.state.keys import encode_key

KEEP_KEYS = 50_000  # committed session lists kept decoded


def window_operator(node: WindowAggregate, backend, ctx) -> Operator:
    """The operator of a window aggregate: session windows merge, the others slice."""
    if node.window.kind == "SESSION":
        return SessionWindowOperator(node, backend, ctx)
    return WindowAggOperator(node, backend, ctx)


class SessionWindowOperator(Operator):
    def __init__(self, node, backend, ctx, keys: tuple[int, ...] | None = None, aggs=True) -> None:  # noqa: ANN001
        """``keys``: the session key columns (default: the aggregate's group keys)."""
        self.gap = node.window.size_ms
        self.time_col = node.window.time_column
        self.key_of = key_getter(node.group_keys if keys is None else keys)
        self.aggs = Aggregates(node.aggs, node.inputs[0].types) if aggs else None
        # a session's accumulator instead of its rows, when the aggregates merge exactly
        self.accs = session_accs(self.aggs, node.inputs[0].changelog_mode <= {INSERT})
        name = f"{node.node_id}:SessionWindow"
        # kept decoded across commits: a long session is not read and decoded again per batch
        self.sessions = backend.table(f"{name}:sessions", keep=KEEP_KEYS)
        self.fire = backend.table(f"{name}:fire")
        self.progress = backend.table(f"{name}:watermark")
        stored = self.progress.get(("watermark",))
        self.watermark = -(1 << 63) if stored is None else int(stored)  # type: ignore[call-overload]
        self.late_rows: int = 0

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        by_key: dict[tuple, list[tuple[int, int, tuple]]] = {}
        for kind, row in zip(batch.kinds, batch.rows, strict=True):
            value = row[self.time_col]
            if value is None:
                continue  # Flink drops rows whose time attribute is NULL
            by_key.setdefault(self.key_of(row), []).append((epoch_ms(value), kind, row))
        keys = list(by_key)
        gap, place, watermark = self.gap, self._place, self.watermark
        add = None if self.accs is None else self.accs.add
        for key, stored in zip(keys, self.sessions.get_many(keys), strict=True):
            sessions = [list(s) for s in stored or ()]
            before = {id(s) for s in sessions}
            for ts, kind, row in by_key[key]:
                if len(sessions) == 1:  # the common case, inline: the key's one session
                    s, end = sessions[0], ts + gap
                    if s[0] < end and ts < s[1]:  # overlaps: merged unless then late
                        end = s[1] if s[1] > end else end
                        if end - 1 > watermark:
                            s[0], s[1] = ts if ts < s[0] else s[0], end
                            if add is None:
                                s[2].append([kind, row])
                            else:
                                add(s[2], row)
                            continue
                place(sessions, ts, kind, row)
            self._store(key, sessions, before)
        return Batch()

    def _place(self, sessions: list[list], ts: int, kind: int, row: tuple) -> None:
        """Merges ``[ts, ts + gap)`` with the sessions it overlaps (or drops it as late)."""
        start, end = ts, ts + self.gap
        hits = []
        for s in sessions:
            if s[0] < end and start < s[1]:
                hits.append(s)
                start, end = min(start, s[0]), max(end, s[1])
        if end - 1 <= self.watermark:
            self.late_rows += 1
            return
        accs = self.accs
        if not hits:
            sessions.append([start, end, [[kind, row]] if accs is None else accs.new(row)])
            return
        if accs is not None:  # as below: the hit of most rows (acc[0]) takes the others
            into = hits[0] if len(hits) == 1 else max(hits, key=lambda s: s[2][0])
            for s in hits:
                if s is not into:
                    accs.merge(into[2], s[2])
                    sessions.remove(s)
            into[0], into[1] = start, end
            accs.add(into[2], row)
            return
        # the largest hit keeps its list and takes the others' rows: a hot key's long session
        # grows by one row, not by a copy of all its rows
        into = hits[0] if len(hits) == 1 else max(hits, key=lambda s: len(s[2]))
        for s in hits:
            if s is not into:
                into[2].extend(s[2])
                sessions.remove(s)
        into[0], into[1] = start, end
        into[2].append([kind, row])

    def _store(self, key: tuple, sessions: list[list], before: set) -> None:
        for s in sessions:  # a session made in this batch: its timer (``on_watermark``)
            if id(s) not in before:
                self.fire.put((s[1], *key, s[0]), 1)
        if sessions:
            self.sessions.put(key, sessions)
        else:
            self.sessions.delete(key)

    def on_watermark(self, watermark: int) -> Batch:
        if watermark <= self.watermark:
            return Batch()
        self.watermark = watermark
        self.progress.put(("watermark",), watermark)
        fired: list[tuple] = []
        keys: dict[tuple, None] = {}  # the reached timers' keys, in the index order
        for fkey, _ in self.fire.scan_prefix(()):
            if fkey[0] - 1 > watermark:
                break
            fired.append(fkey)
            keys[tuple(fkey[1:-1])] = None
        for fkey in fired:
            self.fire.delete(fkey)
        due: list[tuple[bytes, tuple, list]] = []  # (first due timer's bytes, key, sessions)
        for key, stored in zip(list(keys), self.sessions.get_many(list(keys)), strict=True):
            kept, ending = [], []
            for session in stored or ():
                if session[1] - 1 <= watermark:
                    ending.append(session)
                else:  # extended since its timer was set: one at its present end
                    kept.append(session)
                    self.fire.put((session[1], *key, session[0]), 1)
            if ending:
                first = min(encode_key((s[1], *key, s[0])) for s in ending)
                due.append((first, key, ending))
            if kept:
                self.sessions.put(key, kept)
            else:
                self.sessions.delete(key)
        out = Batch()
        for _, key, ending in sorted(due, key=lambda d: d[0]):  # the order of exact timers
            for session in ending:
                self._emit(key, session, out)
        return out

    def _emit(self, key: tuple, session: list, out: Batch) -> None:
        start, end, held = session
        aggs = self.aggs
        assert aggs is not None  # a session window with aggregates
        if self.accs is None:
            acc = aggs.init()
            aggs.fold_pairs(acc, held)
        else:
            acc = held
        if acc[0] <= 0:
            return  # every row of the session was retracted
        bounds = (
            from_epoch_ms(start, aware=False),
            from_epoch_ms(end, aware=False),
            from_epoch_ms(end - 1, aware=False),
        )
        out.append(INSERT, key + tuple(aggs.values(acc)) + bounds)
