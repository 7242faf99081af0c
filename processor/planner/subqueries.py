"""Subqueries in WHERE rewritten into joins before binding (decorrelation).

Each conjunct of the WHERE that holds a subquery becomes a join of the outer FROM with a
derived table; the subquery's own conditions split into local ones (kept inside) and
correlations, which must be equalities of an inner and an outer expression (they become
join keys):

- ``EXISTS (q)``: JOIN the DISTINCT correlation keys of q (a semi join: each outer row at
  most once); ``NOT EXISTS (q)``: LEFT JOIN them and keep the rows without a match.
- ``x IN (q)``: as EXISTS with ``x`` = q's column as one more key; ``x NOT IN (q)``
  (uncorrelated) exactly as SQL's three-valued logic: TRUE when q is empty, else when x is
  not NULL, q holds no NULL and no match: a LEFT JOIN on the distinct non-NULL values and
  a LEFT JOIN ON TRUE with q's row count and non-NULL count.
- a scalar subquery (one aggregate item, no GROUP BY): LEFT JOIN its value grouped by
  the correlation keys (uncorrelated: ON TRUE, one row); a missing group is NULL, as the
  scalar subquery's value. COUNT is refused (its empty value is 0, not NULL).

A WHERE conjunct that then rejects the NULLs of such a LEFT JOIN makes it an inner join
(push_filters). Flink plans semi / anti joins (LeftSemiJoin, LeftAntiJoin) and joins with
aggregates; the rows are the same.
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
        return _exists(binder, inner.this, negated, None)
    if isinstance(inner, exp.In) and inner.args.get("query") is not None:
        sub = inner.args["query"].this
        if negated:
            return _not_in(binder, inner.this, sub, inner)
        return _exists(binder, sub, False, inner.this)
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


def _split(binder, sub: exp.Select, unequal: Pairs | None = None) -> tuple[list[exp.Expr], Pairs]:  # noqa: ANN001
    """The subquery's local conjuncts, and its correlations as (inner, outer) pairs: the
    equalities; ``inner <> outer`` ones go to ``unequal`` when it is given."""
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
        if isinstance(c, exp.EQ) or isinstance(c, exp.NEQ) and unequal is not None:
            a, b = c.this, c.expression
            a_out = any(not scope.has(col) for col in _own_columns(a))
            b_out = any(not scope.has(col) for col in _own_columns(b))
            if a_out != b_out and all(not scope.has(x) for x in _own_columns(a if a_out else b)):
                target = pairs if isinstance(c, exp.EQ) else unequal
                target.append((b, a) if a_out else (a, b))  # type: ignore[union-attr]
                continue
        raise SqlError(
            "a correlated subquery may refer to the outer query only in equalities of an inner "
            "and an outer expression (they become join keys), and EXISTS in one inner <> outer "
            "as well; this condition is not one",
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


def _derived(sub: exp.Select, items: list[exp.Expr], local: list[exp.Expr], distinct: bool):  # noqa: ANN202
    name = f"__sq{next(_names)}"
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
    return bool(sub.args.get("group") or sub.args.get("having") or sub.find(exp.AggFunc))


def _exists(binder, sub: exp.Select, negated: bool, value: exp.Expr | None):  # noqa: ANN001, ANN202
    """EXISTS / NOT EXISTS, or ``value IN (sub)``: a join on the distinct keys."""
    if value is not None and _grouped(sub):
        local, pairs = _split(binder, sub)
        if pairs:
            raise SqlError("a correlated IN subquery with GROUP BY is not supported yet",
                           *position(sub))  # fmt: skip
        sub = _wrapped(sub)
    unequal: Pairs = []
    local, pairs = _split(binder, sub, unequal if value is None else None)
    if len(unequal) > 1:
        raise SqlError("an EXISTS may have one inner <> outer correlation", *position(sub))
    if unequal and pairs:
        return _exists_other(sub, negated, local, pairs, unequal[0])
    if value is not None:
        if len(sub.expressions) != 1:
            raise SqlError("an IN subquery selects one column", *position(sub))
        pairs = [(sub.expressions[0].unalias(), value), *pairs]
    if not pairs:
        raise SqlError(
            "an uncorrelated EXISTS is not supported yet; correlate it with an equality",
            *position(sub))  # fmt: skip
    items = [exp.alias_(inner.copy(), f"__k{i}") for i, (inner, _) in enumerate(pairs)]
    name, derived = _derived(sub, items, local, distinct=True)
    on = _keys_on(name, [o for _, o in pairs])
    join = exp.Join(this=derived, on=on, side="LEFT" if negated else None)
    kept = [exp.Is(this=exp.column("__k0", table=name), expression=exp.null())] if negated else []
    return [join], kept


def _exists_other(sub: exp.Select, negated: bool, local, pairs: Pairs, other):  # noqa: ANN001, ANN202
    """``[NOT] EXISTS (.. WHERE inner_k = outer_k .. AND a <> x)``: a row of the group with
    a <> x exists iff MIN(a) <> x or MAX(a) <> x (NULLs of a and x never compare TRUE, and
    MIN / MAX skip them): a join on the keys with the group's MIN(a) and MAX(a)."""
    a, x = other
    items = [exp.alias_(inner.copy(), f"__k{i}") for i, (inner, _) in enumerate(pairs)]
    items += [
        exp.alias_(exp.Min(this=a.copy()), "__mn"),
        exp.alias_(exp.Max(this=a.copy()), "__mx"),
    ]
    name, derived = _derived(sub, items, local, distinct=False)
    derived.this.set("group", exp.Group(expressions=[i.copy() for i, _ in pairs]))
    mn, mx = exp.column("__mn", table=name), exp.column("__mx", table=name)
    differs = exp.Paren(this=exp.or_(exp.NEQ(this=mn, expression=x.copy()),
                                     exp.NEQ(this=mx, expression=x.copy())))  # fmt: skip
    on = _keys_on(name, [o for _, o in pairs])
    if not negated:
        return [exp.Join(this=derived, on=exp.and_(on, differs))], []
    none = exp.or_(
        exp.Is(this=exp.column("__k0", table=name), expression=exp.null()),
        exp.Is(this=x.copy(), expression=exp.null()),
        exp.Is(this=mn.copy(), expression=exp.null()),
        exp.and_(
            exp.EQ(this=mn.copy(), expression=x.copy()), exp.EQ(this=mx.copy(), expression=x.copy())
        ),
    )
    return [exp.Join(this=derived, on=on, side="LEFT")], [exp.Paren(this=none)]


