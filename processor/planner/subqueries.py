"""Subqueries in WHERE rewritten into joins before binding (decorrelation), as Flink plans
them.

Each conjunct of the WHERE that holds a subquery becomes a join of the outer FROM with a
derived table (after the FROM's own joins, so the rest of the WHERE is pushed below it):

- ``EXISTS (q)`` / ``x IN (q)``: a semi join (``kind='SEMI'``, bound to
  ``semi_join.SemiJoin``), ``NOT EXISTS`` / ``NOT IN``: an anti join. q's conjuncts over
  its own columns stay inside it; those that read outer columns become the join's
  condition, any comparison (equalities become keys), with q's columns in them exposed as
  ``__cN``. ``x IN (q)`` adds ``x = __cN``; ``x NOT IN (q)`` adds
  ``x IS NULL OR __cN IS NULL OR x = __cN`` (Flink's condition), so a NULL in q's column
  or a NULL ``x`` (with q not empty) leaves no row, as SQL's NOT IN does. An uncorrelated
  EXISTS joins one row (``MIN(TRUE)`` of q, kept while not NULL). A q with GROUP BY,
  DISTINCT or LIMIT is joined as a table, uncorrelated.
- a scalar subquery (one aggregate item, no GROUP BY): LEFT JOIN its value grouped by
  the correlation keys (uncorrelated: ON TRUE, one row); a missing group is NULL, as the
  scalar subquery's value. COUNT is refused (its empty value is 0, not NULL).

A WHERE conjunct that then rejects the NULLs of such a LEFT JOIN makes it an inner join
(push_filters).
"""

from __future__ import annotations

from itertools import count

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.processor.planner.bind_exprs import Scope
from deltaflow.processor.sql.errors import position

_names = count(1)


def decorrelate(binder, select: exp.Select) -> exp.Select:  # noqa: ANN001 - QueryBinder
    where = select.args.get("where")
    if where is None or where.this.find(exp.Select) is None:
        return select
    out = select.copy()
    joins = list(out.args.get("joins") or [])
    keep: list[exp.Expr] = []
    for c in _conjuncts(out.args["where"].this):
        if c.find(exp.Select) is None:
            keep.append(c)
            continue
        new_joins, kept = _rewrite(binder, c)
        joins += new_joins
        keep += kept
    out.set("joins", joins)
    out.set("where", exp.Where(this=exp.and_(*keep)) if keep else None)
    return out


def _conjuncts(cond: exp.Expr) -> list[exp.Expr]:
    if isinstance(cond, exp.Paren):
        return _conjuncts(cond.this)
    if isinstance(cond, exp.And):
        return [*_conjuncts(cond.this), *_conjuncts(cond.expression)]
    return [cond]


def _rewrite(binder, c: exp.Expr) -> tuple[list[exp.Join], list[exp.Expr]]:  # noqa: ANN001
    negated = isinstance(c, exp.Not)
    inner = c.this if negated else c
    if isinstance(inner, exp.Paren):
        inner = inner.this
    if isinstance(inner, exp.Exists):
        return _semi(binder, inner.this, negated, None)
    if isinstance(inner, exp.In) and inner.args.get("query") is not None:
        return _semi(binder, inner.args["query"].this, negated, inner.this)
    for pred in c.find_all(exp.Exists, exp.In):
        if isinstance(pred, exp.Exists) or pred.args.get("query") is not None:
            raise SqlError(
                "IN / EXISTS subqueries are supported as conjuncts of WHERE only (not under OR "
                "or NOT)", *position(pred))  # fmt: skip
    joins: list[exp.Join] = []
    for node in list(c.find_all(exp.Subquery)):
        join, value = _scalar(binder, node.this, node)
        joins.append(join)
        node.replace(value)
    return joins, [c]


Pairs = list[tuple[exp.Expr, exp.Expr]]


def _split(binder, sub: exp.Select) -> tuple[list[exp.Expr], Pairs]:  # noqa: ANN001
    """A scalar subquery's local conjuncts, and its correlations as (inner, outer) pairs:
    equalities of an inner and an outer expression (they key the join)."""
    if not isinstance(sub, exp.Select):
        raise SqlError("a subquery here must be a SELECT", *position(sub))
    scope = Scope(binder.froms.from_clause(sub).columns, binder.functions)
    where = sub.args.get("where")
    local: list[exp.Expr] = []
    pairs: list[tuple[exp.Expr, exp.Expr]] = []
    for c in _conjuncts(where.this) if where is not None else []:
        outer = [col for col in _own_columns(c) if not scope.has(col)]
        if not outer:
            local.append(c)
            continue
        if isinstance(c, exp.EQ):
            a, b = c.this, c.expression
            a_out = any(not scope.has(col) for col in _own_columns(a))
            b_out = any(not scope.has(col) for col in _own_columns(b))
            if a_out != b_out and all(not scope.has(x) for x in _own_columns(a if a_out else b)):
                pairs.append((b, a) if a_out else (a, b))
                continue
        raise SqlError(
            "a correlated scalar subquery may refer to the outer query only in equalities of an "
            "inner and an outer expression (they become join keys); this condition is not one",
            *position(c))  # fmt: skip
    return local, pairs


