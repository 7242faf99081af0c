"""Date and time helpers called by compiled expressions (Flink's temporal functions).

TIMESTAMP values are naive datetimes; TIMESTAMP_LTZ values are UTC-aware datetimes and
are shown in (and parsed from) the session time zone, ``table.local-time-zone``.
Format patterns are Java ``SimpleDateFormat`` patterns, as in Flink.
"""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import re
from typing import Any
from zoneinfo import ZoneInfo

from deltaflow.formats.nanos import truncate as truncate_nanos

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1)
DEFAULT_FORMAT = "yyyy-MM-dd HH:mm:ss"


@functools.lru_cache(maxsize=64)
def zone(name: str) -> dt.tzinfo:
    if name.upper() in ("UTC", "Z", "GMT"):
        return UTC
    return ZoneInfo(name)


def to_local(value: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    """A TIMESTAMP_LTZ value as the wall-clock time in ``tz`` (naive)."""
    return value.astimezone(tz).replace(tzinfo=None)


def from_local(value: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    """A wall-clock time in ``tz`` as a TIMESTAMP_LTZ value (UTC-aware)."""
    return value.replace(tzinfo=tz).astimezone(UTC)


def now_ltz() -> dt.datetime:
    now = dt.datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def now_local(tz: dt.tzinfo) -> dt.datetime:
    return to_local(now_ltz(), tz)


def epoch_seconds(value: dt.datetime) -> int:
    return int((value - EPOCH).total_seconds() // 1)


def from_epoch(amount: float | int, precision: int = 3) -> dt.datetime:
    """TO_TIMESTAMP_LTZ(numeric, precision): epoch seconds (0) or milliseconds (3)."""
    millis = amount * 1000 if precision == 0 else amount
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=millis)


# ------------------------------------------------------------------ Java patterns

_TOKEN = re.compile(r"'([^']*)'|([A-Za-z])\2*|(.)", re.DOTALL)


@functools.lru_cache(maxsize=128)
def _tokens(pattern: str) -> tuple[tuple[str, int], ...]:
    """Pattern letters as (letter, width); literal text as ('', text-length) pairs."""
    out: list[tuple[str, int]] = []
    for m in _TOKEN.finditer(pattern):
        if m.group(1) is not None:
            out.append(("'" + (m.group(1) or "'"), 0))
        elif m.group(2):
            out.append((m.group(2), len(m.group(0))))
        else:
            out.append(("'" + m.group(3), 0))
    return tuple(out)


def _field(letter: str, width: int, v: dt.datetime) -> str:
    if letter == "y":
        return f"{v.year % 100:02d}" if width == 2 else f"{v.year:0{width}d}"
    if letter == "M":
        if width >= 4:
            return calendar.month_name[v.month]
        return calendar.month_abbr[v.month] if width == 3 else f"{v.month:0{width}d}"
    if letter == "S":
        return f"{v.microsecond:06d}"[:width].ljust(width, "0")
    if letter == "E":
        return v.strftime("%A") if width >= 4 else v.strftime("%a")
    if letter == "a":
        return "AM" if v.hour < 12 else "PM"
    numbers = {"d": v.day, "H": v.hour, "m": v.minute, "s": v.second, "D": v.timetuple().tm_yday}
    if letter == "h":
        return f"{(v.hour % 12) or 12:0{width}d}"
    if letter in numbers:
        return f"{numbers[letter]:0{width}d}"
    return letter * width


def format_pattern(value: dt.datetime, pattern: str) -> str:
    return "".join(
        tok[1:] if tok.startswith("'") else _field(tok, width, value)
        for tok, width in _tokens(pattern)
    )


_PARSE_FIELD = {"y": "year", "M": "month", "d": "day", "H": "hour", "m": "minute", "s": "second"}


@functools.lru_cache(maxsize=128)
def _parser(pattern: str) -> re.Pattern[str]:
    parts = []
    for tok, width in _tokens(pattern):
        if tok.startswith("'"):
            parts.append(re.escape(tok[1:]))
        elif tok == "S":
            parts.append(r"(?P<S>\d{1,9})")
        elif tok in _PARSE_FIELD:
            size = (
                r"\d{4}"
                if tok == "y" and width >= 4
                else r"\d{1,2}"
                if width <= 2
                else rf"\d{{{width}}}"
            )
            parts.append(f"(?P<{tok}>{size})")
        else:
            parts.append(".+?")
    return re.compile("".join(parts))


def parse_pattern(text: str, pattern: str) -> dt.datetime | None:
    """Parse with a Java pattern; None when the text does not match (Flink gives NULL)."""
    m = _parser(pattern).fullmatch(text.strip())
    if m is None:
        return None
    got = m.groupdict()
    fields: dict[str, Any] = {
        name: int(got[letter]) for letter, name in _PARSE_FIELD.items() if got.get(letter)
    }
    fields.setdefault("year", 1970)
    fields.setdefault("month", 1)
    fields.setdefault("day", 1)
    micro = int((got.get("S") or "0").ljust(6, "0")[:6])
    try:
        return dt.datetime(**fields, microsecond=micro)
    except ValueError:
        return None


# ------------------------------------------------------------------ SQL literal forms

_TS = re.compile(
    r"(\d{1,4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?"
)
_TIME = re.compile(r"(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?")


def parse_timestamp(text: str) -> dt.datetime | None:
    m = _TS.fullmatch(text.strip())
    if m is None:
        return None
    y, mo, d, h, mi, s, frac = m.groups()
    micro = int((frac or "0").ljust(6, "0")[:6])
    try:
        return dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), micro)
    except ValueError:
        return None


