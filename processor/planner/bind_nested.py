"""Binding nested-type syntax: ``r.f`` / ``t.r.f.g`` paths into ROW columns, ``(expr).f``,
``arr[i]`` / ``map[k]`` and the ROW constructor ``(a, b)``.

A dotted name is read as Calcite reads it: the longest prefix naming a column (qualified by
its table alias or not) is the column, the rest are field names, read left to right.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from deltaflow.formats.types import ROW
from deltaflow.processor.exprs.functions import infer_call
from deltaflow.processor.exprs.nested import field_access
from deltaflow.processor.exprs.nodes import Expr, InputRef

Bind = Callable[[exp.Expr], Expr]


def column_parts(node: exp.Column) -> list[str]:
    """``catalog.db.table.name`` of a sqlglot Column, the parts that are present."""
    keys = ("catalog", "db", "table", "this")
    return [node.args[k].name for k in keys if node.args.get(k) is not None]


def resolve_path(scope, parts: list[str]) -> Expr | None:  # noqa: ANN001 - bind_exprs.Scope
    """The column and fields ``parts`` names, or None when no reading names a ROW column."""
    for start, qualified in ((0, True), (0, False), (1, True)):
        head = parts[start:]
        if qualified and len(head) < 2:
            continue
        qual, name = (head[0], head[1]) if qualified else (None, head[0])
        fields = head[2:] if qualified else head[1:]
        if not fields:
            continue
        hits = [
            i
            for i, c in enumerate(scope.columns)
            if c.name == name and (qual is None or c.qualifier == qual)
        ]
        if len(hits) != 1:
            continue
        if scope.columns[hits[0]].type.root != ROW:
            if not qualified and all(c.qualifier != name for c in scope.columns):
                field_access(InputRef(scope.columns[hits[0]].type, hits[0]), fields[0])  # raises
            continue
        expr: Expr = InputRef(scope.columns[hits[0]].type, hits[0])
        for f in fields:
            expr = field_access(expr, f)
        return expr
    return None


def bind_dot(node: exp.Dot, scope, bind: Bind) -> Expr:  # noqa: ANN001 - bind_exprs.Scope
    """``a.b.c.d.e`` (more parts than a Column holds) and ``(expr).field``."""
    fields: list[str] = []
    base: exp.Expr = node
    while isinstance(base, exp.Dot):
        fields.insert(0, base.expression.name)
        base = base.this
    if isinstance(base, exp.Column):
        resolved = resolve_path(scope, column_parts(base) + fields)
        if resolved is not None:
            return resolved
    expr = bind(base)
    for f in fields:
        expr = field_access(expr, f)
    return expr


def bind_bracket(node: exp.Bracket, bind: Bind) -> Expr:
    """``arr[i]``, ``map[k]`` and the constructor ``MAP[k1, v1, ...]``."""
    base = node.this
    if isinstance(base, exp.Column) and not base.table and base.name.upper() == "MAP":
        quoted = isinstance(base.this, exp.Identifier) and base.this.quoted
        if not quoted:
            return infer_call("MAP", [bind(e) for e in node.expressions])
    if len(node.expressions) != 1:
        return infer_call("ITEM", [bind(node.this), *(bind(e) for e in node.expressions)])
    return infer_call("ITEM", [bind(node.this), bind(node.expressions[0])])


def bind_array(node: exp.Array, bind: Bind) -> Expr:
    return infer_call("ARRAY", [bind(e) for e in node.expressions])


def bind_row(node: exp.Tuple, bind: Bind) -> Expr:
    return infer_call("ROW", [bind(e) for e in node.expressions])
