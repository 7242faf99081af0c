"""How an ``IndexedTable`` names, encodes and replays its rows: row keys, their bytes,
index entries, the rows' codec and a batch's contradictions.

A *row key* is a row's primary key as the table's dicts hold it: the value itself for
a one-column key (an int or str hashes and compares faster than a 1-tuple, and C's
``itemgetter`` picks it), a tuple for more columns. Its bytes are exactly
``encode_key`` of the primary key tuple (``deltaflow.state.keys``), by encoders
compiled for the key columns' types when those are known (``typed_keys``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from itertools import repeat
from operator import add, is_, itemgetter
from typing import Any

from deltaflow.formats.changelog import ADDS
from deltaflow.formats.generated import define
from deltaflow.formats.types import INTEGER_ROOTS, DataType
from deltaflow.state.keys import encode_key
from deltaflow.state.typed_keys import key_encoder, value_encoder
from deltaflow.state.values import decode_value, encode_value

_BIAS = 1 << 63
_NULL_DUP = bytes(9)
_FIXED = struct.Struct(">BQ")  # NULL flag (1: not NULL), value + 2**63


def row_key(columns: list[int]) -> Callable[[tuple], object]:
    """The row key of a row (module docstring), by C's ``itemgetter``."""
    return itemgetter(*columns)


def key_tuple(columns: list[int]) -> Callable[[Any], tuple]:
    """The primary key tuple of a row key."""
    if len(columns) == 1:
        return lambda key: (key,)
    return tuple


def from_tuple(columns: list[int]) -> Callable[[tuple], object]:
    """The row key of a primary key tuple."""
    return itemgetter(0) if len(columns) == 1 else tuple


def key_bytes(columns: list[int], types: Sequence[DataType] | None) -> Callable[[Any], bytes]:
    """The encoder of the row keys of a table keyed by ``columns``."""
    if len(columns) == 1:
        if types is None:
            return lambda key: encode_key((key,))
        return value_encoder(types[columns[0]])
    return encoder(columns, types)


def encoder(columns: list[int], types: Sequence[DataType] | None) -> Callable[[tuple], bytes]:
    """The encoder of tuples of the values of ``columns``."""
    return encode_key if types is None else key_encoder([types[c] for c in columns])


def leading(key_columns: list[int]) -> int:
    """How many primary key columns lead the row (all of them or none)."""
    return len(key_columns) if list(key_columns) == list(range(len(key_columns))) else 0


def stored_columns(key_columns: list[int], width: int) -> list[int]:
    """The columns of a row of ``width`` columns that its stored value holds: all but the
    primary key columns when those lead the row (the key holds them), else all."""
    return list(range(leading(key_columns), width))


def fixed_keys(key_columns: list[int], types: Sequence[DataType] | None) -> bool:
    """Whether a new index stores primary keys in 9 bytes (a one-column integer key)."""
    return (
        types is not None and len(key_columns) == 1 and types[key_columns[0]].root in INTEGER_ROOTS
    )


def integer_columns(key_columns: list[int], types: Sequence[DataType] | None) -> int:
    """How many columns the key has when they are all integers (0 when they are not, or
    their types are unknown)."""
    if types is None or not all(types[c].root in INTEGER_ROOTS for c in key_columns):
        return 0
    return len(key_columns)


def dup_codec(fixed: bool, encode_many: Callable[[list], list[bytes]]) -> tuple:
    """How an index stores a row's primary key: (the bytes of a list of row keys, the row
    key of such bytes or None when they are the row keys' bytes as ``encode_many`` gives
    them).

    In a ``fixed`` index (made for a one-column integer key) it takes 9 bytes: a NULL
    flag, then the value plus 2**63 big-endian (the order of the key's encoding); the
    index packs such keys with no length prefix. A value outside BIGINT's range raises
    OverflowError."""
    if not fixed:
        return encode_many, None

    def dups_of(keys: list) -> list[bytes]:
        try:
            if not any(map(is_, keys, repeat(None))):
                return list(map(_FIXED.pack, repeat(1), map(add, keys, repeat(_BIAS))))
            return [_NULL_DUP if k is None else _FIXED.pack(1, k + _BIAS) for k in keys]
        except struct.error:
            raise OverflowError("a primary key outside BIGINT's range") from None

    def key_of(dup: bytes) -> int | None:
        return int.from_bytes(dup[1:], "big") - _BIAS if dup[0] else None

    return dups_of, key_of


