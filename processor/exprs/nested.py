"""Typing of the nested-type operators: ROW field access, the ROW constructor, ``[]`` on
ARRAY and MAP, ``CARDINALITY`` and ``ELEMENT``.

Field access is ``Call('FIELD', (row, index))`` with the field's position as an INT
literal: the generated code indexes the row's tuple directly. ``ITEM`` is ``arr[i]``
(1-based, as Flink's; an index past either end gives NULL) and ``map[key]``.
"""

from __future__ import annotations

from collections.abc import Callable

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import (
    ARRAY,
    INT,
    INTEGER_ROOTS,
    MAP,
    MULTISET,
    NULL,
    ROW,
    DataType,
)
from deltaflow.processor.exprs.coercion import common_type
from deltaflow.processor.exprs.nodes import Call, Expr, Literal
from deltaflow.processor.exprs.operators import to_type


class NestedError(SqlError):
    """A field that a ROW lacks, ``[]`` on a value that is neither ARRAY nor MAP ..."""


def field_access(row: Expr, name: str) -> Call:
    """``row.name``; nullable when the row or the field is."""
    names = [n for n, _ in row.type.fields]
    if row.type.root != ROW:
        raise NestedError(
            f"cannot read field '{name}' of a {row.type.sql()} value; only ROW values have fields"
        )
    if name not in names:
        raise NestedError(
            f"Unknown field '{name}' in {row.type.sql()}; its fields are {', '.join(names)}"
        )
    index = names.index(name)
    ftype = row.type.fields[index][1]
    index_lit = Literal(DataType(INT, nullable=False), index)
    return Call(ftype.with_nullable(ftype.nullable or row.type.nullable), "FIELD", (row, index_lit))


def field_name(call: Call) -> str:
    """The name of the field a FIELD call reads."""
    row, index = call.operands
    return row.type.fields[index.value][0]  # type: ignore[attr-defined,index]


def holds_collection(t: DataType) -> bool:
    """Whether values of ``t`` hold a list or a dict (ARRAY, MAP, MULTISET, also inside a ROW):
    such values cannot be group or join keys in the runtime yet."""
    if t.root in (ARRAY, MAP, MULTISET):
        return True
    return t.root == ROW and any(holds_collection(f) for _, f in t.fields)


def _row(op: str, operands: list[Expr]) -> Call:
    if not operands:
        raise NestedError("ROW() needs at least one value")
    fields = tuple((f"EXPR${i}", o.type) for i, o in enumerate(operands))
    return Call(DataType(ROW, nullable=False, fields=fields), "ROW", tuple(operands))


def _item(op: str, operands: list[Expr]) -> Call:
    if len(operands) != 2:
        raise NestedError("[] takes one index or key")
    base, index = operands
    t = base.type
    if t.root == ARRAY:
        if index.type.root not in INTEGER_ROOTS | {NULL}:
            raise NestedError(f"an ARRAY is indexed by an integer, not {index.type.sql()}")
        return Call(t.element.with_nullable(True), "ITEM", (base, index))  # type: ignore[union-attr]
    if t.root == MAP:
        key = t.element
        if common_type([key, index.type]) is None:  # type: ignore[list-item]
            raise NestedError(f"a {t.sql()} is looked up by {key.sql()}, not {index.type.sql()}")  # type: ignore[union-attr]
        return Call(t.value.with_nullable(True), "ITEM", (base, index))  # type: ignore[union-attr]
    raise NestedError(f"[] applies to an ARRAY or a MAP, not to {t.sql()}")


def _cardinality(op: str, operands: list[Expr]) -> Call:
    if len(operands) != 1 or operands[0].type.root not in (ARRAY, MAP, MULTISET):
        got = ", ".join(o.type.sql() for o in operands)
        raise NestedError(
            f"Invalid function call CARDINALITY({got}). Supported signatures: "
            "CARDINALITY(ARRAY); CARDINALITY(MAP); CARDINALITY(MULTISET)"
        )
    return Call(DataType(INT, nullable=operands[0].type.nullable), op, tuple(operands))


def _element(op: str, operands: list[Expr]) -> Call:
    if len(operands) != 1 or operands[0].type.root not in (ARRAY, MULTISET):
        got = ", ".join(o.type.sql() for o in operands)
        raise NestedError(
            f"Invalid function call ELEMENT({got}). Supported signatures: ELEMENT(ARRAY)"
        )
    element = operands[0].type.element  # as Flink: NULL for an empty array, typed as elements
    assert element is not None  # an ARRAY type has its element type
    return Call(
        element.with_nullable(element.nullable or operands[0].type.nullable), op, tuple(operands)
    )


def _common_of(what: str, exprs: list[Expr]) -> DataType:
    t = common_type([e.type for e in exprs])
    if t is None:
        types = ", ".join(e.type.sql() for e in exprs)
        raise NestedError(f"the {what} have no common type ({types})")
    return t


def _array(op: str, operands: list[Expr]) -> Call:
    if not operands:
        raise NestedError("ARRAY[] needs at least one element")
    element = _common_of("ARRAY elements", operands)
    values = tuple(to_type(o, element) for o in operands)
    return Call(DataType(ARRAY, nullable=False, element=element), op, values)


def _map(op: str, operands: list[Expr]) -> Call:
    if not operands or len(operands) % 2:
        raise NestedError("MAP[] takes keys and values in pairs: MAP[k1, v1, k2, v2, ...]")
    key = _common_of("MAP keys", operands[0::2])
    value = _common_of("MAP values", operands[1::2])
    pairs = [to_type(o, key if i % 2 == 0 else value) for i, o in enumerate(operands)]
    return Call(DataType(MAP, nullable=False, element=key, value=value), op, tuple(pairs))


INFER: dict[str, Callable[[str, list[Expr]], Call]] = {
    "ROW": _row,
    "ARRAY": _array,
    "MAP": _map,
    "ITEM": _item,
    "CARDINALITY": _cardinality,
    "ELEMENT": _element,
}
