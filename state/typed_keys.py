"""Key encoders compiled once for known column types.

``key_encoder(types)`` returns a function giving exactly the bytes of
``encode_key(key)`` for keys whose columns have the SQL ``types`` (the format is
described in ``deltaflow.state.keys``), without the per-value type dispatch and
``bytearray`` of the generic encoder: integer and string columns (the usual key
columns) get a direct encoder, every other type goes through ``encode_key``. An
encoder checks each value's class, so a value of another type than declared
still gets ``encode_key``'s bytes: the types choose the fast path, never the format.

Measured (Python 3.11, 5,000 keys): a ``(INT, INT)`` key in 0.36 us against
0.67 us for ``encode_key``, a ``(BIGINT,)`` key in 0.17 us against 0.42 us.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import repeat
from operator import is_
from typing import Final, Literal, cast

from deltaflow.formats.types import INTEGER_ROOTS, STRING_ROOTS, DataType
from deltaflow.state.keys import INT_ZERO, NONE, STR, encode_key

_NULL = bytes((NONE,))
_STR = bytes((STR,))
_END = b"\x00"
# the tag of a positive integer of n bytes (n < 8), by n
_POSITIVE = [bytes((INT_ZERO + n,)) for n in range(8)]

# the smallest positive integer of n bytes, by n; integers below the last fit in 7 bytes
_SMALLEST = [1 << (8 * n) for n in range(8)]
_BIG: Final[Literal["big"]] = "big"
_INT_ONLY = {int}

ValueEncoder = Callable[[object], bytes]


def _generic(value: object) -> bytes:
    return encode_key((value,))


def _int(value: object) -> bytes:
    if value is None:
        return _NULL
    if type(value) is int and value > 0:  # a bool has a tag of its own: encode_key's
        length = (value.bit_length() + 7) >> 3  # type: ignore[attr-defined]
        if length < 8:
            return _POSITIVE[length] + value.to_bytes(length, "big")  # type: ignore[attr-defined]
    return encode_key((value,))  # zero, negative, 8 bytes and more, bool


def encode_sorted_ints(values: list) -> list[bytes] | None:
    """The bytes of each of ``values`` (sorted ascending) as ``_int`` gives them, by C-level
    maps over each run of values of one byte length (at most 7 runs); None unless every
    value is an ``int`` (not a bool) from 1 to 2**56 - 1, the usual keys of a sequence.
    The bytes then sort as the values do, so they come out sorted too."""
    if not values or set(map(type, values)) != _INT_ONLY:
        return None
    if values[0] <= 0 or values[-1] >= _SMALLEST[7]:
        return None
    out: list[bytes] = []
    start, length, end = 0, (values[0].bit_length() + 7) >> 3, len(values)
    while start < end:
        stop = bisect_left(values, _SMALLEST[length], start)
        run = values[start:stop]
        out += map(_POSITIVE[length].__add__, map(int.to_bytes, run, repeat(length), repeat(_BIG)))
        start, length = stop, length + 1
    return out


def _str(value: object) -> bytes:
    if type(value) is not str:
        return _NULL if value is None else encode_key((value,))
    raw = value.encode("utf-8", "surrogatepass")
    return _STR + raw.replace(b"\x00", b"\x00\xff") + _END


def value_encoder(dtype: DataType | None) -> ValueEncoder:
    """The encoder of one key column of type ``dtype`` (None: any type)."""
    if dtype is None:
        return _generic
    if dtype.root in INTEGER_ROOTS:
        return _int
    if dtype.root in STRING_ROOTS:
        return _str
    return _generic


def key_encoder(types: Sequence[DataType | None]) -> Callable[[tuple], bytes]:
    """A function encoding key tuples whose columns have ``types``, as ``encode_key``
    does (the empty tuple encodes to ``b""``, as there)."""
    parts = [value_encoder(t) for t in types]
    if not parts:
        return encode_key
    if len(parts) == 1:
        (first,) = parts
        return lambda key: first(key[0])
    if len(parts) == 2:
        first, second = parts
        return lambda key: first(key[0]) + second(key[1])
    return lambda key: b"".join([encode(v) for encode, v in zip(parts, key, strict=True)])


class KeyCache:
    """An encoder with a memory of the keys it encoded lately, for the keys of one table
    (its columns have fixed types, so keys equal as tuples never differ in type): a hot
    key is encoded once, not once per batch. Bounded by ``limit`` keys, then it starts over.
    """

    __slots__ = ("encode", "known", "limit")

    def __init__(self, encode: Callable[[tuple], bytes], limit: int = 100_000) -> None:
        self.encode = encode
        self.known: dict[tuple, bytes] = {}
        self.limit = limit

    def encode_many(self, keys: list[tuple]) -> list[bytes]:
        """The bytes of each key of ``keys``, in order (the known ones by one C-level map)."""
        known = self.known
        out = list(map(known.get, keys))
        if not any(map(is_, out, repeat(None))):
            return cast(list[bytes], out)
        missing = {key: None for key, kb in zip(keys, out, strict=True) if kb is None}
        if len(known) + len(missing) > self.limit:
            known.clear()
        fresh = dict(zip(missing, map(self.encode, missing), strict=True))
        known.update(fresh)
        return [fresh[key] if kb is None else kb for key, kb in zip(keys, out, strict=True)]
