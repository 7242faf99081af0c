"""TIMESTAMP(7..9) values with nanoseconds: a ``datetime`` that also holds the
nanoseconds below its microsecond.

Python's ``datetime`` stops at microseconds. A TIMESTAMP(p > 6) value whose
nanoseconds are not a whole microsecond (a Debezium ``NanoTimestamp``, a
``ZonedTimestamp`` or timestamp text with 7 to 9 fraction digits) is a
``NanoDatetime``: the datetime of its microseconds plus ``nanos``, 1 to 999
nanoseconds beyond them. Every other value stays a plain ``datetime``, so the
common microsecond path never meets this class; ``with_nanos`` is the only way in
and gives a plain datetime when there is nothing beyond the microsecond.

A NanoDatetime is a datetime to everything that reads one (date parts, functions,
arithmetic on whole microseconds); equality, order and hashing count its
nanoseconds, also against plain datetimes (Python asks the subclass first).
``nanos_of`` reads the nanoseconds of any datetime.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

_datetime = dt.datetime
_eq = _datetime.__eq__
_lt = _datetime.__lt__
_hash = _datetime.__hash__


class NanoDatetime(_datetime):
    """A datetime plus ``nanos`` (1..999) nanoseconds beyond its microsecond."""

    # 0 only on results of datetime's own methods (``replace``), which drop the nanos;
    # a class attribute (no __slots__): those methods build instances without __new__
    nanos = 0

    def __new__(cls, *args: Any, nanos: int = 0, **kwargs: Any) -> NanoDatetime:
        self = _datetime.__new__(cls, *args, **kwargs)
        self.nanos = nanos
        return self

    def __reduce_ex__(self, protocol: object) -> tuple:
        return with_nanos, (plain(self), self.nanos)

    __reduce__ = __reduce_ex__  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _datetime):
            return NotImplemented
        return _eq(self, other) and self.nanos == nanos_of(other)

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash((_hash(self), self.nanos)) if self.nanos else _hash(self)

    def _cmp(self, other: object) -> int | None:
        if not isinstance(other, _datetime):
            return None
        if _eq(self, other):
            mine, theirs = self.nanos, nanos_of(other)
            return (mine > theirs) - (mine < theirs)
        return 1 if _lt(other, self) else -1

    def __lt__(self, other: object) -> bool:
        c = self._cmp(other)
        return NotImplemented if c is None else c < 0  # type: ignore[return-value]

    def __le__(self, other: object) -> bool:
        c = self._cmp(other)
        return NotImplemented if c is None else c <= 0  # type: ignore[return-value]

    def __gt__(self, other: object) -> bool:
        c = self._cmp(other)
        return NotImplemented if c is None else c > 0  # type: ignore[return-value]

    def __ge__(self, other: object) -> bool:
        c = self._cmp(other)
        return NotImplemented if c is None else c >= 0  # type: ignore[return-value]

    def __add__(self, other: object) -> Any:
        result = _datetime.__add__(self, other)  # type: ignore[operator]
        if isinstance(result, _datetime):
            return with_nanos(plain(result), self.nanos)
        return result

    __radd__ = __add__

    def __sub__(self, other: object) -> Any:
        if isinstance(other, _datetime):
            return _datetime.__sub__(plain(self), plain(other))  # whole microseconds
        result = _datetime.__sub__(self, other)  # type: ignore[operator]
        if isinstance(result, _datetime):
            return with_nanos(plain(result), self.nanos)
        return result

    def replace(self, *args: Any, **kwargs: Any) -> Any:
        """As datetime's; a new ``microsecond`` drops the nanoseconds (truncation)."""
        out = plain(self).replace(*args, **kwargs)
        kept = "microsecond" not in kwargs and len(args) < 7
        return with_nanos(out, self.nanos if kept else 0)

    def astimezone(self, tz: dt.tzinfo | None = None) -> Any:
        return with_nanos(plain(self).astimezone(tz), self.nanos)

    def __repr__(self) -> str:
        return f"with_nanos({plain(self)!r}, {self.nanos})"

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        """ISO-8601 with all nine fraction digits (``timespec`` ``auto``)."""
        text = plain(self).isoformat(sep, "microseconds" if timespec == "auto" else timespec)
        if timespec != "auto":
            return text
        stop = 26 if len(text) >= 26 else len(text)
        return f"{text[:stop]}{self.nanos:03d}{text[stop:]}"

    __str__ = isoformat  # type: ignore[assignment]


def plain(value: _datetime) -> _datetime:
    """The datetime of ``value``'s whole microseconds, as a plain ``datetime``."""
    if type(value) is _datetime:
        return value
    return _datetime(
        value.year,
        value.month,
        value.day,
        value.hour,
        value.minute,
        value.second,
        value.microsecond,
        value.tzinfo,
        fold=value.fold,
    )


def with_nanos(value: _datetime, nanos: int) -> _datetime:
    """``value`` (whole microseconds) plus ``nanos`` (0..999): a NanoDatetime only when
    ``nanos`` is not zero."""
    if not nanos:
        return plain(value)
    out = NanoDatetime(
        value.year,
        value.month,
        value.day,
        value.hour,
        value.minute,
        value.second,
        value.microsecond,
        value.tzinfo,
        fold=value.fold,
        nanos=nanos,
    )
    return out


def nanos_of(value: object) -> int:
    """The nanoseconds beyond the microsecond of a datetime (0 for a plain one)."""
    return getattr(value, "nanos", 0)


def nano_fraction(value: _datetime) -> int:
    """The fraction of the second of a datetime in nanoseconds."""
    return value.microsecond * 1000 + getattr(value, "nanos", 0)


def truncate(value: _datetime, precision: int) -> _datetime:
    """``value`` with the fraction digits beyond ``precision`` (0..9) dropped."""
    if precision >= 9:
        return value
    nanos = getattr(value, "nanos", 0)
    if precision >= 6:
        if not nanos:
            return value
        step = 10 ** (9 - precision)
        return with_nanos(value, nanos // step * step)
    step = 10 ** (6 - precision)
    micro = value.microsecond // step * step
    if micro == value.microsecond and not nanos:
        return value
    return plain(value).replace(microsecond=micro)
