"""DATE_FORMAT with a constant pattern: the pattern compiled once into one function.

``lib_temporal.format_pattern`` reads the pattern's tokens and formats each field on
every call. ``compile_pattern`` turns a pattern into one ``%`` template with one slot
per field, the same text field by field (``_slot`` mirrors ``lib_temporal._field``),
so a value costs one C-level format. A pattern whose fields are all fields of the date
(year, month, day, day of week or of year, and literal text) gives the same text for
every value of one day, so its function keeps the texts of the days it has seen, by
the day's ordinal (up to ``DAYS_KEPT``, then it starts over): the text of a value is a
dict lookup for all but the first value of each day.
"""

from __future__ import annotations

import calendar
import functools
from collections.abc import Callable

from deltaflow.formats.generated import define
from deltaflow.processor.exprs.lib_temporal import _tokens, format_timestamp

DAYS_KEPT = 4096
_DATE_LETTERS = frozenset("yMdED")


def _slot(letter: str, width: int) -> tuple[str, str]:
    """(template slot, Python expression over ``v``) of one pattern letter."""
    if letter == "y":
        return ("%02d", "v.year % 100") if width == 2 else (f"%0{width}d", "v.year")
    if letter == "M":
        if width >= 4:
            return "%s", "_month_name[v.month]"
        return ("%s", "_month_abbr[v.month]") if width == 3 else (f"%0{width}d", "v.month")
    if letter == "S":
        if width <= 6:
            return "%s", f"('%06d' % v.microsecond)[:{width}]"
        return "%s", f"('%06d' % v.microsecond) + {'0' * (width - 6)!r}"
    if letter == "E":
        return "%s", "v.strftime('%A')" if width >= 4 else "v.strftime('%a')"
    if letter == "a":
        return "%s", "('AM' if v.hour < 12 else 'PM')"
    if letter == "h":
        return f"%0{width}d", "((v.hour % 12) or 12)"
    attribute = {"d": "v.day", "H": "v.hour", "m": "v.minute", "s": "v.second"}
    if letter in attribute:
        return f"%0{width}d", attribute[letter]
    if letter == "D":
        return f"%0{width}d", "v.timetuple().tm_yday"
    return (letter * width).replace("%", "%%"), ""


_SOURCE = """\
def fmt(v):
    return T % ({values})
def by_day(v):
    text = kept.get(k := v.toordinal())
    if text is None:
        if len(kept) >= LIMIT:
            kept.clear()
        text = kept[k] = T % ({values})
    return text
"""


@functools.lru_cache(maxsize=128)
def compile_pattern(pattern: str) -> Callable[[object], str]:
    """``fmt(value) -> text``, the text ``format_pattern(value, pattern)`` gives."""
    template: list[str] = []
    values: list[str] = []
    letters: set[str] = set()
    for tok, width in _tokens(pattern):
        if tok.startswith("'"):
            template.append(tok[1:].replace("%", "%%"))
            continue
        slot, value = _slot(tok, width)
        template.append(slot)
        if value:
            values.append(value)
            letters.add(tok)
    scope: dict[str, object] = {
        "T": "".join(template),
        "_month_name": calendar.month_name,
        "_month_abbr": calendar.month_abbr,
        "kept": {},
        "LIMIT": DAYS_KEPT,
    }
    if not values:
        text = "".join(template).replace("%%", "%")
        return lambda v: text
    source = _SOURCE.format(values="".join(f"{value}, " for value in values))
    name = "by_day" if letters <= _DATE_LETTERS else "fmt"
    return define(source, name, scope, f"date_format {pattern!r}")  # type: ignore[no-any-return]


_TIMESTAMP = "%04d-%02d-%02d %02d:%02d:%02d"


def timestamp_text(precision: int) -> Callable[[object], str]:
    """CAST(TIMESTAMP(p) AS STRING) as ``lib_temporal.format_timestamp`` writes it, by one
    ``%`` format instead of ``strftime`` (years before 1000, which ``strftime`` writes
    without padding, and precisions past 6, which read nanoseconds, go to it as before)."""
    if precision > 6:
        return lambda v: format_timestamp(v, precision)  # type: ignore[arg-type]
    if precision <= 0:

        def whole(v):  # type: ignore[no-untyped-def]
            if v.year < 1000:
                return format_timestamp(v, precision)
            return _TIMESTAMP % (v.year, v.month, v.day, v.hour, v.minute, v.second)

        return whole
    digits = precision

    def fraction(v):  # type: ignore[no-untyped-def]
        if v.year < 1000:
            return format_timestamp(v, precision)
        stamp = _TIMESTAMP % (v.year, v.month, v.day, v.hour, v.minute, v.second)
        return stamp + "." + f"{v.microsecond:06d}"[:digits]

    return fraction
