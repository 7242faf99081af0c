"""STDDEV_POP / STDDEV_SAMP / STDDEV / VAR_POP / VAR_SAMP / VARIANCE reduced as Flink 2.3
reduces them: ``$WELFORD_M2$1(x)`` (the sum of squared deviations, Welford's online
update in DOUBLE, with retraction) and ``COUNT(x)``, combined by an expression over the
aggregate: ``m2 / n`` (population), ``m2 / CASE WHEN n = 1 THEN NULL ELSE n - 1 END``
(sample), under ``POWER(.., 0.5)`` for a standard deviation, cast to the result type
(the argument's type; DECIMAL(38, max(6, s)) for a DECIMAL, as AVG)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp, parse_one

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import APPROX_ROOTS, DECIMAL, INTEGER_ROOTS, DataType, decimal
from deltaflow.processor.planner.bind_exprs import Scope, bind
from deltaflow.processor.sql.dialect import Flink
from deltaflow.processor.sql.errors import position

M2 = "$WELFORD_M2$1"
# class -> (square root, population)
_VARIANCE: dict[type[exp.Expr], tuple[bool, bool]] = {
    exp.StddevPop: (True, True),
    exp.StddevSamp: (True, False),
    exp.Stddev: (True, False),
    exp.VariancePop: (False, True),
    exp.Variance: (False, False),
}
_SAMPLE = "CASE WHEN __n = 1 THEN CAST(NULL AS BIGINT) ELSE __n - 1 END"


def reduce_variances(items: list[exp.Expr], having: exp.Expr | None, scope: Scope):  # noqa: ANN201
    """``items`` and ``having`` with each variance function replaced by its reduction."""

    def swap(node: exp.Expr) -> exp.Expr:
        kind = _VARIANCE.get(type(node))
        if kind is None or node.find_ancestor(exp.Window) is not None:
            return node
        return _reduction(node, *kind, scope)

    reduced = [item.copy().transform(swap) for item in items]
    return reduced, having.copy().transform(swap) if having is not None else None


def _reduction(call: exp.Expr, sqrt: bool, population: bool, scope: Scope) -> exp.Expr:
    arg = call.this
    name = call.sql(dialect=Flink).split("(")[0]
    if isinstance(arg, exp.Distinct) or isinstance(call.parent, exp.Filter):
        raise SqlError(
            f"{name} with DISTINCT or FILTER is not supported yet; filter or deduplicate in a "
            "subquery", *position(call))  # fmt: skip
    arg_type = bind(arg, scope).type
    if arg_type.root not in INTEGER_ROOTS | APPROX_ROOTS | {DECIMAL}:
        raise SqlError(f"{name} takes a number, not {arg_type.sql()}", *position(call))
    text = f"__m2 / {'__n' if population else _SAMPLE}"
    if sqrt:
        text = f"POWER({text}, 0.5)"
    target = _result_type(arg_type)
    if target.root != "DOUBLE":
        text = f"CAST({text} AS {target.sql()})"
    parts = {
        "__m2": exp.Anonymous(this=M2, expressions=[arg.copy()]),
        "__n": exp.Count(this=arg.copy()),
    }
    tree = parse_one(text, read=Flink)
    return exp.Paren(this=tree.transform(lambda n: _part(n, parts)))


def _part(node: exp.Expr, parts: Mapping[str, exp.Expr]) -> exp.Expr:
    if isinstance(node, exp.Column) and node.name in parts:
        return parts[node.name].copy()
    return node


def _result_type(t: DataType) -> DataType:
    if t.root == DECIMAL:
        return decimal(38, max(t.scale or 0, 6))
    return t.with_nullable(True)
