"""Regular streaming join: Flink's StreamingJoinOperator, on batches.

Each side keeps, per join key, its rows with a count of copies and (for an outer
side) the number of rows of the other side each one matches. For every input
record, in order, Flink's rules:

- an addition on an outer side with no match emits ``+I[row, nulls]``; with matches
  it emits ``+I`` joined rows;
- an addition on the inner side first retracts ``-D[nulls, other]`` for every outer
  row of the other side that had no match yet; joined rows then keep the input's
  kind (``+I``/``+U``) when the other side is inner, else they are ``+I``;
- a retraction emits the joined rows with the input's kind (``-U``/``-D``), or
  ``-D`` when the input side is outer (``-D[row, nulls]`` when nothing matched),
  and re-emits ``+I[nulls, other]`` for outer rows of the other side that lose their
  last match.

The non-equi ``condition`` filters the pairs; a NULL in a join key matches nothing.
State is read once per distinct key of the batch and written once per touched key.

A side whose input has a unique key (Flink's ``HasUniqueKey`` and
``JoinKeyContainsUniqueKey`` input specs) holds its rows by that key, as Flink's
unique-key state views do: an addition puts the row under its key (replacing any row
there, one copy), a retraction removes the key. A side without one holds a multiset
of whole rows (Flink's ``NoUniqueKey`` view).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import compress, repeat
from operator import itemgetter
from types import MappingProxyType
from typing import Any

from deltaflow.formats.changelog import ADDS, DELETE, INSERT, Batch
from deltaflow.formats.generated import define
from deltaflow.processor.exprs.compile import compile_predicate
from deltaflow.processor.plan import Calc, Join
from deltaflow.processor.runtime.base import (
    Operator,
    StateKeys,
    cache_misses,
    key_getter,
    row_freezer,
    row_shape,
)
from deltaflow.processor.runtime.group_agg import fusable_projection
from deltaflow.processor.runtime.join_cross import cross_comparisons, hits, prepare
from deltaflow.state.keys import EMPTY, decode_key, encode_key
from deltaflow.state.values import TypedValues

_OUTER = {
    "INNER": (False, False),
    "LEFT": (True, False),
    "RIGHT": (False, True),
    "FULL": (True, True),
}


_INSERT_ONLY = frozenset({INSERT})

# Join keys whose decoded entries a side keeps between batches; past it the cache
# starts over (the state table stays the truth: only this operator writes it).
CACHED_KEYS = 200_000


class _Side:
    """One input's rows by join key: key -> {entry key: [row, copies, matches]} (the
    order they are stored in, so the commit writes the entry lists as they are).

    The entry key is the row's unique key (``unique``, see the module docstring) or
    else the row itself; rows with ARRAY/MAP columns are entered under a hashable copy
    (``freeze``). The entries of recently used keys stay decoded in ``cache``, so a key
    changed in batch after batch is read and rebuilt from state once. While the cache
    holds every key of the side (``complete``: its state was empty or small when the
    operator started, and it has not started over since), a key not in it has no rows,
    and nothing is read: a small side probed by every row of a large one costs a lookup.

    A side that only ever gains rows (``log`` set: an insert-only input that is not the
    outer side and has no unique key) does not read its own rows when rows arrive: it
    appends them to its log, a table of chunks ``(join key..., seq) -> [row, ...]``
    holding each key's rows added in one epoch, ``seq`` counting the epochs that
    appended (kept in the ``next`` table). Its rows are read only to join the other
    side's changes: the chunks of a key, in order, make its entries (identical rows
    counted as copies, first addition first, as the other layout keeps them).
    """

    def __init__(
        self, table, types: list, outer: bool, unique_keys: tuple = (), log=None, next_seq=None
    ) -> None:
        self.table = table
        self.nulls = (None,) * len(types)
        self.outer = outer
        self.freeze = row_freezer(types)
        self.unique = _unique_getter(types, unique_keys)
        self.loaded: dict[tuple, dict[tuple, list]] = {}
        self.cache: dict[tuple, dict[tuple, list]] = _Cache()
        self.complete: bool | None = None  # decided at the first load (``start``)
        self.live = False  # the table takes the entries dicts themselves (see _table)
        self.cache_limit = CACHED_KEYS  # 0 with state TTL: expiry is decided by the table
        self.dirty: set[tuple] = set()
        self.log = log
        self.next_seq = next_seq
        self.chunks: dict[tuple, list] = {}  # this epoch's chunk of each key appended to
        self.generation = -1  # the log's generation those chunks are buffered in
        self.suffix: bytes | None = None  # this epoch's seq, encoded

    def entry_key(self, row: tuple) -> object:
        if self.unique is not None:
            return self.unique(row)
        return row if self.freeze is None else self.freeze(row)

    def start(self) -> None:
        """Whether the cache can hold every key: the state is empty, or small enough to
        be read whole now."""
        self.complete = False
        if self.cache_limit <= 0:
            return
        table = self.table if self.log is None else self.log
        stored = len(table)
        if stored > self.cache_limit // 4:
            return
        if stored:
            (items,) = table.scan_many([b""])
            if self.log is None:
                self._decoded(dict(items))
            else:
                for kb, rows in items:
                    key = decode_key(kb)[:-1]
                    _count(self.cache.setdefault(key, {}), rows)
        self.complete = True

    def load(self, encoded: dict[tuple, Any], mine: bool) -> None:
        """Makes ``loaded`` hold the entries of the batch's join keys (``encoded``: key ->
        its state key); ``mine``: the batch is this side's own changes."""
        if self.complete is None:
            self.start()
        cache = self.cache
        if self.complete:
            if not mine:  # a key not in the cache has no rows (``_Cache``)
                self.loaded = cache
                return
            new = [key for key in encoded if key not in cache]
            if len(cache) + len(new) <= self.cache_limit:
                for key in new:
                    cache[key] = {}
                self.loaded = cache
                return
            self.complete = False
            cache.clear()
        loaded = self.loaded = {}
        if mine and self.log is not None:  # the rows arriving are appended, not entered
            for key in encoded:
                loaded[key] = cache[key] if key in cache else {}
            return
        missing = cache_misses(cache, encoded, self.cache_limit)
        if missing:
            if self.log is None:
                stored = self.table.get_many_encoded([encoded[key] for key in missing])
                self._decoded(dict(zip(missing, stored, strict=True)))
            else:
                self._read_log(missing, encoded)
        for key in encoded:
            loaded[key] = cache[key]

    def _decoded(self, stored: dict) -> None:
        """Enters the stored entries of keys (key -> stored value or None) in the cache."""
        cache = self.cache
        entry_key = self.unique or self.freeze
        for key, raw in stored.items():
            if type(key) is bytes:
                key = decode_key(key)
            if raw is None:
                cache[key] = {}
            elif type(raw) is dict:
                cache[key] = raw  # this side's live entries, buffered until the commit
            elif entry_key is None:
                cache[key] = {e[0]: list(e) for e in raw}
            else:
                cache[key] = {entry_key(e[0]): list(e) for e in raw}

    def _read_log(self, keys: list[tuple], encoded: dict[tuple, bytes]) -> None:
        """Enters the logged rows of ``keys`` in the cache: their committed chunks, then
        this epoch's."""
        order = sorted(keys, key=encoded.__getitem__)
        prefixes = [b"" if encoded[key] == EMPTY else encoded[key] for key in order]
        found = self.log.scan_many(prefixes, buffered=False)
        chunks = self.chunks if self.generation == self.log.generation else {}
        cache = self.cache
        for key, stored in zip(order, found, strict=True):
            entries: dict[tuple, list] = {}
            for _, rows in stored:
                _count(entries, rows)
            if key in chunks:
                _count(entries, chunks[key])
            cache[key] = entries

    def open_chunks(self) -> dict[tuple, list]:
        """This epoch's chunk of each key appended to (a commit since the last append
        starts new ones, under a new seq)."""
        if self.generation != self.log.generation:
            self.generation = self.log.generation
            self.chunks = {}
            self.suffix = None
        return self.chunks

    def new_chunk(self, key: tuple, kb: bytes | None) -> list:
        """The chunk of ``key`` (state key ``kb``, None: not encoded yet) this epoch."""
        if self.suffix is None:
            seq = self.next_seq.get(()) or 0
            self.next_seq.put((), seq + 1)
            self.suffix = encode_key((seq,))
        if kb is None:
            kb = encode_key(key)
        chunk: list = []
        self.chunks[key] = chunk
        self.log.put_encoded((b"" if kb == EMPTY else kb) + self.suffix, chunk)
        return chunk

    def append(self, rows: list, keys: list, encoded: dict[tuple, bytes]) -> None:
        """Adds the batch's rows to the log (a row with a NULL key joins nothing and is
        not kept)."""
        chunks = self.open_chunks()
        for row, key in zip(rows, keys, strict=True):
            chunk = chunks.get(key)
            if chunk is None:
                if None in key:
                    continue
                chunk = self.new_chunk(key, encoded[key])
            chunk.append(row)

    def store(self, encoded: dict[tuple, bytes]) -> None:
        for key in self.dirty:
            entries = self.loaded[key]
            if entries:
                self.table.put_encoded(encoded[key], entries if self.live else _copied(entries))
            else:
                self.table.delete_encoded(encoded[key])
        self.dirty.clear()
        self.loaded = {}


