"""``ORDER BY ... LIMIT n [OFFSET m]`` over a query: a Top-N without partition keys, as Flink
plans it (printed ``SortLimit``; the Rank operator over one partition runs it). ORDER BY
without LIMIT has no meaning for a continuous query and is refused with Flink's message."""

from __future__ import annotations

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.relation import Rel, fields_of
from deltaflow.processor.sql.errors import position

_NO_SORT = (
    "Sort on a non-time-attribute field is not supported. A continuous query has no final "
    "order; drop ORDER BY, or keep the top rows with ORDER BY ... LIMIT n"
)


def split_sort_limit(select: exp.Select) -> tuple[exp.Select, exp.Order | None, int, int | None]:
    """``select`` without its ORDER BY / LIMIT / OFFSET, and those: (order, offset, limit)."""
    order, limit, offset = (select.args.get(k) for k in ("order", "limit", "offset"))
    if order is not None and limit is None:
        raise SqlError(_NO_SORT, *position(order))
    if limit is not None and order is None:
        raise SqlError(
            "LIMIT without ORDER BY is not supported yet; say which rows to keep with "
            "ORDER BY ... LIMIT n", *position(limit))  # fmt: skip
    if order is None:
        return select, None, 0, None
    body = select.copy()
    for key in ("order", "limit", "offset"):
        body.set(key, None)
    return body, order, _count(offset, "OFFSET"), _count(limit, "LIMIT")


def _count(node: exp.Expr | None, what: str) -> int:
    if node is None:
        return 0
    value = node.args.get("expression")
    if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
        raise SqlError(f"{what} takes a whole number", *position(node))
    return int(value.this)


def sort_limit(rel: Rel, items: list[exp.Expr], order: exp.Order, offset: int, limit: int) -> Rel:
    """Rank over ``rel`` (the SELECT's output) with no partition keys, rows offset+1..offset+limit."""
    if limit < 1:
        raise SqlError("LIMIT 0 keeps no rows; drop the query", *position(order))
    keys = []
    for o in order.expressions:
        asc = not o.args.get("desc")
        keys.append((_output_column(o.this, rel, items), asc, bool(o.args.get("nulls_first", asc))))
    node = L.Rank(
        [rel.node], fields_of(rel.columns), order_keys=tuple(keys), rank_start=offset + 1,
        rank_end=offset + limit, sort_limit=True,
    )  # fmt: skip
    return Rel(node, rel.columns)


def _output_column(key: exp.Expr, rel: Rel, items: list[exp.Expr]) -> int:
    """An ORDER BY key as a column of the SELECT list: by position, name, alias or the same
    expression."""
    if isinstance(key, exp.Literal) and not key.is_string:
        n = int(key.this)
        if 1 <= n <= len(rel.columns):
            return n - 1
    if isinstance(key, exp.Column):
        hits = [i for i, c in enumerate(rel.columns) if c.name == key.name]
        if len(hits) == 1:
            return hits[0]
    text = key.sql()
    for i, item in enumerate(items):
        if item.unalias().sql() == text:
            return i
    raise SqlError(
        f"ORDER BY {text}: deltaflow sorts by columns of the SELECT list (by name, alias or "
        "position); add it to the SELECT list", *position(key))  # fmt: skip