def _own_columns(node: exp.Expr) -> list[exp.Column]:
    """Columns of ``node`` outside any nested subquery."""
    return [c for c in node.find_all(exp.Column) if not _inside(c, node)]


def _inside(col: exp.Expr, top: exp.Expr) -> bool:
    if col is top:
        return False
    parent = col.parent
    while parent is not None and parent is not top:
        if isinstance(parent, exp.Select):
            return True
        parent = parent.parent
    return False


def _derived(
    sub: exp.Select,
    items: list[exp.Expr],
    local: list[exp.Expr],
    distinct: bool,
    name: str | None = None,
):  # noqa: ANN202
    name = name or f"__sq{next(_names)}"
    body = sub.copy()
    body.set("expressions", items)
    body.set("where", exp.Where(this=exp.and_(*local)) if local else None)
    body.set("distinct", exp.Distinct() if distinct else None)
    for clause in ("order", "limit", "offset"):
        body.set(clause, None)
    return name, exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(name)))


def _keys_on(name: str, outer: list[exp.Expr]) -> exp.Expr:
    return exp.and_(*(exp.EQ(this=o.copy(), expression=exp.column(f"__k{i}", table=name))
                      for i, o in enumerate(outer)))  # fmt: skip


def _grouped(sub: exp.Select) -> bool:
    """GROUP BY, HAVING or an aggregate of ``sub``'s own (not of a derived table in its FROM)."""
    if sub.args.get("group") or sub.args.get("having"):
        return True
    return any(not _inside(a, e) for e in sub.expressions for a in e.find_all(exp.AggFunc))


def _semi(binder, sub: exp.Select, anti: bool, value: exp.Expr | None):  # noqa: ANN001, ANN202
    """``[NOT] EXISTS (sub)`` or ``value [NOT] IN (sub)`` as a semi (anti) join of the outer
    rows with ``sub``'s rows, as Flink plans them: the subquery's conjuncts over its own
    columns stay inside it, those that read outer columns become the join's condition
    (its inner columns exposed as ``__cN``), and IN adds ``value = __cN`` (NOT IN:
    ``value IS NULL OR __cN IS NULL OR value = __cN``, so that a NULL on either side
    leaves no row, as SQL's NOT IN does)."""
    if not isinstance(sub, exp.Select):
        raise SqlError("a subquery here must be a SELECT", *position(sub))
    if value is not None and len(sub.expressions) != 1:
        raise SqlError("an IN subquery selects one column", *position(sub))
    if _grouped(sub) or sub.args.get("distinct") or sub.args.get("limit"):
        if _correlated(binder, sub)[1]:
            raise SqlError(
                "a correlated IN / EXISTS subquery with GROUP BY, DISTINCT or LIMIT is not "
                "supported yet", *position(sub))  # fmt: skip
        sub = _wrapped(sub if value is not None else _one_column(sub))
    local, correlated, inner = _correlated(binder, sub)
    name = f"__sq{next(_names)}"
    items: list[exp.Expr] = []
    exposed: dict[str, exp.Expr] = {}

    def expose(e: exp.Expr) -> exp.Expr:
        key = e.sql()
        if key not in exposed:
            items.append(exp.alias_(e.copy(), f"__c{len(items)}"))
            exposed[key] = exp.column(f"__c{len(items) - 1}", table=name)
        return exposed[key].copy()

    conds: list[exp.Expr] = []
    if value is not None:
        v = expose(sub.expressions[0].unalias())
        equal: exp.Expr = exp.EQ(this=value.copy(), expression=v)
        if anti:  # NOT IN: a NULL on either side is a match (so the outer row goes)
            isnull = [exp.Is(this=x.copy(), expression=exp.null()) for x in (value, v)]
            equal = exp.Paren(this=exp.or_(*isnull, equal))
        conds.append(equal)
    for c in correlated:
        conds.append(c.transform(lambda n: expose(n) if n in inner else n, copy=False))
    if not items:  # uncorrelated EXISTS: one row while sub has any, as Flink plans it
        items.append(exp.alias_(exp.Min(this=exp.true()), "__c0"))
    _, derived = _derived(sub, items, local, distinct=False, name=name)
    if not conds:
        not_null = exp.Not(this=exp.Is(this=exp.Min(this=exp.true()), expression=exp.null()))
        derived.this.set("having", exp.Having(this=not_null))
    on = exp.and_(*conds) if conds else exp.true()
    return [exp.Join(this=derived, on=on, kind="ANTI" if anti else "SEMI")], []