class _Cache(dict):
    """A side's cache: a key not in it reads as no rows (when the cache is complete)."""

    def __missing__(self, key: tuple) -> Mapping:
        return _NO_ROWS


_NO_ROWS: Mapping = MappingProxyType({})


def _count(entries: dict[tuple, list], rows: list) -> None:
    """Enters logged ``rows`` as entries ``[row, copies, 0]`` (a repeated row: a copy)."""
    for row in rows:
        entry = entries.get(row)
        if entry is None:
            entries[row] = [row, 1, 0]
        else:
            entry[1] += 1


def _unique_getter(types: list, unique_keys: tuple) -> Callable[[tuple], Any] | None:
    """The entry key of a side with a unique key: its shortest unique key's columns (one
    column: the value itself); None without one, or when a key column is not hashable."""
    if not unique_keys:
        return None
    columns = min(unique_keys, key=len)
    if not columns or row_freezer([types[i] for i in columns]) is not None:
        return None
    return itemgetter(*columns)


def _listed(entries: dict[tuple, list]) -> list[list]:
    """A side's entries of one key as stored, ``[[row, copies, matches], ...]``, at the
    commit: the entry lists themselves (msgpack writes a list as it writes a tuple)."""
    return list(entries.values())


def _copied(entries: dict[tuple, list]) -> list[tuple]:
    """The entries as stored, ``[(row, copies, matches), ...]``, copied when put (a table
    that does not take the live entries encodes later batches' changes otherwise)."""
    return list(map(tuple, entries.values()))


