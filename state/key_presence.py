"""``KeySet``: the primary keys of a changelog source that are live, kept in LMDB.

A changelog source with a PRIMARY KEY says, record by record, which rows exist: an
insert or update-after makes its key live, a delete or update-before ends it. A
retraction (-D or -U) of a key that is not live is a delete or an update of a row
the job never saw. ``KeySet.apply`` follows a batch's changes in order, names the
rows holding such retractions, and buffers the live set's changes in the
backend's write buffer, so the set is checkpointed with the rest of the state (and
rolled back with it through the undo log).

Only keys are stored (the value is one byte). Each distinct key of a batch is
encoded and looked up once; the per-row work is one dict read and one branch.
A set is *complete* when it has followed its source from the beginning of the
topics; only a complete set can tell an unknown key from one read before it
existed (``mark_complete`` / ``is_complete``).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

from deltaflow.formats.changelog import RowKind
from deltaflow.formats.types import DataType
from deltaflow.state.backend import StateBackend
from deltaflow.state.keys import EMPTY
from deltaflow.state.typed_keys import key_encoder, value_encoder
from deltaflow.state.values import TypedValues

COMPLETE_TABLE = "keyset.complete"
_ADDS = (RowKind.INSERT, RowKind.UPDATE_AFTER)
_FIRST = itemgetter(0)


class KeySet:
    """The live primary keys of one source; see the module docstring."""

    def __init__(self, backend: StateBackend, name: str, types: Sequence[DataType]) -> None:
        self.name = name
        self.table = backend.table(f"keyset.{name}", TypedValues(bool))
        self._complete = backend.table(COMPLETE_TABLE, TypedValues(bool))
        self.encode_many = _encoder(list(types))

    def is_complete(self) -> bool:
        return bool(self._complete.get((self.name,)))

    def mark_complete(self) -> None:
        """The set follows its source from the first record on (written at the next commit)."""
        self._complete.put((self.name,), True)

    def apply(self, kinds: list[int], keys: list[tuple], drop: bool) -> list[int]:
        """Follow one batch's changes; return the rows retracting a key that is not live.

        A -U and the +U right after it come from one record (an update); with ``drop``
        such a record is dropped whole when its -U is refused: its +U does not make the
        key live either."""
        distinct = list(dict.fromkeys(keys))
        encoded = self.encode_many(distinct)
        stored = self.table.get_many_encoded(encoded)
        before = {k: v is not None for k, v in zip(distinct, stored, strict=True)}
        live = dict(before)
        bad: list[int] = []
        refused = -2  # the row of the last refused retraction
        for i, (kind, key) in enumerate(zip(kinds, keys, strict=True)):
            if kind in _ADDS:
                if not (drop and refused == i - 1 and kind == RowKind.UPDATE_AFTER):
                    live[key] = True
            elif live[key]:
                live[key] = False
            else:
                bad.append(i)
                refused = i if kind == RowKind.UPDATE_BEFORE else -2
        table = self.table
        for kb, key in zip(encoded, distinct, strict=True):
            now = live[key]
            if now != before[key]:
                if now:
                    table.put_encoded(kb, True)
                else:
                    table.delete_encoded(kb)
        return bad


def _encoder(types: list[DataType]):
    """Distinct key tuples -> their LMDB keys (never empty: LMDB refuses an empty key);
    a one-column key skips the tuple layer (the bytes are the same)."""
    if len(types) == 1:
        column = value_encoder(types[0])
        return lambda keys: list(map(column, map(_FIRST, keys)))
    encode = key_encoder(types)
    return lambda keys: [encode(k) or EMPTY for k in keys]
