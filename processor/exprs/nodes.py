"""Bound scalar expressions: plain data, columns by index, every node typed.

The planner builds them (binding SQL to the catalog); the runtime compiles them to
Python functions once (``deltaflow.processor.exprs.compile``). Neither side
interprets a tree per row.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deltaflow.formats.types import DataType


@dataclass(frozen=True, slots=True)
class Expr:
    type: DataType


@dataclass(frozen=True, slots=True)
class InputRef(Expr):
    """Column ``index`` of the input row (for a join condition: left columns then right)."""

    index: int


@dataclass(frozen=True, slots=True)
class Literal(Expr):
    """A constant; ``value`` is the Python value of ``type`` (None for NULL)."""

    value: object


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """A built-in operator or function by its canonical upper-case name.

    Operators use their SQL spelling: ``+ - * / % = <> < <= > >= AND OR NOT
    IS NULL, IS NOT NULL, IS TRUE ... LIKE, IN, BETWEEN, CASE, CAST, TRY_CAST``;
    functions their Flink name: ``UPPER``, ``SUBSTRING``, ``COALESCE``, ``NOW`` ...
    ``CASE`` operands are ``when1, then1, when2, then2, ..., else``.
    ``CAST`` has one operand; the target is ``type``.
    ``pos``: where the expression starts in the job's SQL (line, column; 0 when made by the
    planner), named by a runtime error of the expression; not part of its identity.
    """

    op: str
    operands: tuple[Expr, ...]
    pos: tuple[int, int] = field(default=(0, 0), compare=False, repr=False)  # SQL (line, col)


@dataclass(frozen=True, slots=True)
class UdfCall(Expr):
    """A Python user function from ``CREATE FUNCTION name AS 'module.attr' LANGUAGE PYTHON``."""

    name: str
    target: str  # 'module.attr'
    operands: tuple[Expr, ...]
    deterministic: bool = True
    pos: tuple[int, int] = field(default=(0, 0), compare=False, repr=False)  # SQL (line, col)


def input_refs(expr: Expr) -> set[int]:
    """Column indexes an expression reads."""
    if isinstance(expr, InputRef):
        return {expr.index}
    out: set[int] = set()
    for child in children(expr):
        out |= input_refs(child)
    return out


def children(expr: Expr) -> tuple[Expr, ...]:
    if isinstance(expr, (Call, UdfCall)):
        return expr.operands
    return ()
