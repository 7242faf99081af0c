"""INSERT INTO binding: the query's columns matched to the sink's persisted columns."""

from __future__ import annotations

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import DataType
from deltaflow.processor.plan import Field
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.relation import Rel
from deltaflow.processor.planner.relops import cast_rel
from deltaflow.processor.sql.ddl import Column
from deltaflow.processor.sql.errors import closest
from deltaflow.processor.sql.statements import Insert


def bind_insert(binder, insert: Insert) -> L.Sink:  # noqa: ANN001 - QueryBinder
    table = binder.catalog.table(insert.table, insert.pos)
    rel = binder.query(insert.query)
    targets = _targets(list(table.persisted), insert, table.name)
    _check_types(rel, targets, table.qualified, insert)
    node = cast_rel(rel, [c.type for c in targets])  # type: ignore[misc]
    pk = tuple(i for i, c in enumerate(targets) if c.name in table.primary_key)
    fields = [Field(c.name, f.type) for f, c in zip(node.fields, targets, strict=True)]
    return L.Sink([node], fields, table=table, primary_key=pk, on_conflict=insert.on_conflict)


_NUMERIC_ORDER = ("TINYINT", "SMALLINT", "INT", "BIGINT", "DECIMAL", "FLOAT", "DOUBLE")
_FAMILIES = ({"CHAR", "VARCHAR"}, {"BINARY", "VARBINARY"})


def implicit_cast_ok(src: DataType, dst: DataType) -> bool:
    """Flink's implicit casts into a sink column: numeric widening, any string or binary
    length, any fractional-second precision, and equal types (nullability aside)."""
    if src.root == "NULL" or src.with_nullable(True) == dst.with_nullable(True):
        return True
    if src.root in _NESTED and src.root == dst.root:
        return _same_nested(src, dst)
    if src.root in _NUMERIC_ORDER and dst.root in _NUMERIC_ORDER:
        return _NUMERIC_ORDER.index(src.root) <= _NUMERIC_ORDER.index(dst.root)
    if any(src.root in f and dst.root in f for f in _FAMILIES):
        return True
    return src.root == dst.root and src.root in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME")


_NESTED = ("ARRAY", "MULTISET", "MAP", "ROW")


def _same_nested(src: DataType, dst: DataType) -> bool:
    """A nested value goes into a sink column of the same shape: equal element, key, value and
    field types but for nullability, ROW fields matched by position (their names aside, as
    Flink: ``ROW(a, b)`` fills a ``ROW<x INT, y STRING>`` column)."""
    pairs = [(src.element, dst.element), (src.value, dst.value)]
    if len(src.fields) != len(dst.fields):
        return False
    pairs += [(a, b) for (_, a), (_, b) in zip(src.fields, dst.fields, strict=True)]
    for a, b in pairs:
        if (a is None) != (b is None):
            return False
        if a is not None and b is not None and not (
            a.with_nullable(True) == b.with_nullable(True) or a.root == b.root and a.root in _NESTED
            and _same_nested(a, b)
        ):  # fmt: skip
            return False
    return True


def _check_types(rel: Rel, targets: list[Column], table: str, insert: Insert) -> None:
    """Flink's check, with its message: same column count, each query type implicitly castable."""
    cause = None
    if len(rel.columns) != len(targets):
        cause = "Different number of columns."
    else:
        for i, (col, target) in enumerate(zip(rel.columns, targets, strict=True)):
            if not implicit_cast_ok(col.type, target.type):  # type: ignore[arg-type]
                cause = f"Incompatible types for sink column '{target.name}' at position {i + 1}."
                break
    if cause is None:
        return
    query = ", ".join(f"{c.name}: {c.type.sql()}" for c in rel.columns)
    sink = ", ".join(f"{c.name}: {c.type.sql()}" for c in targets)  # type: ignore[union-attr]
    raise SqlError(
        f"Column types of query result and sink for '{table}' do not match. Cause: {cause} "
        f"Query schema: [{query}] Sink schema: [{sink}]; select columns of these types, or CAST them",
        *insert.pos,
    )


def _targets(columns: list[Column], insert: Insert, table: str) -> list[Column]:
    if not insert.columns:
        return columns
    names = [c.name for c in columns]
    for c in insert.columns:
        if c not in names:
            raise SqlError(
                f"column {c!r} is not a column of {table}{closest(c, names)}", *insert.pos
            )
    return [columns[names.index(c)] for c in insert.columns]


__all__ = ["bind_insert"]