def _table(backend, name: str, types: list, live: bool):
    """A side's state table: ``[(row, copies, matches), ...]`` per join key, typed when
    the row's columns allow it (msgpack, far cheaper than pickling Decimals and datetimes).
    ``live``: the side buffers its entries dicts themselves, listed once at the commit."""
    shape = row_shape(types)
    if shape is None:
        return backend.table(name)
    snapshot = _listed if live else None
    return backend.table(name, TypedValues(list[tuple[shape, int, int]], snapshot))  # type: ignore[valid-type]


class JoinOperator(Operator):
    def __init__(self, node: Join, backend, ctx, fused: Calc | None = None) -> None:
        self.node = node
        left_outer, right_outer = _OUTER[node.join_type.upper()]
        prefix = f"{node.node_id}:Join"
        live = ctx.state_ttl_ms <= 0  # with TTL the table stamps each write: list it then
        inputs = node.inputs
        outer = (left_outer, right_outer)
        unique = (node.left_unique_keys, node.right_unique_keys)
        sides = []
        for name, child, is_outer, unique_keys in zip(
            ("left", "right"), inputs, outer, unique, strict=True
        ):
            types = child.types
            table = _table(backend, f"{prefix}:{name}", types, live)
            side = _Side(table, types, is_outer, unique_keys)
            side.live = live and row_shape(types) is not None
            if (
                side.live
                and child.changelog_mode == _INSERT_ONLY
                and not is_outer
                and side.unique is None
                and side.freeze is None
                and not len(table)  # a state written with entries per key keeps them
            ):
                shape = row_shape(types)
                side.log = backend.table(
                    f"{prefix}:{name}:log",
                    TypedValues(list[shape]),  # type: ignore[valid-type]
                )
                side.next_seq = backend.table(f"{prefix}:{name}:next")
            sides.append(side)
        self.sides = (sides[0], sides[1])
        self.key_of = (key_getter(node.left_keys), key_getter(node.right_keys))
        if ctx.state_ttl_ms > 0:
            for side in self.sides:
                side.cache_limit = 0
        self.state_keys = StateKeys()
        self.condition = None
        if node.condition is not None:
            self.condition = compile_predicate(node.condition, ctx.eval_context())
        # INNER without a condition: one fused loop per batch (``_inner``)
        self.fused = self.condition is None and not (left_outer or right_outer)
        # INNER with a condition (an ON TRUE join of a scalar subquery's one row, a
        # non-equi predicate): one loop per batch too (``_inner_condition``)
        self.inner_condition = self.condition is not None and not (left_outer or right_outer)
        # a condition of comparisons across the sides: evaluated in C (``join_cross``)
        self.cross = cross_comparisons(node.condition, len(inputs[0].types))
        # a Calc above that only selects columns (``fused``): joined rows are built with
        # just those columns (inline in the generated INNER loops, else projected after)
        self.project = None if fused is None else fusable_projection(fused)
        width = len(inputs[0].types)
        self.inner_unique = tuple(
            _compile_inner_unique(width, self.project, is_left, other.unique is not None)
            for is_left, other in ((False, self.sides[0]), (True, self.sides[1]))
        )

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        is_left = port == 0
        mine, other = (self.sides[0], self.sides[1]) if is_left else (self.sides[1], self.sides[0])
        keys = list(map(self.key_of[port], batch.rows))
        if mine.log is not None:
            if batch.kinds.count(INSERT) != len(batch.kinds):
                raise AssertionError(f"join {self.node.node_id}: an insert-only input retracted")
            if not other.outer:
                return self._logged(batch.rows, keys, mine, other, is_left)
        encoded = self.state_keys.of(keys)  # each key encoded once
        mine.load(encoded, True)
        other.load(encoded, False)
        out = Batch()
        if self.fused and mine.unique is not None:
            self.inner_unique[is_left](
                out.kinds, out.rows, batch.kinds, batch.rows, keys, mine, other.loaded
            )
        else:
            if self.fused:
                _inner(out, batch.kinds, batch.rows, keys, mine, other, is_left)
            elif self.inner_condition:
                _inner_condition(
                    out,
                    batch.kinds,
                    batch.rows,
                    keys,
                    (mine, other, is_left),
                    self.condition,
                    self.cross,
                )
            else:
                for kind, row, key in zip(batch.kinds, batch.rows, keys, strict=True):
                    self._one(out, kind, row, key, mine, other, is_left)
            if self.project is not None:
                out.rows = list(map(_projector(self.project), out.rows))
        if mine.log is not None:
            mine.dirty.clear()  # its rows are appended, not stored per key
            mine.append(batch.rows, keys, encoded)
        mine.store(encoded)
        other.store(encoded)
        return out

    def _logged(self, rows: list, keys: list, mine: _Side, other: _Side, is_left: bool) -> Batch:
        """A batch of additions to a logged side whose other side is inner: each row meets
        the other side's rows of its key (the condition holding), is appended to its
        chunk, and enters the cached entries of its key if they are held. State keys are
        encoded only to read the other side (unless its cache is complete) and for the
        epoch's new chunks."""
        if other.complete is None:
            other.start()
        encoded: dict[tuple, Any]
        if other.complete:
            encoded = dict.fromkeys(keys)  # encoded when a chunk is opened
        else:
            encoded = self.state_keys.of(keys)
        other.load(encoded, False)
        if mine.complete is None:
            mine.start()
        if mine.complete:
            mine.load(encoded, True)  # enters the new keys (or starts over)
        out = Batch()
        out_kinds, out_rows = out.kinds, out.rows
        other_loaded, cache, cond = other.loaded, mine.cache, self.condition
        chunks, new_chunk = mine.open_chunks(), mine.new_chunk
        for row, key in zip(rows, keys, strict=True):
            if None in key:
                continue
            found = other_loaded[key]
            if not found:
                pass
            elif cond is None:
                _emit(out_kinds, out_rows, INSERT, row, found, is_left)
            else:
                entries = found.values()
                if is_left:
                    pairs = [row + e[0] for e in entries]
                else:
                    pairs = [e[0] + row for e in entries]
                for one, e in compress(zip(pairs, entries, strict=True), map(cond, pairs)):
                    out_kinds.extend(repeat(INSERT, e[1]))
                    out_rows.extend(repeat(one, e[1]))
            held = cache.get(key)
            if held is not None:
                entry = held.get(row)
                if entry is None:
                    held[row] = [row, 1, 0]
                else:
                    entry[1] += 1
            chunk = chunks.get(key)
            if chunk is None:
                chunk = new_chunk(key, encoded[key])
            chunk.append(row)
        if self.project is not None:
            out.rows = list(map(_projector(self.project), out.rows))
        mine.loaded = {}
        other.loaded = {}
        return out

    def _matches(self, row: tuple, key: tuple, other: _Side, is_left: bool) -> list:
        """Entries ``[other_row, copies, matches]`` of the other side that join ``row``."""
        if None in key:
            return []
        entries = other.loaded[key].values()
        cond = self.condition
        if cond is None:
            return list(entries)
        if is_left:
            return [e for e in entries if cond(row + e[0])]
        return [e for e in entries if cond(e[0] + row)]

    def _one(
        self,
        out: Batch,
        kind: int,
        row: tuple,
        key: tuple,
        mine: _Side,
        other: _Side,
        is_left: bool,
    ) -> None:
        matches = self._matches(row, key, other, is_left)
        mine.dirty.add(key)
        if matches and other.outer:
            other.dirty.add(key)
        if ADDS[kind]:
            self._add(out, kind, row, mine.loaded[key], matches, mine, other, is_left)
        else:
            self._retract(out, kind, row, mine.loaded[key], matches, mine, other, is_left)

    @staticmethod
    def _pad(row: tuple, width_nulls: tuple, row_is_left: bool) -> tuple:
        return row + width_nulls if row_is_left else width_nulls + row

    def _add(
        self, out, kind, row, entries, matches, mine: _Side, other: _Side, is_left: bool
    ) -> None:
        rk = mine.entry_key(row)
        entry = entries.get(rk)
        n_matched = sum(e[1] for e in matches)
        if entry is None:
            entries[rk] = [row, 1, n_matched]
        elif mine.unique is not None:  # the row of this unique key is replaced
            entry[0], entry[2] = row, n_matched
        else:
            entry[1] += 1
            entry[2] = n_matched
        if mine.outer and not matches:
            out.append(INSERT, self._pad(row, other.nulls, is_left))
            return
        if other.outer:
            for e in matches:
                if e[2] == 0:  # the other row's null-padded result is retracted once per copy
                    padded = self._pad(e[0], mine.nulls, not is_left)
                    for _ in range(e[1]):
                        out.append(DELETE, padded)
                e[2] += 1
        self._joined(out, INSERT if (mine.outer or other.outer) else kind, row, matches, is_left)

    def _retract(
        self, out, kind, row, entries, matches, mine: _Side, other: _Side, is_left: bool
    ) -> None:
        rk = mine.entry_key(row)
        entry = entries.get(rk)
        if entry is not None:
            if entry[1] <= 1:
                del entries[rk]
            else:
                entry[1] -= 1
        if not matches:
            if mine.outer:
                out.append(DELETE, self._pad(row, other.nulls, is_left))
            return
        self._joined(out, DELETE if mine.outer else kind, row, matches, is_left)
        if other.outer:
            for e in matches:
                if e[2] == 1:  # the other row lost its last match: null-padded again
                    padded = self._pad(e[0], mine.nulls, not is_left)
                    for _ in range(e[1]):
                        out.append(INSERT, padded)
                e[2] -= 1

    @staticmethod
    def _joined(out: Batch, kind: int, row: tuple, matches: list, is_left: bool) -> None:
        for e in matches:
            joined = row + e[0] if is_left else e[0] + row
            for _ in range(e[1]):
                out.append(kind, joined)


