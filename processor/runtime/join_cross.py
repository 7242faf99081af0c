"""A join condition that only compares a column of one side with a column of the other,
evaluated over the other side's rows at C speed.

A regular join's condition is a compiled predicate of the joined row: a change of a
one-row side (the scalar subquery of TPC-H Q11 and Q22, joined ``ON TRUE`` with a
condition such as ``c_acctbal > avg``) builds a joined row with every row of the other
side and calls the predicate on each. When the condition is a conjunction (``AND``) of
TRUE literals and comparisons (``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``) of a column of
one side with a column of the other, it is instead taken apart into those comparisons:
the other side's compared values of a key are listed once per batch, each change compares
its one value with all of them by ``map`` of the ``operator`` function in C, and only the
rows that hold are joined.

Exactness: the predicate compiles such a comparison to the Python operator on the two
values (NULL giving NULL, so FALSE), and ``AND`` to TRUE exactly when every term is TRUE.
The fast path applies the same operator to the same values; a NULL on the changing side
matches nothing; a key whose other rows hold a NULL in a compared column, or a row with
several copies, is left to the predicate, as is any comparison that raises (mixed types:
the predicate then reports it as it always does).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress, repeat
from operator import add, eq, ge, gt, itemgetter, le, lt, ne
from typing import Any

from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, Literal

_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "=": eq,
    "<>": ne,
    "<": lt,
    "<=": le,
    ">": gt,
    ">=": ge,
}
_SWAPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_entry_row = itemgetter(0)
_entry_copies = itemgetter(1)

# (left column, operator as ``left op right``, right column), columns within each side
Comparison = tuple[int, Callable[[Any, Any], Any], int]


def cross_comparisons(condition: Expr | None, left_width: int) -> tuple[Comparison, ...] | None:
    """The comparisons a join condition is the conjunction of (module docstring), each
    column counted within its own side, or None when it is anything else."""
    if condition is None:
        return None
    out: list[Comparison] = []
    if not _collect(condition, left_width, out) or not out:
        return None
    return tuple(out)


def _collect(e: Expr, left_width: int, out: list[Comparison]) -> bool:
    if isinstance(e, Literal):
        return e.value is True
    if not isinstance(e, Call):
        return False
    if e.op == "AND":
        return all(_collect(o, left_width, out) for o in e.operands)
    if e.op not in _OPS or len(e.operands) != 2:
        return False
    a, b = e.operands
    if not (isinstance(a, InputRef) and isinstance(b, InputRef)):
        return False
    if a.index < left_width <= b.index:
        out.append((a.index, _OPS[e.op], b.index - left_width))
        return True
    if b.index < left_width <= a.index:
        out.append((b.index, _OPS[_SWAPPED[e.op]], a.index - left_width))
        return True
    return False


class Prepared:
    """The other side's rows of one key (each there once) and their compared values, in
    the order the predicate path meets them."""

    __slots__ = ("columns", "rows")

    def __init__(self, rows: list[tuple], columns: list[tuple[list, Callable, int]]) -> None:
        self.rows = rows
        self.columns = columns


def prepare(
    entries: list[list], comparisons: tuple[Comparison, ...], mine_is_left: bool
) -> Prepared | None:
    """The other side's entries ``[row, copies, ...]`` of a key made ready for ``hits``, or
    None (a row with several copies, a NULL in a compared column: the predicate's)."""
    if any(map(ne, map(_entry_copies, entries), repeat(1))):
        return None
    rows = list(map(_entry_row, entries))
    columns = []
    for left, op, right in comparisons:
        mine, theirs = (left, right) if mine_is_left else (right, left)
        values = list(map(itemgetter(theirs), rows))
        if None in values:
            return None
        columns.append((values, op, mine))
    return Prepared(rows, columns)


def hits(prepared: Prepared, row: tuple, mine_is_left: bool) -> list[tuple] | None:
    """The joined rows of ``row`` (a change of the side that is not prepared) with the
    prepared rows the condition holds for, in their order; None when a comparison
    raised (the predicate's to report)."""
    masks = []
    try:
        for values, op, mine in prepared.columns:
            value = row[mine]
            if value is None:
                return []
            if mine_is_left:
                masks.append(list(map(op, repeat(value), values)))
            else:
                masks.append(list(map(op, values, repeat(value))))
    except (TypeError, ArithmeticError, ValueError):
        return None
    mask = masks[0] if len(masks) == 1 else list(map(all, zip(*masks, strict=True)))
    chosen = compress(prepared.rows, mask)
    if mine_is_left:
        return list(map(add, repeat(row), chosen))
    return list(map(add, chosen, repeat(row)))
