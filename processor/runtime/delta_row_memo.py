"""``RowMemo``: the delta join's memo of a side that only the direct path reads.

A side remembered by its primary key (``delta_join.memoizable``) has at most one row per
join key. When the changes of the other side join just their matches (``JoinStep.direct``)
and that side has no memo of its own, the memo is read by ``rows_of`` alone, so it keeps
each key's row itself (None: no row), not a tuple of rows: a change's match is then the
memo's value, with no tuple to read and no count of matches per change, the row built from
it while it is still in the cache (``JoinStep.run_matched``).
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import is_

_UNKNOWN = object()  # a key not remembered (a remembered key without a row holds None)


class RowMemo:
    """Each join key's one current row (or None) of a side, for the keys looked up lately;
    past ``limit`` keys it starts over. A batch of the side itself ``forget``s its keys."""

    def __init__(self, reader, limit: int) -> None:
        self.reader = reader
        self.limit = limit
        self.found: dict[tuple, tuple | None] = {}

    def forget(self, keys) -> None:
        """Drops ``keys`` (the keys of a batch of this side, which changed their rows)."""
        drop = self.found.pop
        for key in keys:
            drop(key, None)

    def rows_of(self, keys: list[tuple]) -> list[tuple | None]:
        """The row of each of ``keys`` (changes' join keys, repeats and NULLs included) or
        None, in order: one C-level lookup per key, and the keys not remembered yet read
        at once and remembered (none for a key with a NULL, which matches nothing)."""
        found = self.found
        out = list(map(found.get, keys, repeat(_UNKNOWN)))
        if not any(map(is_, out, repeat(_UNKNOWN))):
            return out  # type: ignore[return-value]  # every key remembered
        at = list(compress(range(len(keys)), map(is_, out, repeat(_UNKNOWN))))
        missing: dict[tuple, tuple | None] = dict.fromkeys(map(keys.__getitem__, at))
        live = [key for key in missing if None not in key]
        if live:
            if len(found) + len(live) > self.limit:
                found.clear()
            read = self.reader.rows(live, None)
            rows = {key: one[0] if one else None for key, one in read.items()}
            found.update(rows)
            missing.update(rows)
        for i in at:  # the few changes whose key was not remembered: no second pass
            out[i] = missing[keys[i]]
        return out  # type: ignore[return-value]  # every unknown filled
