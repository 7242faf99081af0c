"""Hand-off of changelog batches between two processes, for ``bench.second_core``.

``Ring``: a ``multiprocessing.shared_memory`` block cut into fixed slots, with two pipes
carrying slot numbers (free slots one way, filled slots and their sizes the other), so a
batch costs one copy into the block, one pipe write each way and its codec.

Codecs turn (kinds, rows) into bytes and back; each ``unpack`` gives rows equal to the
packed ones, DECIMALs with their exponent (``check`` says so for every batch it is given):

- ``pickle5``: the rows as they are (a Decimal pickles as its text, a datetime as bytes);
- ``msgpack``: msgspec's MessagePack with a typed decoder per column (DECIMAL as text,
  parsed in C by the decoder);
- ``columns``: marshal of the kinds (as plain ints) and of one list per column, DECIMALs as their text (a column that is
  all NULL as None); the rows are rebuilt by ``zip`` of the columns, ``map(Decimal, ..)``
  for a DECIMAL column without NULLs: C loops, no Python per row.
"""

from __future__ import annotations

import datetime as dt
import marshal
import os
import pickle
import struct
from decimal import Decimal
from itertools import repeat
from multiprocessing import shared_memory
from typing import Optional

import msgspec

END = 0xFFFFFFFF
_HEAD = struct.Struct("<BI")
PY_TYPES = {"i": int, "d": Decimal, "s": str, "t": dt.datetime}


class Ring:
    """Slots of shared memory handed between one writer and one reader process."""

    def __init__(self, slots: int = 4, size: int = 8 << 20) -> None:
        self.size = size
        self.shm = shared_memory.SharedMemory(create=True, size=slots * size)
        self.full_r, self.full_w = os.pipe()
        self.free_r, self.free_w = os.pipe()
        os.write(self.free_w, bytes(range(slots)))

    def put(self, data: bytes) -> None:
        if len(data) > self.size:
            raise ValueError(f"a batch of {len(data)} bytes exceeds the slot ({self.size})")
        slot = os.read(self.free_r, 1)[0]
        at = slot * self.size
        self.shm.buf[at : at + len(data)] = data
        os.write(self.full_w, _HEAD.pack(slot, len(data)))

    def end(self) -> None:
        os.write(self.full_w, _HEAD.pack(0, END))

    def get(self) -> tuple[int, memoryview | None]:
        """The next filled slot and a view of its bytes (None at the end); ``release`` it."""
        slot, size = _HEAD.unpack(_read(self.full_r, _HEAD.size))
        if size == END:
            return slot, None
        at = slot * self.size
        return slot, self.shm.buf[at : at + size]

    def release(self, slot: int, view: memoryview) -> None:
        view.release()
        os.write(self.free_w, bytes((slot,)))

    def close(self, unlink: bool) -> None:
        for fd in (self.full_r, self.full_w, self.free_r, self.free_w):
            os.close(fd)
        self.shm.close()
        if unlink:
            self.shm.unlink()


def _read(fd: int, n: int) -> bytes:
    out = b""
    while len(out) < n:
        got = os.read(fd, n - len(out))
        if not got:
            raise EOFError("the other process closed the ring")
        out += got
    return out


class Pickle5:
    name = "pickle5"

    def __init__(self, shape: str) -> None:
        self.shape = shape

    def pack(self, kinds: list, rows: list) -> bytes:
        return pickle.dumps((kinds, rows), protocol=5)

    def unpack(self, buf) -> tuple[list, list]:
        return pickle.loads(buf)


class Msgpack:
    """msgspec MessagePack; ``shape`` is one letter per column (``PY_TYPES``)."""

    name = "msgpack"

    def __init__(self, shape: str) -> None:
        row = tuple[tuple(Optional[PY_TYPES[c]] for c in shape)]  # type: ignore[misc]  # noqa: UP045
        self.encoder = msgspec.msgpack.Encoder()
        self.decoder = msgspec.msgpack.Decoder(tuple[list[int], list[row]])  # type: ignore[valid-type]

    def pack(self, kinds: list, rows: list) -> bytes:
        return self.encoder.encode((kinds, rows))

    def unpack(self, buf) -> tuple[list, list]:
        kinds, rows = self.decoder.decode(buf)
        return kinds, rows


class Columns:
    """marshal of one list per column; DECIMAL as text, TIMESTAMP as ISO text."""

    name = "columns"

    def __init__(self, shape: str) -> None:
        self.shape = shape

    def pack(self, kinds: list, rows: list) -> bytes:
        cols = list(zip(*rows, strict=True)) if rows else [() for _ in self.shape]
        packed = [_column(c, col) for c, col in zip(self.shape, cols, strict=True)]
        return marshal.dumps((list(map(int, kinds)), packed))  # kinds may be RowKind

    def unpack(self, buf) -> tuple[list, list]:
        kinds, cols = marshal.loads(buf)
        built = [_rebuilt(c, col) for c, col in zip(self.shape, cols, strict=True)]
        if all(isinstance(b, repeat) for b in built):
            return kinds, [(None,) * len(self.shape)] * len(kinds)
        return kinds, list(zip(*built))  # noqa: B905  (repeat(None) columns are endless)


def _column(kind: str, col: tuple):
    """One column for marshal: (tag, values); tag 'n' all NULL, a capital letter some NULL."""
    if col.count(None) == len(col):
        return ("n", None)
    if kind in "is":
        return (kind, col)
    text = str if kind == "d" else dt.datetime.isoformat
    if None in col:
        return (kind.upper(), [None if v is None else text(v) for v in col])
    return (kind, list(map(text, col)))


_FROM_TEXT = {"d": Decimal, "t": dt.datetime.fromisoformat}


def _rebuilt(kind: str, packed):
    tag, values = packed
    if tag == "n":
        return repeat(None)
    if tag in "is":
        return values
    if tag in _FROM_TEXT:
        return map(_FROM_TEXT[tag], values)
    back = _FROM_TEXT[tag.lower()]
    return [None if v is None else back(v) for v in values]


CODECS = {c.name: c for c in (Pickle5, Msgpack, Columns)}


def check(codec, kinds: list, rows: list) -> None:
    """Raises unless ``codec`` gives back these kinds and rows (DECIMAL exponents too)."""
    got_kinds, got_rows = codec.unpack(codec.pack(kinds, rows))
    if list(got_kinds) != list(kinds) or [tuple(r) for r in got_rows] != rows:
        raise AssertionError(f"{codec.name}: the rows came back different")
    if repr(list(map(tuple, got_rows))) != repr(rows):
        raise AssertionError(f"{codec.name}: the values came back with other types or exponents")
