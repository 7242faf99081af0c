"""GROUP BY GROUPING SETS / ROLLUP / CUBE as a UNION ALL of one GROUP BY per grouping set.

Each branch groups by its set; a grouping column outside the set is NULL in that branch
(``CAST(NULL AS type)``, outside aggregate calls), ``GROUPING(x)`` is 1 when x is not in
the set and 0 when it is, ``GROUPING_ID(x, y, ..)`` those bits with the first argument
highest. The empty set groups by a constant: one row while the input has rows, as Flink's
grand total. Flink plans one GroupAggregate over an Expand node that copies each row once
per set; the rows are the same.
"""

from __future__ import annotations

from itertools import combinations

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.processor.planner.bind_exprs import bind
from deltaflow.processor.sql.errors import position

_SETS = (exp.Rollup, exp.Cube, exp.GroupingSets)


def expand_grouping_sets(binder, select: exp.Select) -> exp.Expr | None:  # noqa: ANN001 - QueryBinder
    group = select.args.get("group")
    if group is None or not any(isinstance(g, _SETS) for g in group.expressions):
        return None
    sets = _sets(group)
    names = list(dict.fromkeys(n for s in sets for n in s))
    scope = binder.froms.from_clause(select).scope(binder.functions)
    types = {n: bind(exp.column(n), scope).type.with_nullable(True).sql() for n in names}
    branches = []
    for keys in dict.fromkeys(tuple(s) for s in sets):
        branch = select.copy()
        by: list[exp.Expr] = [exp.column(n) for n in keys] or [exp.true()]
        branch.set("group", exp.Group(expressions=by))
        branch.set("expressions", [_branch(e, names, keys, types) for e in branch.expressions])
        having = branch.args.get("having")
        if having is not None:
            branch.set("having", exp.Having(this=_branch(having.this, names, keys, types)))
        branches.append(branch)
    out: exp.Expr = branches[0]
    for b in branches[1:]:
        out = exp.union(out, b, distinct=False)
    return out


def _sets(group: exp.Group) -> list[list[str]]:
    """Every grouping set, as column names: plain columns are in all of them."""
    out: list[list[str]] = [[]]
    for g in group.expressions:
        if isinstance(g, exp.Rollup):
            cols = _names(g.expressions)
            choices = [cols[:i] for i in range(len(cols), -1, -1)]
        elif isinstance(g, exp.Cube):
            cols = _names(g.expressions)
            choices = [list(c) for n in range(len(cols), -1, -1) for c in combinations(cols, n)]
        elif isinstance(g, exp.GroupingSets):
            choices = [_names(_members(s)) for s in g.expressions]
        else:
            choices = [_names([g])]
        out = [s + [c for c in choice if c not in s] for s in out for choice in choices]
    return out


def _members(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.Tuple):
        return list(node.expressions)
    if isinstance(node, exp.Paren):
        return _members(node.this)
    return [node]


def _names(nodes: list[exp.Expr]) -> list[str]:
    for n in nodes:
        if not isinstance(n, exp.Column):
            raise SqlError(
                "GROUPING SETS, ROLLUP and CUBE take columns; compute expressions in a subquery",
                *position(n))  # fmt: skip
    return [n.name for n in nodes]


def _branch(node: exp.Expr, names: list[str], keys: tuple[str, ...], types: dict) -> exp.Expr:  # noqa: ANN001
    def swap(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Grouping | exp.GroupingId):
            args = _names(list(n.expressions))
            bits = 0
            for a in args:
                bits = bits * 2 + (a not in keys)
            return exp.cast(exp.Literal.number(bits), "BIGINT")
        if (
            isinstance(n, exp.Column)
            and n.name in names
            and n.name not in keys
            and n.find_ancestor(exp.AggFunc) is None
        ):
            return exp.cast(exp.null(), exp.DataType.build(types[n.name], dialect="flink"))
        return n

    return node.copy().transform(swap)
