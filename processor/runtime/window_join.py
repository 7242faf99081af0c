"""WindowJoin: the rows of each window of two windowed inputs, joined when the watermark
reaches the window's end - 1 (Flink's window join: its inputs' windows fire at the same
watermark), then forgotten. Pairs have equal join keys (NULL matches nothing) and pass the
condition; an outer side's rows without a pair come out padded with NULLs. A semi (anti)
join (IN / EXISTS, NOT IN / NOT EXISTS) emits each left row of the window that has (has
no) pair, once, without right columns; NOT IN's NULL rules are in its condition. A row of
a window that has already been joined is late: dropped and counted in ``late_rows``.

State: ``(window_end, window_start, side, seq) -> row``. The operator knows which
windows hold rows (read from the state at its first watermark, then kept as rows come),
so a watermark reads the due windows' rows alone, in window order.
"""

from __future__ import annotations

from deltaflow.formats.changelog import INSERT, Batch
from deltaflow.processor.exprs.compile import compile_predicate
from deltaflow.processor.plan import WindowJoin
from deltaflow.processor.runtime.base import (
    MIN_WATERMARK,
    Operator,
    epoch_ms,
    key_getter,
    key_prefixes,
)
from deltaflow.state.keys import encode_key


class WindowJoinOperator(Operator):
    def __init__(self, node: WindowJoin, backend, ctx) -> None:
        self.bounds = (node.left_bounds, node.right_bounds)
        self.key_of = (key_getter(node.left_keys), key_getter(node.right_keys))
        self.widths = (len(node.inputs[0].fields), len(node.inputs[1].fields))
        self.semi = {"SEMI": True, "ANTI": False}.get(node.join_type)  # None: a pairing join
        full = node.join_type == "FULL"
        self.outer = (full or node.join_type == "LEFT", full or node.join_type == "RIGHT")
        self.condition = None
        if node.condition is not None:
            self.condition = compile_predicate(node.condition, ctx.eval_context())
        self.rows = backend.table(f"{node.node_id}:WindowJoin:rows")
        self.progress = backend.table(f"{node.node_id}:WindowJoin:progress")
        stored = self.progress.get(("watermark",))
        self.watermark = MIN_WATERMARK if stored is None else int(stored)  # type: ignore[call-overload]
        self.seq = int(self.progress.get(("seq",)) or 0)  # type: ignore[call-overload]
        self.late_rows: int = 0
        # the windows (end, start) holding rows: read from the state at the first
        # watermark, then kept, so a watermark reads the due windows' rows alone
        self.windows: set[tuple[int, int]] | None = None

    def process(self, batch: Batch, port: int = 0) -> Batch:
        start_col, end_col = self.bounds[port]
        heads: dict[tuple, bytes | None] = {}  # per window's bounds: its key bytes, None if late
        items, seq, late = [], self.seq, 0
        for row in batch.rows:  # append-only input
            bounds = row[end_col], row[start_col]
            head = heads.get(bounds, b"")
            if head == b"":
                head = heads[bounds] = self._head(bounds, port)
            if head is None:
                late += 1
                continue
            items.append((head + encode_key((seq,)), row))
            seq += 1
        self.late_rows += late
        self.rows.put_many_encoded(items)
        self.seq = seq
        self.progress.put(("seq",), seq)
        return Batch()

    def _head(self, bounds: tuple, port: int) -> bytes | None:
        """The bytes of ``(window_end, window_start, port)``, the prefix of its rows' keys
        (a key's bytes are its values' one after the other); None when the window has
        already been joined."""
        end = epoch_ms(bounds[0])
        if end - 1 <= self.watermark:
            return None
        start = epoch_ms(bounds[1])
        if self.windows is not None:
            self.windows.add((end, start))
        return encode_key((end, start, port))

    def on_watermark(self, watermark: int) -> Batch:
        if watermark <= self.watermark:
            return Batch()
        self.watermark = watermark
        self.progress.put(("watermark",), watermark)
        if self.windows is None:
            self.windows = {p[:2] for p in key_prefixes(self.rows, 3)}
        due = []
        for window in sorted(self.windows):
            if window[0] - 1 > watermark:
                break
            due.append(window)
        out = Batch()
        if not due:
            return out
        self.windows.difference_update(due)
        heads = [encode_key((*window, port)) for window in due for port in (0, 1)]
        found = self.rows.scan_many(heads)  # the left, then the right rows of each window
        join = self._join if self.semi is None else self._semi_join
        for i in range(0, len(heads), 2):
            lefts, rights = found[i], found[i + 1]
            for kb, _ in lefts:
                self.rows.delete_encoded(kb)
            for kb, _ in rights:
                self.rows.delete_encoded(kb)
            join([row for _, row in lefts], [row for _, row in rights], out)
        return out

    def _semi_join(self, lefts: list, rights: list, out: Batch) -> None:
        """The left rows of one window with (semi) / without (anti) a matching right row."""
        by_key: dict[tuple, list[tuple]] = {}
        for row in rights:
            by_key.setdefault(self.key_of[1](row), []).append(row)
        cond, keep = self.condition, self.semi
        for row in lefts:
            key = self.key_of[0](row)
            candidates = by_key.get(key, ()) if None not in key else ()
            if cond is None:
                matched = bool(candidates)
            else:
                matched = any(cond(row + r) for r in candidates)
            if matched == keep:
                out.append(INSERT, row)

    def _join(self, lefts: list, rights: list, out: Batch) -> None:
        by_key: dict[tuple, list[int]] = {}
        for i, row in enumerate(rights):
            by_key.setdefault(self.key_of[1](row), []).append(i)
        matched_right = [False] * len(rights)
        cond = self.condition
        for row in lefts:
            key = self.key_of[0](row)
            matched = False
            for i in by_key.get(key, ()) if None not in key else ():
                pair = row + rights[i]
                if cond is None or cond(pair):
                    out.append(INSERT, pair)
                    matched = matched_right[i] = True
            if not matched and self.outer[0]:
                out.append(INSERT, row + (None,) * self.widths[1])
        if self.outer[1]:
            for row, hit in zip(rights, matched_right, strict=True):
                if not hit:
                    out.append(INSERT, (None,) * self.widths[0] + row)