_NO_MATCHES: dict = {}


def _inner(out: Batch, kinds, rows, keys, mine: _Side, other: _Side, is_left: bool) -> None:
    """``_one`` for every change of a batch, for an INNER join without a condition, in
    one loop: each change is entered in its side's entries and emitted with its own kind
    on every joined row (once per copy of the other row); nothing else changes."""
    out_kinds, out_rows = out.kinds, out.rows
    mine_loaded, other_loaded = mine.loaded, other.loaded
    freeze = mine.freeze
    mine.dirty.update(keys)
    for kind, row, key in zip(kinds, rows, keys, strict=True):
        entries = mine_loaded[key]
        matches = _NO_MATCHES if None in key else other_loaded[key]
        rk = row if freeze is None else freeze(row)
        entry = entries.get(rk)
        if ADDS[kind]:
            matched = 0
            for e in matches.values():
                matched += e[1]
            if entry is None:
                entries[rk] = [row, 1, matched]
            else:
                entry[1] += 1
                entry[2] = matched
        elif entry is not None:
            if entry[1] <= 1:
                del entries[rk]
            else:
                entry[1] -= 1
        if matches:
            _emit(out_kinds, out_rows, kind, row, matches, is_left)


def _emit(out_kinds, out_rows, kind: int, row: tuple, matches: dict, is_left: bool) -> None:
    """``row`` joined with each of the other side's ``matches`` (entries
    ``[row, copies, matches]``), with ``kind``, once per copy."""
    for other_row, copies, _ in matches.values():
        joined = row + other_row if is_left else other_row + row
        if copies == 1:
            out_kinds.append(kind)
            out_rows.append(joined)
        else:
            out_kinds.extend(repeat(kind, copies))
            out_rows.extend(repeat(joined, copies))