def parse_date(text: str) -> dt.date | None:
    value = parse_timestamp(text)
    return None if value is None else value.date()


def parse_time(text: str) -> dt.time | None:
    m = _TIME.fullmatch(text.strip())
    if m is None:
        return None
    h, mi, s, frac = m.groups()
    try:
        return dt.time(int(h), int(mi), int(s or 0), int((frac or "0").ljust(6, "0")[:6]))
    except ValueError:
        return None


def _fraction(micro: int, precision: int, nanos: int = 0) -> str:
    if precision <= 0:
        return ""
    return "." + f"{micro:06d}{nanos:03d}"[:precision]


def format_timestamp(value: dt.datetime, precision: int) -> str:
    """CAST(TIMESTAMP(p) AS STRING): ``yyyy-MM-dd HH:mm:ss`` plus p fraction digits
    (7 to 9 from the nanoseconds of a ``NanoDatetime``)."""
    frac = _fraction(value.microsecond, precision, getattr(value, "nanos", 0))
    return value.strftime("%Y-%m-%d %H:%M:%S") + frac


def format_time(value: dt.time, precision: int) -> str:
    return value.strftime("%H:%M:%S") + _fraction(value.microsecond, precision)


def truncate_micros(value, precision: int):  # type: ignore[no-untyped-def]
    """Drop fraction digits beyond ``precision`` (Flink truncates when narrowing)."""
    if precision >= 6:
        if precision < 9 and getattr(value, "nanos", None):
            return truncate_nanos(value, precision)
        return value
    step = 10 ** (6 - precision)
    return value.replace(microsecond=value.microsecond // step * step)


# ------------------------------------------------------------------ units

_FIXED_UNITS = {
    "MICROSECOND": dt.timedelta(microseconds=1),
    "MILLISECOND": dt.timedelta(milliseconds=1),
    "SECOND": dt.timedelta(seconds=1),
    "MINUTE": dt.timedelta(minutes=1),
    "HOUR": dt.timedelta(hours=1),
    "DAY": dt.timedelta(days=1),
    "WEEK": dt.timedelta(weeks=1),
}
_MONTH_UNITS = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}


def add_months(value, months: int):  # type: ignore[no-untyped-def]
    """Calendar month arithmetic; the day is clamped to the target month's length."""
    total = value.year * 12 + value.month - 1 + months
    year, month = divmod(total, 12)
    day = min(value.day, calendar.monthrange(year, month + 1)[1])
    return value.replace(year=year, month=month + 1, day=day)


def add_millis(value, millis: int):  # type: ignore[no-untyped-def]
    if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
        if isinstance(value, dt.time):
            moved = dt.datetime.combine(dt.date(2000, 1, 1), value) + dt.timedelta(
                milliseconds=millis
            )
            return moved.time()
        return value + dt.timedelta(milliseconds=millis)
    return value + dt.timedelta(days=millis // 86_400_000)


def timestampadd(unit: str, amount: int, value):  # type: ignore[no-untyped-def]
    if unit in _MONTH_UNITS:
        return add_months(value, amount * _MONTH_UNITS[unit])
    step = _FIXED_UNITS[unit] * amount
    if isinstance(value, dt.datetime):
        return value + step
    if step % dt.timedelta(days=1):
        return dt.datetime.combine(value, dt.time()) + step
    return value + step


def _as_datetime(value) -> dt.datetime:  # type: ignore[no-untyped-def]
    if isinstance(value, dt.time):
        return dt.datetime.combine(EPOCH.date(), value)
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None) if value.tzinfo else value
    return dt.datetime.combine(value, dt.time())


