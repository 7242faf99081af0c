"""The changelog model: row kinds, and batches of changes.

A batch is two parallel lists: ``kinds`` (``RowKind`` values, which are ints) and
``rows`` (tuples of Python values, one per column, ``None`` for NULL). Operators
take a batch and return a batch; a -U/+U pair is never split across batches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class RowKind(IntEnum):
    """Flink's RowKind, with the same byte values (0..3)."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    @property
    def short(self) -> str:
        return SHORT[self]

    @property
    def is_addition(self) -> bool:
        """+I and +U add a row to the table a changelog describes; -U and -D remove one."""
        return self in (RowKind.INSERT, RowKind.UPDATE_AFTER)

    @classmethod
    def parse(cls, short: str) -> RowKind:
        try:
            return _BY_SHORT[short]
        except KeyError:
            raise ValueError(f"unknown row kind {short!r}; expected one of +I, -U, +U, -D") from None


INSERT = RowKind.INSERT
UPDATE_BEFORE = RowKind.UPDATE_BEFORE
UPDATE_AFTER = RowKind.UPDATE_AFTER
DELETE = RowKind.DELETE

SHORT = ("+I", "-U", "+U", "-D")
_BY_SHORT = {s: RowKind(i) for i, s in enumerate(SHORT)}
# Kinds that add a row (index by int kind): +I, +U.
ADDS = (True, False, True, False)


class Truncated(tuple):
    """The row of the -D a changelog format gives for a truncate of the whole table
    (Debezium's ``op: t``) when the source takes before-images from its state: the
    source's normalizer replaces it by a -D of every row it holds, so it never reaches an
    operator. A row of no columns, told apart by identity (``row is TRUNCATED``)."""

    __slots__ = ()


TRUNCATED = Truncated()


@dataclass(slots=True)
class Batch:
    """A batch of changes: parallel lists of kinds and row tuples."""

    kinds: list[int] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.kinds)

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def append(self, kind: int, row: tuple) -> None:
        self.kinds.append(kind)
        self.rows.append(row)

    def extend(self, other: Batch) -> None:
        self.kinds.extend(other.kinds)
        self.rows.extend(other.rows)

    def pairs(self) -> list[tuple[RowKind, tuple]]:
        return [(RowKind(k), r) for k, r in zip(self.kinds, self.rows, strict=True)]


@dataclass(slots=True)
class RawBatch:
    """Undecoded records from one topic partition (or one file), in offset order.

    Columnar so that a decoder loops once over plain lists. ``timestamps`` are
    Kafka record timestamps in epoch milliseconds (0 when unknown).
    """

    topic: str
    partition: int
    offsets: list[int]
    values: list[bytes | None]
    keys: list[bytes | None] = field(default_factory=list)
    timestamps: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.values)


def apply_changelog(kinds: list[int], rows: list[tuple]) -> list[tuple]:
    """The multiset a changelog describes, as a sorted list (for tests and tools).

    +I/+U add one copy of the row, -U/-D remove one copy; removing a row that is
    not there raises ``ValueError``.
    """
    counts: dict[tuple, int] = {}
    for kind, row in zip(kinds, rows, strict=True):
        if ADDS[kind]:
            counts[row] = counts.get(row, 0) + 1
        else:
            n = counts.get(row, 0)
            if n == 0:
                raise ValueError(f"{SHORT[kind]}{list(row)} retracts a row that is not there")
            if n == 1:
                del counts[row]
            else:
                counts[row] = n - 1
    out: list[tuple] = []
    for row, n in counts.items():
        out.extend([row] * n)
    out.sort(key=_sort_key)
    return out


def _sort_key(row: tuple) -> tuple:
    return tuple((v is None, str(type(v)), v if v is not None else 0) for v in row)
