"""Before-images from state: a changelog source with a PRIMARY KEY keeps the last row per
key and derives every change's before-image from it (``'<format>.before-image' = 'state'``,
the default for a Debezium table with a primary key; see
``processor/planner/rules/insert_changelog_normalize.py``).

Databases do not always send what a changelog needs. PostgreSQL under its default REPLICA
IDENTITY sends updates without a before-image and deletes whose before-image holds only
the key (NULL or an invented default in the other columns), and a TOASTed column an update
left alone as a placeholder (``__debezium_unavailable_value``). The normalizer makes the
changelog exact from what it stores, change by change in order:

- an addition (``+I`` of a create or snapshot read, ``+U`` of an update) for a stored key
  gives ``-U(stored)`` ``+U(row)``; an identical ``+I`` gives nothing (a repeated event,
  as Flink's ChangelogNormalize); for a key not stored ``+I(row)``;
- a ``-U``/``+U`` pair (an update with a before-image) whose keys differ deletes the old
  key first; otherwise only its ``+U`` counts, the message's ``-U`` is never emitted;
- a ``-D`` (delete) gives ``-D(stored)``, never the message's partial image, and nothing
  for a key not stored;
- a ``-D`` of ``TRUNCATED`` (truncate) gives ``-D`` of every stored row;
- a placeholder in an addition is replaced by the stored value of that column (the column
  did not change). A create right after a delete (Debezium's primary-key change: delete of
  the old key, create of the new) takes it from the deleted row. A placeholder with
  nothing to take it from is a ``Problem``, never output.

A ``Rejected`` row (``formats/prefilter.py``: an after-image that failed the source's
pre-filter, its converted columns left None) is stored as any row but never emitted:
the scan's only consumer is the Calc whose WHERE the pre-filter's tests are part of, and
it would drop every output row holding it. Left out, the Calc's output is the same (it
keeps or drops each row by itself). ``normalize_source`` says why the rest is exact.

An update or delete of a key never stored is a change the job never saw: it is counted
(``Result.unknown``) and, when ``refuse_unknown``, a ``Problem`` too
(``'deltaflow.unknown-key-delete'``, see ``normalize_source``).

``Normalizer.run`` computes a batch's output and the new rows without writing anything;
``Normalizer.commit`` writes them, so a batch can be run again without the records whose
problems the table's bad-input policy drops.
"""

from __future__ import annotations

from base64 import b64encode
from dataclasses import dataclass, field
from itertools import repeat
from operator import is_not, itemgetter
from typing import Protocol

from deltaflow.formats.changelog import (
    DELETE,
    INSERT,
    TRUNCATED,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Batch,
)
from deltaflow.formats.prefilter import Rejected

PLACEHOLDER = "__debezium_unavailable_value"  # Debezium's 'unavailable.value.placeholder'
_TRUNCATE = object()  # the key of a truncate's row (a NULL key value is None)


@dataclass
class Problem:
    """A change that cannot be normalized: the input row (its record's) and why."""

    row: int
    reason: str
    hint: str


@dataclass
class Result:
    """One batch normalized: the output, the input row of each output row, each touched
    key's row before and after the batch (None: absent), the problems, the count of
    unknown keys, and the row the batch's last change deleted (if it was a delete)."""

    out: Batch
    origins: list[int]
    before: dict[object, tuple | None]  # by row key (Store)
    rows: dict[object, tuple | None]
    problems: list[Problem] = field(default_factory=list)
    unknown: int = 0
    last_deleted: tuple | None = None
    withheld: int = 0  # output rows left out: Rejected rows (the Calc would drop them)


class Store(Protocol):
    """Where the last row per key lives (``normalize_source``: LMDB). Keys are row keys:
    the value itself for a one-column primary key, else the tuple of the values."""

    def rows(self, keys: list) -> dict[object, tuple | None]:
        """The stored row (None: absent) of each of the distinct ``keys``, by key."""

    def all_rows(self) -> list[tuple]: ...

    def write(self, result: Result) -> None:
        """Stores the batch's rows (``result.rows``: every key whose row changed, None
        deletes it; ``result.out``: the changelog that leads there)."""


