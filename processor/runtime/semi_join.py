"""Semi and anti joins: Flink's StreamingSemiAntiJoinOperator, on batches.

Each side keeps, per join key, its distinct rows with a count of copies; a left row also
keeps how many right rows match it (its associations). The rules, for every change in
order, as Flink's operator:

- a left change is emitted with its own kind when it matches (semi) or matches nothing
  (anti), counted against the right rows of its key; the row is then entered (or
  removed) with that count;
- a right addition raises the count of every left row it matches; a left row going from
  0 to 1 is emitted once per copy: semi with the addition's kind (+I/+U), anti as -D;
- a right retraction lowers the counts; a left row going from 1 to 0 is emitted once per
  copy: semi with the retraction's kind (-U/-D), anti as +I.

The non-equi ``condition`` filters the pairs; a key column matches NULL to NULL only when
``null_safe`` says so, else a row with a NULL key matches nothing and is not kept (no
right row can ever match it, and its retraction is decided the same way). State is read
once per distinct key of the batch and written once per touched key, as
``[(row, copies, associations), ...]`` (typed when the row's columns allow it).

The entries of recently used keys stay decoded between batches (``CACHED_KEYS``, then the
cache starts over: the state table stays the truth, only this operator writes it), and
without state TTL the table takes a touched key's entries dict itself, listed once at the
commit, so a key changed in batch after batch (TPC-H Q22's customers, re-joined with
each change of the average) is neither decoded nor listed per batch.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress
from operator import itemgetter

from deltaflow.formats.changelog import ADDS, DELETE, INSERT, Batch
from deltaflow.processor.exprs.compile import compile_predicate
from deltaflow.processor.plan import SemiJoin
from deltaflow.processor.runtime.base import (
    Operator,
    StateKeys,
    cache_misses,
    key_getter,
    row_freezer,
    row_shape,
)
from deltaflow.state.values import TypedValues

# Join keys whose decoded entries a side keeps between batches; past it the cache starts over
CACHED_KEYS = 200_000


def _table(backend, name: str, types: list, live: bool):  # noqa: ANN001, ANN202
    """A side's state table; ``live``: it takes the entries dicts themselves and lists
    them at the commit (``_listed``)."""
    shape = row_shape(types)
    if shape is None:
        return backend.table(name)
    snapshot = _listed if live else None
    return backend.table(name, TypedValues(list[tuple[shape, int, int]], snapshot))  # type: ignore[valid-type]


def _listed(entries: dict[object, list]) -> list[tuple]:
    """The entries of a key as stored: ``[(row, copies, associations), ...]``."""
    return [(r, n, m) for n, m, r in entries.values()]


def _batch_keys(columns: tuple[int, ...]) -> Callable[[list[tuple]], list[tuple]]:
    """``keys(rows)``: each row's join key tuple, as ``key_getter(columns)`` gives it; a
    one-column key's 1-tuples are built by ``zip`` in C, not by a lambda per row."""
    if len(columns) == 1:
        one = itemgetter(columns[0])
        return lambda rows: list(zip(map(one, rows)))
    get = key_getter(columns)
    return lambda rows: list(map(get, rows))


class _Side:
    """One input's rows by join key: key -> {entry: [copies, associations, row]}, the
    entry being the row (made hashable when it holds ARRAY/MAP values). ``cache`` keeps
    the entries of recently used keys decoded; ``loaded`` holds the batch's keys."""

    def __init__(self, table, types: list, live: bool) -> None:  # noqa: ANN001
        self.table = table
        self.freeze = row_freezer(types)
        self.live = live and row_shape(types) is not None
        self.cache_limit = CACHED_KEYS if live else 0  # with TTL the table decides expiry
        self.cache: dict[tuple, dict[object, list]] = {}
        self.loaded: dict[tuple, dict[object, list]] = {}
        self.dirty: set[tuple] = set()

    def load(self, encoded: dict[tuple, bytes]) -> None:
        cache = self.cache
        missing = cache_misses(cache, encoded, self.cache_limit)
        if missing:
            stored = self.table.get_many_encoded([encoded[k] for k in missing])
            freeze = self.freeze
            for key, raw in zip(missing, stored, strict=True):
                if not raw:
                    cache[key] = {}
                elif type(raw) is dict:
                    cache[key] = raw  # this side's live entries, buffered until the commit
                elif freeze is None:
                    cache[key] = {r: [n, m, r] for r, n, m in raw}
                else:
                    cache[key] = {freeze(r): [n, m, r] for r, n, m in raw}
        self.loaded = {key: cache[key] for key in encoded}

    def entry(self, row: tuple) -> object:
        return row if self.freeze is None else self.freeze(row)

    def store(self, encoded: dict[tuple, bytes]) -> None:
        live = self.live
        for key in self.dirty:
            entries = self.loaded[key]
            if entries:
                self.table.put_encoded(encoded[key], entries if live else _listed(entries))
            else:
                self.table.delete_encoded(encoded[key])
        self.dirty.clear()
        self.loaded = {}