def _correlated(binder, sub: exp.Select):  # noqa: ANN001, ANN202
    """The subquery's local conjuncts, those that read outer columns, and (by identity) the
    inner columns of the latter."""
    scope = Scope(binder.froms.from_clause(sub).columns, binder.functions)
    where = sub.args.get("where")
    local, correlated, inner = [], [], []
    for c in _conjuncts(where.this) if where is not None else []:
        own = _own_columns(c)
        if all(scope.has(col) for col in own):
            local.append(c)
            continue
        copy = c.copy()
        correlated.append(copy)
        mine = {id(col) for col in own if scope.has(col)}
        inner += [a for a, b in zip(_own_columns(copy), own, strict=True) if id(b) in mine]
    return local, correlated, _Identity(inner)


class _Identity(list):
    """A list compared by identity (``n in inner``: that very node)."""

    def __contains__(self, node: object) -> bool:
        return any(node is x for x in self)


def _wrapped(sub: exp.Select) -> exp.Select:
    """``SELECT __v FROM (sub) AS __tN (__v)``: a grouped subquery's one column, as a table."""
    alias = exp.TableAlias(this=exp.to_identifier(f"__t{next(_names)}"),
                           columns=[exp.to_identifier("__v")])  # fmt: skip
    return exp.select(exp.column("__v")).from_(exp.Subquery(this=sub.copy(), alias=alias))


def _one_column(sub: exp.Select) -> exp.Select:
    out = sub.copy()
    out.set("expressions", [exp.alias_(exp.true(), "__c")])
    return out


def _scalar(binder, sub: exp.Select, node: exp.Expr) -> tuple[exp.Join, exp.Expr]:  # noqa: ANN001
    if not isinstance(sub, exp.Select) or len(sub.expressions) != 1 or sub.args.get("group"):
        raise SqlError(
            "a scalar subquery selects one aggregate without GROUP BY (so it has one row)",
            *position(node))  # fmt: skip
    item = sub.expressions[0].unalias()
    if item.find(exp.AggFunc) is None:
        raise SqlError("a scalar subquery selects one aggregate (so it has one row)",
                       *position(node))  # fmt: skip
    if item.find(exp.Count) is not None:
        raise SqlError(
            "a scalar subquery with COUNT is not supported yet (its value over no rows is 0)",
            *position(node))  # fmt: skip
    local, pairs = _split(binder, sub)
    items = [exp.alias_(inner.copy(), f"__k{i}") for i, (inner, _) in enumerate(pairs)]
    name, derived = _derived(sub, [*items, exp.alias_(item.copy(), "__v")], local, False)
    if pairs:
        derived.this.set("group", exp.Group(expressions=[i.copy() for i, _ in pairs]))
    on = _keys_on(name, [o for _, o in pairs]) if pairs else exp.true()
    return exp.Join(this=derived, on=on, side="LEFT"), exp.column("__v", table=name)


def lift_having(select: exp.Select) -> exp.Select:
    """A HAVING that holds a subquery, as a WHERE over the grouped query: ``SELECT items
    FROM (SELECT items, aggregates of the HAVING FROM .. GROUP BY ..) __h WHERE having``,
    with the HAVING's aggregates read from the grouped query's columns; the WHERE's
    subqueries are then decorrelated as any."""
    items = list(select.expressions)
    if any(isinstance(i, exp.Star) or i.find(exp.Star) and not i.find(exp.Count) for i in items):
        raise SqlError("a HAVING subquery needs the SELECT items written out (no *)",
                       *position(select))  # fmt: skip
    inner = select.copy()
    having = inner.args["having"].this.copy()
    inner.set("having", None)
    names = []
    for i, item in enumerate(items):
        name = item.alias_or_name if isinstance(item, exp.Alias | exp.Column) else f"EXPR${i}"
        names.append(name)
    lifted: dict[str, str] = {}

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.AggFunc) and not _inside(node, having):
            key = node.sql()
            lifted.setdefault(key, f"__h{len(lifted)}")
            return exp.column(lifted[key], table="__h")
        return node

    cond = having.transform(swap)
    aggregates = {v: k for k, v in lifted.items()}
    extra = [exp.alias_(exp.maybe_parse(aggregates[n], dialect="flink"), n) for n in aggregates]
    inner.set("expressions", [*[_named(item, n) for item, n in zip(items, names, strict=True)],
                              *extra])  # fmt: skip
    outer = exp.select(*(exp.column(exp.to_identifier(n, quoted=True), table="__h") for n in names))
    outer = outer.from_(
        exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("__h")))
    )
    return outer.where(cond)


def _named(item: exp.Expr, name: str) -> exp.Expr:
    return (
        item
        if isinstance(item, exp.Alias)
        else exp.alias_(item.copy(), exp.to_identifier(name, quoted=True))
    )