class Normalizer:
    """The changes of one source in, an exact changelog out; see the module docstring."""

    def __init__(
        self,
        store: Store,
        key_at: list[int],
        placeholder: str = PLACEHOLDER,
        refuse_unknown: bool = False,
        binary: bool = True,
    ) -> None:
        self.store = store
        self.key_at = list(key_at)
        self.key_of = itemgetter(*key_at)  # a row key: a value, or a tuple of several
        self.keys_of = lambda rows: list(map(self.key_of, rows))
        self.placeholder = placeholder
        self.placeholder_bytes = placeholder.encode()
        # the placeholder as it appears in a JSON or Avro message (BYTES columns: base64,
        # which only a table with a BYTES column can hold), each with its rarest byte
        forms = [self.placeholder_bytes]
        if binary:
            forms.append(b64encode(self.placeholder_bytes))
        self.markers = [(_rarest(form), form) for form in forms]
        self.refuse_unknown = refuse_unknown

    def may_hold_placeholders(self, values: list) -> bool:
        """Whether any raw message of a batch holds the placeholder: C-level searches,
        first for the placeholder's rarest byte (``memchr``; most batches hold none, and
        a search for the placeholder itself is slow on JSON, its underscores and ``e``
        matching everywhere), then for the placeholder where that byte is found."""
        joined = b"\x00".join(filter(None, values))
        return any(rare in joined and form in joined for rare, form in self.markers)

    def run(
        self,
        kinds: list[int],
        rows: list[tuple],
        *,
        drop: frozenset[int] = frozenset(),
        placeholders: bool = True,
        last_deleted: tuple | None = None,
        truncates: bool = True,
        key_changes: bool = True,
    ) -> Result:
        """Normalizes one batch (``drop``: input rows to leave out, with their records);
        ``last_deleted``: the stored row the source's last change deleted, if it was a
        delete; ``placeholders`` / ``truncates``: whether the batch may hold any;
        ``key_changes``: whether a create right after a delete is a key change (its
        placeholders take the deleted row's values). Nothing is written (``commit``)."""
        segment = _Segment(self, rows, placeholders, last_deleted, truncates, key_changes)
        segment.run(kinds, rows, drop)
        return segment.result

    def commit(self, result: Result) -> None:
        self.store.write(result)