def _wrapped(sub: exp.Select) -> exp.Select:
    """``SELECT __v FROM (sub) AS __tN (__v)``: a grouped subquery's one column, as a table."""
    alias = exp.TableAlias(this=exp.to_identifier(f"__t{next(_names)}"),
                           columns=[exp.to_identifier("__v")])  # fmt: skip
    return exp.select(exp.column("__v")).from_(exp.Subquery(this=sub.copy(), alias=alias))


def _not_in(binder, value: exp.Expr, sub: exp.Select, node: exp.Expr):  # noqa: ANN001, ANN202
    if len(sub.expressions) != 1:
        raise SqlError("a NOT IN subquery selects one column", *position(node))
    if _split(binder, sub)[1]:
        raise SqlError("a correlated NOT IN subquery is not supported yet; write NOT EXISTS",
                       *position(node))  # fmt: skip
    table = _wrapped(sub)
    not_null = exp.Not(this=exp.Is(this=exp.column("__v"), expression=exp.null()))
    m, matches = _derived(table, [exp.alias_(exp.column("__v"), "__k0")], [not_null], True)
    n, counts = _derived(table, [exp.alias_(exp.Count(this=exp.Star()), "__c"),
                                 exp.alias_(exp.Count(this=exp.column("__v")), "__nn")],
                         [], False)  # fmt: skip
    joins = [
        exp.Join(this=matches, on=_keys_on(m, [value]), side="LEFT"),
        exp.Join(this=counts, on=exp.true(), side="LEFT"),
    ]
    c, nn = exp.column("__c", table=n), exp.column("__nn", table=n)
    empty = exp.EQ(
        this=exp.func("COALESCE", c, exp.Literal.number(0)), expression=exp.Literal.number(0)
    )
    unmatched = exp.and_(
        exp.Not(this=exp.Is(this=value.copy(), expression=exp.null())),
        exp.Is(this=exp.column("__k0", table=m), expression=exp.null()),
        exp.EQ(this=c.copy(), expression=nn),
    )
    return joins, [exp.Paren(this=exp.or_(empty, unmatched))]


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