def timestampdiff(unit: str, start, end) -> int:  # type: ignore[no-untyped-def]
    """Whole ``unit``s from ``start`` to ``end``, truncated toward zero (Calcite's rule)."""
    a, b = _as_datetime(start), _as_datetime(end)
    if unit in _MONTH_UNITS:
        months = _subtract_months(b.date(), a.date())
        if add_months(a.date(), months) == b.date() and b.time() < a.time():
            months -= 1
        return int(months / _MONTH_UNITS[unit])
    delta = b - a
    step = _FIXED_UNITS[unit]
    q = abs(delta) // step
    return q if delta >= dt.timedelta(0) else -q


def _subtract_months(end: dt.date, start: dt.date) -> int:
    """Flink's month difference: the most months ``m`` with ``start + m months <= end``, where
    adding clamps to the month's last day (2024-01-31 to 2024-02-29 is one month)."""
    if end < start:
        return -_subtract_months(start, end)
    months = (end - start).days // 31
    while add_months(start, months) < end and add_months(start, months + 1) <= end:
        months += 1
    return months


def extract(unit: str, value) -> int:  # type: ignore[no-untyped-def]
    if isinstance(value, dt.time):
        parts = {"HOUR": value.hour, "MINUTE": value.minute, "SECOND": value.second}
        if unit in parts:
            return parts[unit]
        return _sub_second(unit, value.microsecond)
    if unit in ("YEAR", "MONTH", "DAY", "DAYOFMONTH"):
        return {"YEAR": value.year, "MONTH": value.month}.get(unit, value.day)
    if unit == "QUARTER":
        return (value.month - 1) // 3 + 1
    if unit == "WEEK":
        return value.isocalendar()[1]
    if unit in ("DOY", "DAYOFYEAR"):
        return value.timetuple().tm_yday
    if unit in ("DOW", "DAYOFWEEK"):
        return value.isoweekday() % 7 + 1
    if unit in ("ISODOW",):
        return value.isoweekday()
    if unit == "EPOCH":
        return epoch_seconds(_as_datetime(value))
    if not isinstance(value, dt.datetime):
        return 0
    return extract(unit, value.time())


def _sub_second(unit: str, micro: int) -> int:
    """Flink 2.3 gives the fraction of the second only: 13:45:30.123 has MILLISECOND 123."""
    if unit == "MILLISECOND":
        return micro // 1000
    if unit == "MICROSECOND":
        return micro
    raise ValueError(unit)


def floor_to(unit: str, value):  # type: ignore[no-untyped-def]
    """FLOOR(datetime TO unit)."""
    ts = _as_datetime(value)
    if unit == "YEAR":
        ts = ts.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    elif unit == "QUARTER":
        ts = ts.replace(
            month=(ts.month - 1) // 3 * 3 + 1, day=1, hour=0, minute=0, second=0, microsecond=0
        )
    elif unit == "MONTH":
        ts = ts.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    elif unit == "WEEK":  # weeks start on Sunday, as Calcite's
        day = ts.replace(hour=0, minute=0, second=0, microsecond=0)
        ts = day - dt.timedelta(days=day.isoweekday() % 7)
    else:
        step = _FIXED_UNITS[unit]
        ts = EPOCH + (ts - EPOCH) // step * step
    return _like(value, ts)


def ceil_to(unit: str, value):  # type: ignore[no-untyped-def]
    """CEIL(datetime TO unit): the next boundary unless already on one."""
    floor = floor_to(unit, value)
    if floor == value:
        return floor
    if isinstance(value, dt.time):
        return (_as_datetime(floor) + _FIXED_UNITS[unit]).time()
    if unit in _MONTH_UNITS:
        return add_months(floor, _MONTH_UNITS[unit])
    return _like(value, _as_datetime(floor) + _FIXED_UNITS[unit])


def _like(original, ts: dt.datetime):  # type: ignore[no-untyped-def]
    if isinstance(original, dt.time):
        return ts.time()
    if isinstance(original, dt.datetime):
        return ts.replace(tzinfo=original.tzinfo)
    return ts.date()
