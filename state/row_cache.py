"""The rows an ``IndexedTable`` keeps in memory, decoded, by row key, and the keys changed
since its last flush: two layouts with one interface.

- ``ByKey``: a dict by row key (any key), and a dict of the changed keys' last rows.
- ``BySlot``: for a one-column integer key (``row_keys.fixed_keys``) whose values are
  from 0 to ``LIMIT - 1``, as a sequence's keys are: the row of key ``k`` is slot ``k`` of
  a list (``MISSING``: not kept). A read or write of a batch's keys is one C-level map of
  ``list.__getitem__`` / ``__setitem__``: no key object hashed or compared, 8 bytes per
  slot where a dict entry takes about 100 (entry, index, the key's int), so the rows of a
  large table stay in fewer cache lines. The changed keys are listed as they come; at the
  flush they are sorted once and their rows read from the slots, which hold every changed
  key's last row (a kept row is only dropped by ``clear``, after a flush).

Any row read back equals what ``ByKey`` would give: the slots are a cache of the same
rows. A key ``BySlot`` cannot hold (not an int, negative, ``LIMIT`` or more) raises
``Unfit`` before anything of the call is kept, and the table moves to ``ByKey`` for good
(``as_by_key``: the same rows and changed keys).
"""

from __future__ import annotations

from collections import deque
from itertools import repeat
from typing import Any

MISSING: Any = object()  # a key whose row is not kept (unknown: read it)
LIMIT = 1 << 20  # the largest slot list: 8 MB of pointers


class Unfit(Exception):
    """A key ``BySlot`` cannot hold."""


class ByKey:
    """Kept rows by row key (module docstring)."""

    def __init__(self) -> None:
        self.rows: dict[Any, tuple | None] = {}
        self.dirty: dict[Any, tuple | None] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def lookup(self, keys: list) -> list:
        """The kept row of each of ``keys`` (None: absent, MISSING: not kept)."""
        return list(map(self.rows.get, keys, repeat(MISSING)))

    def add(self, keys: list, rows: list) -> None:
        """Keeps ``rows`` (read back, unchanged) of ``keys``, which are not kept."""
        self.rows.update(zip(keys, rows, strict=True))

    def put(self, after: dict) -> None:
        """Keeps the rows of ``after`` (by row key) as changed."""
        self.rows.update(after)
        self.dirty.update(after)

    def changed(self) -> bool:
        return bool(self.dirty)

    def latest(self, ints: bool) -> tuple[list, list, bool]:
        """(the changed keys, their last rows, whether the keys are sorted ints); ``ints``:
        the keys are integers (one integer key column), so worth a sort."""
        latest = self.dirty
        if ints and None not in latest:
            try:
                keys = sorted(latest)
            except TypeError:  # a key of a type not comparable with ints
                pass
            else:
                return keys, list(map(latest.__getitem__, keys)), True
        return list(latest), list(latest.values()), False

    def clean(self) -> None:
        """The changes are written."""
        self.dirty = {}

    def clear(self) -> None:
        """Drops every kept row and change."""
        self.rows = {}
        self.dirty = {}

    def as_by_key(self) -> ByKey:
        return self


class BySlot:
    """Kept rows of non-negative integer keys by slot (module docstring)."""

    def __init__(self) -> None:
        self.slots: list = []
        # slots holding a row (or None), as len(ByKey.rows) but for the keys first seen in
        # a put (a truncate's stored rows): it bounds memory only
        self.count = 0
        self.dirty: list = []  # the changed keys, repeats included

    def __len__(self) -> int:
        return self.count

    def _reach(self, keys: Any) -> None:
        """Grows the slots past the largest of ``keys``; Unfit for a key out of range."""
        try:
            low, high = min(keys), max(keys)
            if low < 0 or high >= LIMIT:
                raise Unfit
        except TypeError:  # a key not an int: a str, a tuple, None
            raise Unfit from None
        slots = self.slots
        if high >= len(slots):
            size = min(LIMIT, max(high + 1, 2 * len(slots)))
            slots.extend(repeat(MISSING, size - len(slots)))

    def lookup(self, keys: list) -> list:
        if not keys:
            return []
        self._reach(keys)
        try:
            return list(map(self.slots.__getitem__, keys))
        except TypeError:  # a float or Decimal key: min and max took it
            raise Unfit from None

    def add(self, keys: list, rows: list) -> None:
        if keys:
            self._reach(keys)
            self._set(keys, rows)
            self.count += len(keys)

    def put(self, after: dict) -> None:
        if after:
            self._reach(after.keys())
            self._set(after.keys(), after.values())
            self.dirty += after.keys()

    def _set(self, keys: Any, rows: Any) -> None:
        try:
            deque(map(self.slots.__setitem__, keys, rows), maxlen=0)
        except TypeError:  # a float or Decimal key; the slots set before it hold their
            raise Unfit from None  # rows of ``rows``, which the caller puts again

    def changed(self) -> bool:
        return bool(self.dirty)

    def latest(self, ints: bool) -> tuple[list, list, bool]:
        keys = sorted(set(self.dirty))
        return keys, list(map(self.slots.__getitem__, keys)), True

    def clean(self) -> None:
        self.dirty = []

    def clear(self) -> None:
        self.slots = []
        self.count = 0
        self.dirty = []

    def as_by_key(self) -> ByKey:
        """The same rows and changes by row key."""
        out = ByKey()
        slots = self.slots
        out.rows = {key: row for key, row in enumerate(slots) if row is not MISSING}
        out.dirty = {key: slots[key] for key in dict.fromkeys(self.dirty)}
        return out