class _Segment:
    """One run over a batch (the loop of ``Normalizer.run``)."""

    def __init__(
        self, norm: Normalizer, rows, placeholders, last_deleted, truncates, key_changes
    ) -> None:
        self.norm = norm
        gaps = [i for i, row in enumerate(rows) if row is TRUNCATED] if truncates else []
        if gaps:
            keys = _with_gaps(norm.keys_of([row for row in rows if row is not TRUNCATED]), gaps)
            distinct = list(dict.fromkeys(k for k in keys if k is not _TRUNCATE))
        else:
            keys = norm.keys_of(rows)
            distinct = list(dict.fromkeys(keys))
        self.before = norm.store.rows(distinct)
        self.cur = dict(self.before)
        self.out = Batch()
        self.origins: list[int] = []
        self.result = Result(self.out, self.origins, self.before, self.cur)
        self.fill = placeholders
        self.last_deleted = last_deleted
        self.key_changes = key_changes
        self.keys = keys

    def run(self, kinds, rows, drop) -> None:
        """The batch's changes in order, then the row its last change deleted."""
        if not (drop or self.fill) and self._creates(kinds, rows):
            return  # the last change a create: no row deleted last (``Result``'s None)
        self._loop(kinds, rows, self.keys, drop)
        self.result.last_deleted = self.last_deleted

    def _creates(self, kinds, rows) -> bool:
        """A batch of creates of new keys only (a snapshot, a table filling up), none
        ``Rejected``, no two of one key: each is emitted as it is (what ``_loop`` does to
        each, ``prev is None``), in C. False, and nothing done, for any other batch."""
        n, keys = len(kinds), self.keys
        if not n or kinds.count(INSERT) != n or len(self.before) != n or Rejected in set(map(type, rows)):
            return False  # (distinct keys as many as rows: no key twice, no truncate)
        if any(map(is_not, self.before.values(), repeat(None))):
            return False
        self.out.kinds[:] = kinds
        self.out.rows[:] = rows
        self.origins[:] = range(n)
        self.cur.update(zip(keys, rows, strict=True))
        return True

    def _emit(self, kind: int, row: tuple, origin: int) -> None:
        """One output row, unless it is ``Rejected`` (module docstring)."""
        if type(row) is Rejected:
            self.result.withheld += 1
            return
        self.out.append(kind, row)
        self.origins.append(origin)

    def _loop(self, kinds, rows, keys, drop) -> None:
        """The common changes inline (per-row work is the budget: a ``Rejected`` row is
        counted here, the row the last change deleted kept in a local); a key that moves,
        a placeholder, an unknown key and a truncate go through the methods below."""
        cur, out_kinds, out_rows, origins = self.cur, self.out.kinds, self.out.rows, self.origins
        fill, marks = self.fill, (self.norm.placeholder, self.norm.placeholder_bytes)
        held, withheld, last = Rejected, 0, self.last_deleted
        n, i = len(kinds), 0
        while i < n:
            if drop and i in drop:
                i += 1
                continue
            kind, key, origin = kinds[i], keys[i], i
            if kind == UPDATE_BEFORE and i + 1 < n and kinds[i + 1] == UPDATE_AFTER:
                if key != keys[i + 1]:
                    self.last_deleted = last
                    self._retract(i, key, "update")  # the update moved the row's key
                    last = self.last_deleted
                    key = keys[i + 1]
                kind, row = UPDATE_AFTER, rows[i + 1]
                i += 2
            else:
                row = rows[i]
                i += 1
                if kind == DELETE or kind == UPDATE_BEFORE:
                    prev = cur[key] if row is not TRUNCATED else None
                    if prev is None:
                        self.last_deleted = last
                        self._retract(origin, key, "delete")
                        last = self.last_deleted
                        continue
                    if type(prev) is held:
                        withheld += 1
                    else:
                        out_kinds.append(DELETE)
                        out_rows.append(prev)
                        origins.append(origin)
                    cur[key] = None
                    last = prev
                    continue
            prev = cur[key]
            if (prev is None and kind != INSERT) or (fill and (marks[0] in row or marks[1] in row)):
                self.last_deleted = last
                self._add(kind, row, key, origin)
                last = self.last_deleted
                continue
            last = None
            if prev is None:  # a create of a new key
                if type(row) is held:
                    withheld += 1
                else:
                    out_kinds.append(INSERT)
                    out_rows.append(row)
                    origins.append(origin)
                cur[key] = row
            elif kind != INSERT or prev != row:  # an identical +I is a repeated event
                if type(prev) is held:
                    if type(row) is held:
                        withheld += 2
                    else:
                        withheld += 1
                        out_kinds.append(UPDATE_AFTER)
                        out_rows.append(row)
                        origins.append(origin)
                elif type(row) is held:
                    withheld += 1
                    out_kinds.append(UPDATE_BEFORE)
                    out_rows.append(prev)
                    origins.append(origin)
                else:
                    out_kinds += (UPDATE_BEFORE, UPDATE_AFTER)
                    out_rows += (prev, row)
                    origins += (origin, origin)
                cur[key] = row
        self.last_deleted = last
        self.result.withheld += withheld

    def _add(self, kind: int, row: tuple, key: object, origin: int) -> None:
        """An update of a key not stored, or an addition holding a placeholder."""
        prev = self.cur[key]
        norm = self.norm
        if self.fill and (norm.placeholder in row or norm.placeholder_bytes in row):
            filled = self._filled(row, prev)
            if filled is None:
                self._problem(
                    origin,
                    f"the after-image of primary key {self._shown(key)} holds the placeholder "
                    f"{norm.placeholder!r} (a value the database did not send) and the job "
                    "holds no earlier row of that key to take the value from",
                    "read the topic from its beginning (or from a snapshot) so that every "
                    "row is seen before it changes, or run ALTER TABLE <table> REPLICA "
                    "IDENTITY FULL in PostgreSQL; skipping the message loses its change",
                )
                return
            row = filled
        self.last_deleted = None
        if prev is None:
            if kind == UPDATE_AFTER and not self._unknown(origin, key, "update"):
                return
            self._emit(INSERT, row, origin)
        elif kind != INSERT or prev != row:  # a create repeating the stored row changes nothing
            self._emit(UPDATE_BEFORE, prev, origin)
            self._emit(UPDATE_AFTER, row, origin)
        self.cur[key] = row

    def _filled(self, row: tuple, prev: tuple | None) -> tuple | None:
        source = prev if prev is not None or not self.key_changes else self.last_deleted
        if source is None:
            return None
        marks = (self.norm.placeholder, self.norm.placeholder_bytes)
        return tuple(
            source[j] if type(v) in (str, bytes) and v in marks else v for j, v in enumerate(row)
        )

    def _retract(self, i: int, key: object, what: str) -> None:
        """A -D of a key not stored, or of a truncate (``key`` _TRUNCATE), or a moved key."""
        if key is _TRUNCATE:
            self._truncate(i)
            return
        prev = self.cur[key]
        if prev is None:
            self._unknown(i, key, what)
            self.last_deleted = None
            return
        self._emit(DELETE, prev, i)
        self.cur[key] = None
        self.last_deleted = prev

    def _truncate(self, i: int) -> None:
        """-D of every row: the store's (as before the batch) overlaid with the batch's."""
        key_of, before, cur = self.norm.key_of, self.before, self.cur
        for stored in self.norm.store.all_rows():
            key = key_of(stored)
            before.setdefault(key, stored)
            cur.setdefault(key, stored)
        for key, row in cur.items():
            if row is not None:
                self._emit(DELETE, row, i)
                cur[key] = None
        self.last_deleted = None

    def _unknown(self, i: int, key: object, what: str) -> bool:
        """An update or delete of a key never stored: counted; False when refused."""
        self.result.unknown += 1
        if not self.norm.refuse_unknown:
            return True
        self._problem(
            i,
            f"an {what} of primary key {self._shown(key)}, which the job never saw",
            "read the topic from its beginning (the snapshot) so that every row is seen; "
            "if changes of unseen rows are expected, SET 'deltaflow.unknown-key-delete' = "
            "'count' (an update then inserts its row, a delete retracts nothing)",
        )
        return False

    def _shown(self, key: object) -> str:
        """A row key as the tuple of its primary key values."""
        return repr(key if len(self.norm.key_at) > 1 else (key,))

    def _problem(self, i: int, reason: str, hint: str) -> None:
        self.result.problems.append(Problem(i, reason, hint))


# Bytes by how rarely they appear in JSON change events (rarest first).
_RARITY = b"zqjxZQJXkKvVwWyYbBgGfFpPhHmMcCuUdDlLrRsSnNiIoOaAtTeE0123456789_-=+/"


def _rarest(form: bytes) -> bytes:
    """The byte of ``form`` least likely in a message (any of its bytes is a sound test)."""
    return bytes([next((c for c in _RARITY if c in form), form[0])])


def _with_gaps(keys: list, gaps: list[int]) -> list:
    """``keys`` of the rows that are not ``TRUNCATED``, with _TRUNCATE at the truncates."""
    out: list = []
    it = iter(keys)
    gap_set = set(gaps)
    for i in range(len(keys) + len(gaps)):
        out.append(_TRUNCATE if i in gap_set else next(it))
    return out