def _inner_condition(out: Batch, kinds, rows, keys, sides: tuple, cond, cross) -> None:
    """``_one`` for every change of a batch, for an INNER join with a condition: each
    change's joined rows are built once over the other side's rows of its key (one
    comprehension), the condition keeps the pairs it holds for (one pass, in C), and
    those are emitted with the change's kind, once per copy of the other row. A change
    of a one-row side (the scalar subquery of TPC-H Q11, Q22) re-joins every row of the
    other side this way, in the order they were added, as ``_one`` does. A condition of
    comparisons across the sides (``cross``) is evaluated by ``join_cross`` over the other
    side's values of a key, listed once per batch (that side does not change in it)."""
    mine, other, is_left = sides
    out_kinds, out_rows = out.kinds, out.rows
    mine_loaded, other_loaded = mine.loaded, other.loaded
    entry_key, replaces = mine.entry_key, mine.unique is not None
    once = other.unique is not None  # each row of the other side is there once
    prepared: dict[tuple, Any] = {}
    mine.dirty.update(keys)
    for kind, row, key in zip(kinds, rows, keys, strict=True):
        matched = 0
        if None not in key and (found := other_loaded[key]):
            ready = None
            if cross is not None:
                ready = prepared.get(key, prepared)
                if ready is prepared:
                    ready = prepared[key] = prepare(list(found.values()), cross, is_left)
            fast = None if ready is None else hits(ready, row, is_left)
            if fast is not None:
                matched = len(fast)
                out_kinds.extend(repeat(kind, matched))
                out_rows.extend(fast)
            else:
                matched = _conditioned(out_kinds, out_rows, kind, row, found, is_left, once, cond)
        entries_of_key: dict[Any, list] = mine_loaded[key]
        rk = entry_key(row)
        entry = entries_of_key.get(rk)
        if ADDS[kind]:
            if entry is None:
                entries_of_key[rk] = [row, 1, matched]
            elif replaces:  # the row of this unique key is replaced
                entry[0], entry[2] = row, matched
            else:
                entry[1] += 1
                entry[2] = matched
        elif entry is not None:
            if entry[1] <= 1:
                del entries_of_key[rk]
            else:
                entry[1] -= 1


