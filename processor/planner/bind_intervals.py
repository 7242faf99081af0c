"""Interval literals: ``INTERVAL '10' SECOND``, ``INTERVAL '1-2' YEAR TO MONTH``,
``INTERVAL '1 02:30:15.5' DAY TO SECOND``, ``INTERVAL '100' DAY(3)``.

A year-month interval is a count of months, a day-time interval a count of milliseconds
(the Python values of ``INTERVAL_YEAR_MONTH`` and ``INTERVAL_DAY_TIME``).
"""

from __future__ import annotations

import re

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import DataType
from deltaflow.processor.exprs.coercion import INTERVAL_DAY_TIME, INTERVAL_YEAR_MONTH
from deltaflow.processor.exprs.functions import literal
from deltaflow.processor.exprs.nodes import Expr
from deltaflow.processor.sql.errors import position

_DAY_TIME = ("DAY", "HOUR", "MINUTE", "SECOND")
_MILLIS = {"DAY": 86_400_000, "HOUR": 3_600_000, "MINUTE": 60_000, "SECOND": 1000, "MILLISECOND": 1}
_MONTHS = {"YEAR": 12, "MONTH": 1}
_SEPARATOR = re.compile(r"[ :]")


def interval_literal(node: exp.Interval) -> Expr:
    """The typed constant of an interval literal; SqlError naming the literal if unreadable."""
    start, end = _units(node.unit)
    if start not in _MONTHS and start not in _MILLIS or (end and not _span_ok(start, end)):
        raise SqlError(
            f"unsupported interval unit in {node.sql()!r}; use YEAR, MONTH, DAY, HOUR, MINUTE or "
            "SECOND, or a span such as YEAR TO MONTH or DAY TO SECOND", *position(node))  # fmt: skip
    text = str(node.this.this).strip() if isinstance(node.this, exp.Literal) else ""
    sign = -1 if text.startswith("-") else 1
    try:
        if start in _MONTHS:
            return literal(
                sign * _months(text.lstrip("+-"), start, end), DataType(INTERVAL_YEAR_MONTH)
            )
        return literal(sign * _millis(text.lstrip("+-"), start, end), DataType(INTERVAL_DAY_TIME))
    except ValueError:
        raise SqlError(
            f"cannot read the interval {node.sql()!r}; write a quoted number and a unit, such as "
            "INTERVAL '10' SECOND, or a span such as INTERVAL '1 02:30:00' DAY TO SECOND",
            *position(node)) from None  # fmt: skip


def _units(unit: exp.Expr | None) -> tuple[str, str | None]:
    if unit is None:
        return "SECOND", None
    if isinstance(unit, exp.IntervalSpan):
        return _unit_name(unit.this), _unit_name(unit.expression)
    return _unit_name(unit), None


def _unit_name(unit: exp.Expr) -> str:
    # DAY(3) arrives as a function node whose key is the unit; a plain unit as a Var
    name = unit.name if isinstance(unit, exp.Var) else unit.key
    return name.upper().rstrip("S")


def _span_ok(start: str, end: str) -> bool:
    if start in _MONTHS:
        return (start, end) == ("YEAR", "MONTH")
    return start in _DAY_TIME and end in _DAY_TIME and _DAY_TIME.index(start) < _DAY_TIME.index(end)


def _months(text: str, start: str, end: str | None) -> int:
    if end is None:
        return round(float(text) * _MONTHS[start])
    years, _, months = text.partition("-")
    return int(years) * 12 + int(months or "0")


def _millis(text: str, start: str, end: str | None) -> int:
    if end is None:
        return round(float(text) * _MILLIS[start])
    fields = _DAY_TIME[_DAY_TIME.index(start) : _DAY_TIME.index(end) + 1]
    values = _SEPARATOR.split(text)
    if len(values) != len(fields):
        raise ValueError(text)
    return round(sum(float(v) * _MILLIS[f] for v, f in zip(values, fields, strict=True)))
