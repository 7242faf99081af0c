"""Code generators for the nested-type operators (see ``nested``): a field access is a tuple
index inline in the generated expression, not a lookup per row."""

from __future__ import annotations

from deltaflow.formats.types import ARRAY
from deltaflow.processor.exprs.codegen import Gen, generator
from deltaflow.processor.exprs.errors import EvalError
from deltaflow.processor.exprs.nodes import Call


def array_item(values: list, index: int) -> object:
    """``arr[index]``, 1-based; NULL past the end; an index below 1 is Flink's error."""
    if index < 1:
        raise EvalError(f"Array element access needs an index starting at 1 but was {index}.")
    return values[index - 1] if index <= len(values) else None


def element(values: list) -> object:
    if len(values) > 1:
        raise EvalError("ELEMENT: the array has more than one element")
    return values[0] if values else None


@generator("FIELD")
def _field(g: Gen, c: Call) -> str:
    row, index = c.operands
    return g.strict([row], lambda a: f"{a}[{index.value}]")  # type: ignore[attr-defined]


@generator("ROW")
def _row(g: Gen, c: Call) -> str:
    items = [g.expr(o) for o in c.operands]
    return f"({', '.join(items)},)"


@generator("ITEM")
def _item(g: Gen, c: Call) -> str:
    base = c.operands[0]
    if base.type.root == ARRAY:
        fn = g.bind(array_item, "_item")
        return g.strict(c.operands, lambda a, i: f"{fn}({a}, {i})")
    return g.strict(c.operands, lambda m, k: f"{m}.get({k})")


@generator("CARDINALITY")
def _cardinality(g: Gen, c: Call) -> str:
    return g.strict(c.operands, lambda a: f"len({a})")


@generator("ELEMENT")
def _element(g: Gen, c: Call) -> str:
    fn = g.bind(element, "_element")
    return g.strict(c.operands, lambda a: f"{fn}({a})")


@generator("ARRAY")
def _array(g: Gen, c: Call) -> str:
    return f"[{', '.join(g.expr(o) for o in c.operands)}]"


@generator("MAP")
def _map(g: Gen, c: Call) -> str:
    items = [g.expr(o) for o in c.operands]
    return "{" + ", ".join(f"{k}: {v}" for k, v in zip(items[0::2], items[1::2], strict=True)) + "}"


def unnest_values(values: list | None) -> list | None:
    """``UNNEST(array)`` of atomic elements: one one-column row per element (NULLs too)."""
    return None if values is None else [(v,) for v in values]


def unnest_rows(values: list | None) -> list | None:
    """``UNNEST(array of ROW)``: each element's fields as the columns."""
    return values


def unnest_map(values: dict | None) -> list | None:
    """``UNNEST(map)``: one (key, value) row per entry."""
    return None if values is None else list(values.items())


def replicate_rows(copies: int | None, *values: object) -> list | None:
    """``$REPLICATE_ROWS$1(n, a, b, ..)``: the row (a, b, ..) n times (INTERSECT / EXCEPT ALL)."""
    return None if not copies or copies < 0 else [values] * copies


def unnest_values_ordinality(values: list | None) -> list | None:
    """``UNNEST(array) WITH ORDINALITY``: (element, its position from 1) per element."""
    return None if values is None else [(v, i) for i, v in enumerate(values, 1)]


def unnest_rows_ordinality(values: list | None) -> list | None:
    """``UNNEST(array of ROW) WITH ORDINALITY``: each element's fields, then its position
    (a NULL element: its position alone, which the Correlate pads with NULL fields)."""
    if values is None:
        return None
    return [(*v, i) if v is not None else i for i, v in enumerate(values, 1)]


def unnest_map_ordinality(values: dict | None) -> list | None:
    """``UNNEST(map) WITH ORDINALITY``: (key, value, position from 1) per entry."""
    return None if values is None else [(k, v, i) for i, (k, v) in enumerate(values.items(), 1)]
