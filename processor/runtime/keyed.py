"""Keyed last-row operators: ChangelogNormalize, Deduplicate, SinkUpsertMaterializer.

``ChangelogNormalize`` and keep-last ``Deduplicate`` follow Flink's
``processLastRowAndGenerateUpdateBefore``: per key the last row is kept; an
addition emits ``+I`` (no previous row) or ``-U(previous)``/``+U(row)`` (``-U``
only when the node's changelog mode has UB), an addition identical to the
previous row emits nothing (state TTL off; Flink's row equaliser also compares
the row kind, and the stored row is an ``+I``, so only a repeated ``+I`` is
suppressed, not a repeated ``+U``), a retraction emits ``-D`` of the
stored row (which carries every column even when the input is an upsert delete
with only the key) and forgets it.

``SinkUpsertMaterializer`` keeps, per sink key, the list of rows the changelog
added: an addition is appended (or replaces the row with the same input upsert
key, when the input has one) and is emitted as ``+I`` (list was empty) or ``+U``; a retraction removes the first equal row and emits
``-D`` when the list becomes empty, ``+U`` of the new last row when the removed
row was the last, and nothing otherwise.

With mini-batch, ChangelogNormalize and keep-last Deduplicate on processing time
keep only each key's last change of a batch, as Flink's bundle functions do.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

from deltaflow.formats.changelog import ADDS, DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor.plan import ChangelogNormalize, Deduplicate, SinkUpsertMaterializer
from deltaflow.processor.runtime.base import (
    Operator,
    StateKeys,
    cache_misses,
    epoch_ms,
    key_getter,
    row_shape,
    state_key,
)
from deltaflow.processor.runtime.ttl import TtlBackend
from deltaflow.state.values import TypedValues

# Sink keys whose decoded row lists the SinkUpsertMaterializer keeps between batches.
CACHED_KEYS = 100_000


def input_upsert_key(node) -> tuple[int, ...]:
    """The shortest upsert key of the node's input (Flink matches rows by it), or ()."""
    keys = node.inputs[0].upsert_keys if node.inputs else ()
    return min(keys, key=len) if keys else ()


class _Loaded:
    """The state values of a batch's distinct keys, each key encoded once."""

    def __init__(self, table, keys: list[tuple], state_keys: StateKeys | None = None) -> None:
        self.table = table
        if state_keys is None:
            self.encoded = {k: state_key(k) for k in dict.fromkeys(keys)}
        else:
            self.encoded = state_keys.of(keys)
        stored = table.get_many_encoded(list(self.encoded.values()))
        self.original = dict(zip(self.encoded, stored, strict=True))

    def write(self, values: dict[tuple, object]) -> None:
        """Writes every key (None deletes a key that had a value)."""
        table, encoded, original = self.table, self.encoded, self.original
        for key, value in values.items():
            if value is not None:
                table.put_encoded(encoded[key], value)
            elif original[key] is not None:
                table.delete_encoded(encoded[key])

    def store(self, values: dict[tuple, object]) -> None:
        """Writes the keys whose value is not the object that was read (None deletes)."""
        for key, value in values.items():
            if value is self.original[key]:
                continue
            if value is None:
                self.table.delete_encoded(self.encoded[key])
            else:
                self.table.put_encoded(self.encoded[key], value)


def _last_positions(keys: list[tuple]) -> list[int]:
    """Positions of each key's last change in a batch, in batch order."""
    return sorted({key: i for i, key in enumerate(keys)}.values())


def _last_row(out: Batch, kind: int, row: tuple, prev: tuple | None, ub: bool) -> tuple | None:
    """One change folded into a key's last row; returns the new last row."""
    if ADDS[kind]:
        if prev is None:
            out.append(INSERT, row)
        elif kind != INSERT or prev != row:
            if ub:
                out.append(UPDATE_BEFORE, prev)
            out.append(UPDATE_AFTER, row)
        return row
    if prev is not None:
        out.append(DELETE, prev)
    return None


class ChangelogNormalizeOperator(Operator):
    def __init__(self, node: ChangelogNormalize, backend, ctx) -> None:
        self.key_of = key_getter(node.key)
        self.state = backend.table(f"{node.node_id}:ChangelogNormalize:last")
        self.ub = 1 in node.changelog_mode
        self.mini_batch = ctx.mini_batch

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        kinds, rows = batch.kinds, batch.rows
        keys = [self.key_of(r) for r in rows]
        loaded = _Loaded(self.state, keys)
        last = dict(loaded.original)
        out = Batch()
        positions = _last_positions(keys) if self.mini_batch else range(len(keys))
        for i in positions:
            key = keys[i]
            last[key] = _last_row(out, kinds[i], rows[i], last[key], self.ub)  # type: ignore[arg-type]
        loaded.store(last)
        return out