class SemiJoinOperator(Operator):
    def __init__(self, node: SemiJoin, backend, ctx) -> None:  # noqa: ANN001
        self.node = node
        self.anti = node.anti
        prefix = f"{node.node_id}:SemiJoin"
        left, right = node.inputs[0].types, node.inputs[1].types
        live = ctx.state_ttl_ms <= 0  # with TTL the table stamps each write: list it then
        self.sides = (
            _Side(_table(backend, f"{prefix}:left", left, live), left, live),
            _Side(_table(backend, f"{prefix}:right", right, live), right, live),
        )
        self.keys_of = (_batch_keys(node.left_keys), _batch_keys(node.right_keys))
        strict = [i for i, safe in enumerate(node.null_safe) if not safe]
        self.strict = key_getter(tuple(strict)) if strict else None
        self.condition = None
        if node.condition is not None:
            self.condition = compile_predicate(node.condition, ctx.eval_context())
        self.state_keys = StateKeys()

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        keys = self.keys_of[port](batch.rows)
        distinct = dict.fromkeys(keys)
        strict = self.strict
        dead = () if strict is None else {k for k in distinct if None in strict(k)}
        live = None  # every key can match (no NULL in a strict key column)
        if dead:
            live = [k not in dead for k in keys]
            distinct = {k: None for k in distinct if k not in dead}
        encoded = self.state_keys.of(distinct)
        left, right = self.sides
        left.load(encoded)
        right.load(encoded)
        out = Batch()
        oks = [True] * len(keys) if live is None else live
        cond = self.condition
        if port == 1:
            for kind, row, key, ok in zip(batch.kinds, batch.rows, keys, oks, strict=True):
                self._right(out, kind, row, key if ok else None)
        elif cond is None:
            self._lefts_by_key(out, batch.kinds, batch.rows, keys, live, encoded)
        else:
            self._lefts(out, batch.kinds, batch.rows, keys, oks, cond)
        left.store(encoded)
        right.store(encoded)
        return out

    def _lefts_by_key(self, out: Batch, kinds, rows, keys, live, distinct) -> None:
        """The left changes of a batch without a condition: a key's count of right rows is
        the same for all its changes (the right side does not move during the batch), so
        it is summed once per distinct key and the emitted changes are picked in one pass
        (a NULL key matches nothing: emitted by an anti join, never kept)."""
        right, anti = self.sides[1].loaded, self.anti
        counts = {k: sum(e[0] for e in right[k].values()) for k in distinct}
        emit = {k: (n > 0) != anti for k, n in counts.items()}
        if live is None:
            flags = list(map(emit.__getitem__, keys))
        else:
            flags = [emit[k] if ok else anti for k, ok in zip(keys, live, strict=True)]
        out.kinds.extend(compress(kinds, flags))
        out.rows.extend(compress(rows, flags))
        changes = zip(kinds, rows, keys, strict=True)
        self._enter(changes if live is None else compress(changes, live), counts)

    def _enter(self, changes, counts: dict) -> None:
        """Enters (or removes) each left change of ``changes`` with its key's count."""
        mine = self.sides[0]
        loaded, freeze = mine.loaded, mine.freeze
        mine.dirty.update(counts)
        for kind, row, key in changes:
            entries = loaded[key]
            ek = row if freeze is None else freeze(row)
            entry = entries.get(ek)
            if ADDS[kind]:
                if entry is None:
                    entries[ek] = [1, counts[key], row]
                else:
                    entry[0] += 1
            elif entry is not None:
                if entry[0] <= 1:
                    del entries[ek]
                else:
                    entry[0] -= 1

    def _lefts(self, out: Batch, kinds, rows, keys, live, cond) -> None:
        """Every left change of a batch with a condition, in order, in one loop: emitted
        with its own kind when it matches (semi) or matches nothing (anti), then entered
        or removed with its count of matching right rows (a NULL key matches nothing,
        is not kept)."""
        out_kinds, out_rows, anti = out.kinds, out.rows, self.anti
        mine, right = self.sides[0], self.sides[1].loaded
        loaded, freeze = mine.loaded, mine.freeze
        for kind, row, key, ok in zip(kinds, rows, keys, live, strict=True):
            if not ok:  # a NULL key matches nothing
                if anti:
                    out_kinds.append(kind)
                    out_rows.append(row)
                continue
            mine.dirty.add(key)
            matched = 0
            for n, _, r in right[key].values():
                if cond(row + r):
                    matched += n
            if (matched > 0) != anti:
                out_kinds.append(kind)
                out_rows.append(row)
            entries = loaded[key]
            ek = row if freeze is None else freeze(row)
            entry = entries.get(ek)
            if ADDS[kind]:
                if entry is None:
                    entries[ek] = [1, matched, row]
                else:
                    entry[0] += 1
            elif entry is not None:
                if entry[0] <= 1:
                    del entries[ek]
                else:
                    entry[0] -= 1

    def _right(self, out: Batch, kind: int, row: tuple, key: tuple | None) -> None:
        if key is None:
            return
        mine = self.sides[1]
        entries = mine.loaded[key]
        ek = mine.entry(row)
        entry = entries.get(ek)
        adds = ADDS[kind]
        if adds:
            if entry is None:
                entries[ek] = [1, 0, row]
            else:
                entry[0] += 1
        elif entry is None:
            return  # a retraction of a row never added changes nothing
        elif entry[0] <= 1:
            del entries[ek]
        else:
            entry[0] -= 1
        mine.dirty.add(key)
        cond = self.condition
        others = self.sides[0]
        flipped = False
        for e in others.loaded[key].values():
            if cond is not None and not cond(e[2] + row):
                continue
            if adds:
                e[1] += 1
                turned = e[1] == 1
            else:
                e[1] -= 1
                turned = e[1] == 0
            flipped = True
            if turned:
                emit = (DELETE if adds else INSERT) if self.anti else kind
                out.kinds.extend([emit] * e[0])
                out.rows.extend([e[2]] * e[0])
        if flipped:
            others.dirty.add(key)