def _conditioned(out_kinds, out_rows, kind: int, row: tuple, found, is_left, once, cond) -> int:
    """Emits ``row``'s joined rows with the other side's rows ``found`` of its key that
    the condition holds for, once per copy; returns how many."""
    entries = found.values()
    if is_left:
        joined = [row + e[0] for e in entries]
    else:
        joined = [e[0] + row for e in entries]
    if once:
        kept = list(compress(joined, map(cond, joined)))
        out_kinds.extend(repeat(kind, len(kept)))
        out_rows.extend(kept)
        return len(kept)
    matched = 0
    for one, e in compress(zip(joined, entries, strict=True), map(cond, joined)):
        copies = e[1]
        matched += copies
        out_kinds.extend(repeat(kind, copies))
        out_rows.extend(repeat(one, copies))
    return matched


def _compile_inner_unique(  # noqa: ANN202
    left_width: int, project: list[int] | None, is_left: bool, other_unique: bool
):
    """``run(out_kinds, out_rows, kinds, rows, keys, mine, other_loaded)``: ``_inner`` for
    a side with a unique key, generated per operator and input side. An addition puts
    the row under its key, a retraction removes the key (the matches count is not kept:
    an INNER join never reads it). A joined row is the two rows concatenated, or only the
    ``project`` columns of that concatenation, built in place. When the other side has a
    unique key too, each of its rows is there once (one copy): a key's joined rows are
    built by one comprehension (a hot key's thousands of matches in one pass)."""
    mine, other = ("row", "o") if is_left else ("o", "row")
    if project is None:
        joined = f"{mine} + {other}"
    else:
        parts = [
            f"{mine}[{c}]" if c < left_width else f"{other}[{c - left_width}]" for c in project
        ]
        joined = "(" + "".join(f"{part}, " for part in parts) + ")"
    if other_unique:
        emit = f"""        matches = other_loaded[key]
        if len(matches) == 1:
            ((o, _, _),) = matches.values()
            out_kinds.append(kind)
            out_rows.append({joined})
        elif matches:
            out_kinds.extend(_repeat(kind, len(matches)))
            out_rows.extend([{joined} for o, _, _ in matches.values()])
"""
    else:
        emit = f"""        for o, copies, _ in other_loaded[key].values():
            joined = {joined}
            if copies == 1:
                out_kinds.append(kind)
                out_rows.append(joined)
            else:
                out_kinds.extend([kind] * copies)
                out_rows.extend([joined] * copies)
"""
    source = f"""def run(out_kinds, out_rows, kinds, rows, keys, mine, other_loaded, _adds=_adds):
    mine_loaded, unique = mine.loaded, mine.unique
    mine.dirty.update(keys)
    for kind, row, key in zip(kinds, rows, keys):
        if _adds[kind]:
            mine_loaded[key][unique(row)] = [row, 1, 0]
        else:
            mine_loaded[key].pop(unique(row), None)
        if None in key:
            continue
{emit}"""
    name = "inner left" if is_left else "inner right"
    return define(source, "run", {"_adds": ADDS, "_repeat": repeat}, name)


def _projector(columns: list[int]) -> Callable[[tuple], tuple]:
    """The ``columns`` of a row, always as a tuple."""
    if len(columns) == 1:
        (c,) = columns
        return lambda row: (row[c],)
    return itemgetter(*columns)