class DeduplicateOperator(Operator):
    """Keep-first or keep-last row per key, on processing time (arrival) or a rowtime column."""

    def __init__(self, node: Deduplicate, backend, ctx) -> None:
        self.key_of = key_getter(node.keys)
        self.state = backend.table(f"{node.node_id}:Deduplicate:row")
        self.ub = 1 in node.changelog_mode
        self.keep_last = node.keep_last_row
        self.rowtime = node.order_column if node.is_rowtime else None
        # Flink's mini-batch keep-last on processing time only sees each key's last row
        self.last_per_key = ctx.mini_batch and self.keep_last and self.rowtime is None

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        keys = [self.key_of(r) for r in batch.rows]
        loaded = _Loaded(self.state, keys)
        last = dict(loaded.original)
        out = Batch()
        positions = _last_positions(keys) if self.last_per_key else range(len(keys))
        for i in positions:
            kind, row, key = batch.kinds[i], batch.rows[i], keys[i]
            prev = last[key]
            if self.rowtime is None and self.keep_last:
                last[key] = _last_row(out, kind, row, prev, self.ub)  # type: ignore[arg-type]
            elif ADDS[kind] and self._replaces(prev, row):  # type: ignore[arg-type]
                if prev is None:
                    out.append(INSERT, row)
                else:
                    if self.ub:
                        out.append(UPDATE_BEFORE, prev)  # type: ignore[arg-type]
                    out.append(UPDATE_AFTER, row)
                last[key] = row
        loaded.store(last)
        return out

    def _replaces(self, prev: tuple | None, row: tuple) -> bool:
        if prev is None:
            return True
        if self.rowtime is None:
            return False  # keep-first on arrival order
        now, before = epoch_ms(row[self.rowtime]), epoch_ms(prev[self.rowtime])
        return now >= before if self.keep_last else now < before


class UpsertMaterializer:
    """Flink's SinkUpsertMaterializer; rows are matched by the input's upsert key when it
    has one (an addition then replaces the matching row), else by the whole row.

    The row lists of recently used sink keys stay decoded in ``cache`` (at most
    ``CACHED_KEYS``, then it starts over), so a key changed in batch after batch is read
    from state once: the state table stays the truth, only this operator writes it. With
    state TTL nothing is cached (the table decides what has expired).
    """

    def __init__(
        self,
        node_id: int,
        key: tuple[int, ...],
        backend,
        upsert_key: tuple[int, ...] = (),
        types: list | None = None,
    ) -> None:
        self.keys_of = _keys_getter(key)
        self.match_of = key_getter(upsert_key) if upsert_key else None
        shape = None if types is None else row_shape(types)
        values = None if shape is None else TypedValues(list[shape])  # type: ignore[valid-type]
        self.state = backend.table(f"{node_id}:SinkUpsertMaterializer:rows", values)
        self.state_keys = StateKeys()
        self.cache: dict[tuple, list[tuple]] = {}
        self.cache_limit = 0 if isinstance(backend, TtlBackend) else CACHED_KEYS

    def _find(self, values: list[tuple], row: tuple) -> int:
        match = self.match_of
        if match is None:
            try:
                return values.index(row)
            except ValueError:
                return -1
        target = match(row)
        for i, value in enumerate(values):
            if match(value) == target:
                return i
        return -1

    def _load(self, keys: list[tuple]) -> tuple[dict[tuple, list[tuple]], dict[tuple, bytes]]:
        """The row list of each distinct key (changed in place by the batch: a cached
        list, a fresh decode or the buffered value itself) and each key's state key."""
        encoded = self.state_keys.of(keys)
        cache = self.cache
        missing = cache_misses(cache, encoded, self.cache_limit)
        if missing:
            stored = self.state.get_many_encoded([encoded[key] for key in missing])
            for key, value in zip(missing, stored, strict=True):
                cache[key] = [] if value is None else value  # type: ignore[assignment]
        lists = cache if self.cache_limit else dict(cache)
        if not self.cache_limit:
            cache.clear()
        return lists, encoded

    def _store(self, lists: dict[tuple, list[tuple]], encoded: dict[tuple, bytes], had) -> None:
        """Writes every key of the batch: its list, or a delete when it became empty (the
        lists are put in one call; the table encodes each once, at the commit)."""
        self.state.put_many_encoded([(kb, lists[key]) for key, kb in encoded.items() if lists[key]])
        for key in had:
            if not lists[key]:
                self.state.delete_encoded(encoded[key])

    def process(self, batch: Batch) -> Batch:
        if not batch:
            return Batch()
        keys = self.keys_of(batch.rows)
        lists, encoded = self._load(keys)
        had = {key for key in encoded if lists[key]}
        out = Batch()
        out_kinds, out_rows = out.kinds, out.rows
        match = self.match_of
        for kind, row, key in zip(batch.kinds, batch.rows, keys, strict=True):
            values = lists[key]
            if ADDS[kind]:
                out_kinds.append(UPDATE_AFTER if values else INSERT)
                out_rows.append(row)
                if match is None or not values:
                    values.append(row)
                    continue
                index = self._find(values, row)
                if index < 0:
                    values.append(row)
                else:
                    values[index] = row
                continue
            if len(values) == 1 and (
                values[0] == row if match is None else match(values[0]) == match(row)
            ):
                index = 0  # the common case: a key's one row retracted
            else:
                index = self._find(values, row)
                if index < 0:
                    continue  # a retraction of a row never added: Flink logs and ignores it
            del values[index]
            if not values:
                out_kinds.append(DELETE)
                out_rows.append(row)
            elif index == len(values):
                out_kinds.append(UPDATE_AFTER)
                out_rows.append(values[-1])
        self._store(lists, encoded, had)
        return out


def _keys_getter(columns: tuple[int, ...]) -> Callable[[list[tuple]], list[tuple]]:
    """``keys(rows)``: each row's key tuple of ``columns``, built in C."""
    if len(columns) == 1:
        one = itemgetter(columns[0])
        return lambda rows: list(zip(map(one, rows)))
    get = key_getter(columns)
    return lambda rows: list(map(get, rows))


class SinkUpsertMaterializerOperator(Operator):
    def __init__(self, node: SinkUpsertMaterializer, backend, ctx) -> None:
        self.inner = UpsertMaterializer(
            node.node_id, node.key, backend, input_upsert_key(node), node.inputs[0].types
        )

    def process(self, batch: Batch, port: int = 0) -> Batch:
        return self.inner.process(batch)
