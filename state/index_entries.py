"""``Index``: one secondary index of an ``IndexedTable`` (or a primary-key prefix, which
has no table of its own): its columns, how its keys and the primary keys it holds are
encoded, and the entries it gains and loses when rows change."""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

from deltaflow.state import row_keys
from deltaflow.state.packed_index import PackedIndex
from deltaflow.state.typed_keys import KeyCache

_first = itemgetter(0)
_second = itemgetter(1)


class Index:
    __slots__ = (
        "cache", "columns", "dups_of", "encode", "getter", "keep", "key_of", "moves", "table"
    )  # fmt: skip

    def __init__(
        self,
        columns: list[int],
        table: PackedIndex | None,
        encode,
        keep: Callable[[tuple], bool] | None = None,
    ) -> None:
        """``keep``: a filtered index holds the rows it is true for (``compile_moves``)."""
        self.columns = list(columns)
        self.getter: Callable[[tuple], tuple] = (
            itemgetter(*columns) if len(columns) > 1 else _one(columns[0])
        )
        self.encode = encode
        self.cache = KeyCache(encode)
        self.table = table  # None: a primary-key prefix, scanned on the row table
        self.dups_of = None  # a secondary index: how it stores row keys (row_keys.dup_codec)
        self.key_of = None
        self.keep = keep
        self.moves = row_keys.compile_moves(self.columns, keep) if table is not None else None

    def entries(self, rows: list[tuple], row_key) -> list[tuple[bytes, bytes]]:
        """(index key bytes, stored primary key bytes) of each of ``rows`` it holds."""
        if self.keep is not None:
            rows = [row for row in rows if _held(self.keep, row)]
        index_keys = [self.encode(self.getter(row)) for row in rows]
        return list(zip(index_keys, self.dups_of(list(map(row_key, rows))), strict=True))  # type: ignore[misc]

    def moved(self, before: dict, after: dict) -> list[list[tuple[bytes, bytes]]]:
        """(the entries to remove, the entries to add) for the rows of a batch's keys
        (``before`` and ``after`` it, None: absent) whose indexed columns changed; each
        index key is encoded once. OverflowError: a primary key beyond BIGINT in a
        fixed index."""
        encode, dups_of = self.cache.encode_many, self.dups_of
        return [
            list(
                zip(
                    encode(list(map(_first, side))),
                    dups_of(list(map(_second, side))),  # type: ignore[misc]
                    strict=True,
                )
            )
            for side in self.moves(before, after)  # type: ignore[misc]
        ]


def _one(column: int) -> Callable[[tuple], tuple]:
    """A function picking one column of a row as a 1-tuple (an index key)."""
    return lambda row: (row[column],)


def _held(keep: Callable[[tuple], bool], row: tuple) -> bool:
    """Whether a filtered index holds ``row`` (one ``keep`` raises for: held)."""
    try:
        return keep(row)
    except Exception:
        return True
