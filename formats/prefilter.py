"""A pre-filter: conjuncts of a job's WHERE that a decoder may test on a change image
before it builds the image's row.

The planner records one on a source scan whose only consumer is a filtering Calc
(``deltaflow.processor.planner.prefilter``); a decoder that supports it drops each
row image failing a test, so the row is never built nor its DECIMAL/TIMESTAMP columns
converted. The Calc still runs on what is left, so a decoder may test fewer images,
or none, without changing the result: a pre-filter only has to be *sound* (drop no
image the Calc keeps), never complete.

Each test is a SQL comparison of one physical column with constants, with SQL's NULL
semantics for a WHERE: an image whose column is NULL passes only ``IS NULL``. A
decoder generates the test as Python code over the column's decoded value
(``Check.code``), the same comparison the Calc's compiled condition evaluates, so it
may only push a test on a column whose decoded value *is* the row's value (no
converter between them) and whose Python type the constants share (``fits``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltaflow.formats.types import BOOLEAN, INTEGER_ROOTS, STRING_ROOTS, DataType

COMPARISONS = {"=": "==", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
MEMBERSHIP = ("IN", "NOT IN")
NULL_TESTS = ("IS NULL", "IS NOT NULL")
OPS = (*COMPARISONS, *MEMBERSHIP, *NULL_TESTS)


class Rejected(tuple):
    """A row whose image failed its source's pre-filter, built for a source that takes
    before-images from state (``processor/runtime/normalize.py``): the key, the columns
    the tests read and every character or binary column (a TOAST placeholder may take
    its value later) are the image's, every other column None. The normalizer stores it
    so that it knows the key and never emits it: the Calc would drop it."""

    __slots__ = ()


@dataclass(frozen=True)
class Check:
    """One test ``column op value``: ``value`` is one constant for a comparison, a frozenset of
    constants for IN / NOT IN (no NULL among them), None for IS [NOT] NULL."""

    column: str
    op: str
    value: Any = None

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"pre-filter operator {self.op!r} is not one of {', '.join(OPS)}")
        if self.op in MEMBERSHIP and (type(self.value) is not frozenset or None in self.value):
            raise ValueError("IN / NOT IN take a frozenset of constants without NULL")
        if self.op in COMPARISONS and self.value is None:
            raise ValueError("a comparison with NULL is never true; do not push it")

    def constants(self) -> list[Any]:
        if self.op in NULL_TESTS:
            return []
        return list(self.value) if self.op in MEMBERSHIP else [self.value]

    def code(self, field: str, constant: str) -> str:
        """Python that is true when the test holds for the value ``field`` (an attribute
        read, evaluated more than once); ``constant`` names ``value`` in the scope."""
        if self.op == "IS NULL":
            return f"{field} is None"
        if self.op == "IS NOT NULL":
            return f"{field} is not None"
        if self.op == "=":
            return f"{field} == {constant}"  # None == constant is False
        if self.op == "IN":
            return f"{field} in {constant}"  # None is not a member
        op = "not in" if self.op == "NOT IN" else COMPARISONS[self.op]
        return f"({field} is not None and {field} {op} {constant})"


@dataclass(frozen=True)
class PreFilter:
    """Tests that must all hold for a row image to reach the Calc (an AND)."""

    tests: tuple[Check, ...]

    def __bool__(self) -> bool:
        return bool(self.tests)

    def columns(self) -> set[str]:
        return {t.column for t in self.tests}

    def code(self, fields: dict[str, str], prefix: str) -> tuple[str | None, dict[str, Any]]:
        """A Python condition over the decoded values named in ``fields`` (column name ->
        expression), and the constants it uses (names start with ``prefix``). Tests on
        columns missing from ``fields`` are left out; None when none is left."""
        parts: list[str] = []
        scope: dict[str, Any] = {}
        for n, test in enumerate(self.tests):
            field = fields.get(test.column)
            if field is None:
                continue
            name = f"{prefix}{n}"
            scope[name] = test.value
            parts.append(test.code(field, name))
        if not parts:
            return None, {}
        return " and ".join(f"({p})" for p in parts), scope


def fits(test: Check, dtype: DataType) -> bool:
    """Whether the test's constants are the Python values a column of ``dtype`` holds,
    so comparing them raises nothing and means what the Calc's comparison means:
    ``str`` for character strings, ``int`` for integers, ``bool`` for BOOLEAN."""
    root = dtype.root
    if root in STRING_ROOTS:
        want: type = str
    elif root in INTEGER_ROOTS:
        want = int
    elif root == BOOLEAN:
        want = bool
    else:
        return False
    return all(type(v) is want for v in test.constants())