def compile_moves(
    columns: list[int], keep: Callable[[tuple], bool] | None = None
) -> Callable[[dict, dict], tuple[list, list]]:
    """``moves(before, after)``: for the rows of a batch's keys before and after it (two
    dicts with the same keys in the same order, None: absent), the index entries
    ``(index key, row key)`` to remove and to add for an index on ``columns``; a row
    whose indexed columns kept their values moves nothing. One generated loop, the
    columns compared inline. ``keep``: the index holds only the rows it is true for (a
    filtered index); a row it raises for is held (an index may hold more rows than it
    needs, never fewer: its readers apply the filter again)."""
    old_key = "".join(f"old[{c}], " for c in columns)
    new_key = "".join(f"new[{c}], " for c in columns)
    moved = " or ".join(f"old[{c}] != new[{c}]" for c in columns)
    if keep is None:
        source = f"""def moves(before, after):
    gone = []
    added = []
    for (key, old), new in zip(before.items(), after.values()):
        if old is None:
            if new is not None:
                added.append((({new_key}), key))
        elif new is None:
            gone.append((({old_key}), key))
        elif {moved}:
            gone.append((({old_key}), key))
            added.append((({new_key}), key))
    return gone, added
"""
        return define(source, "moves", None, "index moves")  # type: ignore[no-any-return]
    source = f"""def moves(before, after):
    gone = []
    added = []
    for (key, old), new in zip(before.items(), after.values()):
        if old is not None:
            try:
                was = keep(old)
            except Exception:
                was = True
        else:
            was = False
        if new is not None:
            try:
                now = keep(new)
            except Exception:
                now = True
        else:
            now = False
        if was:
            if not now:
                gone.append((({old_key}), key))
            elif {moved}:
                gone.append((({old_key}), key))
                added.append((({new_key}), key))
        elif now:
            added.append((({new_key}), key))
    return gone, added
"""
    return define(source, "moves", {"keep": keep}, "filtered index moves")  # type: ignore[no-any-return]


class _Raw:
    """The row table's codec: an ``IndexedTable`` encodes and decodes its rows itself."""

    @staticmethod
    def encode_many(values: list) -> list:
        return values

    @staticmethod
    def decode(data: bytes) -> bytes:
        return data


RAW = _Raw()


def row_codec(values: object | None) -> tuple:
    """(encode a list of stored rows, decode one) for the codec ``values`` (None: by shape)."""
    if values is None:
        return (lambda rows: list(map(encode_value, rows))), decode_value
    return values.encode_many, values.decode  # type: ignore[attr-defined]


def contradictions(kinds: list[int], keys: list, before: dict) -> list[int]:
    """The positions of the retractions of keys absent at that point of the batch."""
    current = dict(before)
    out = []
    for position, (kind, key) in enumerate(zip(kinds, keys, strict=True)):
        if ADDS[kind]:
            current[key] = True
        elif current[key] is None:
            out.append(position)
        else:
            current[key] = None
    return out


def encode_images(rows: list, lead: int, encode_rows) -> list[bytes | None]:
    """The stored bytes of each of ``rows`` (None: absent), encoded in one batch by
    ``encode_rows``, without the ``lead`` primary key columns leading each row."""
    deleted = any(map(is_, rows, repeat(None)))
    live = [row for row in rows if row is not None] if deleted else rows
    if lead:
        live = list(map(itemgetter(slice(lead, None)), live))
    values: list = encode_rows(live)
    if deleted:
        encoded = iter(values)
        values = [None if row is None else next(encoded) for row in rows]
    return values
