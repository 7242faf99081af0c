"""``CROSS JOIN UNNEST(arr) AS t(x)`` (also ``, UNNEST(..)``, ``JOIN UNNEST(..) ON TRUE`` and
``LEFT JOIN UNNEST(..) ON TRUE``) as Flink plans it: a Correlate over the built-in table
function ``$UNNEST_ROWS$1``; ``WITH ORDINALITY`` over ``$UNNEST_ROWS_WITH_ORDINALITY$1``, whose
last column ``ORDINALITY`` numbers the elements from 1 (an atomic element is then ``EXPR$0``). An ARRAY of atomic values gives one column ``f0``, an ARRAY of
ROW its fields, a MAP the columns ``f0`` (key) and ``f1`` (value); ``AS t(a, b)`` renames them
by position. The elements are produced by one function call per input row, no SQL per element."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import ARRAY, INT, MAP, MULTISET, ROW, DataType
from deltaflow.processor.exprs.nodes import Expr, InputRef
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import Scope, ScopeColumn, bind
from deltaflow.processor.planner.correlate import Correlate
from deltaflow.processor.sql.errors import position

UNNEST = "$UNNEST_ROWS$1"
UNNEST_ORDINALITY = "$UNNEST_ROWS_WITH_ORDINALITY$1"
_ORDINAL = DataType(INT, True)
_TARGETS = {
    kind + suffix: f"deltaflow.processor.exprs.gen_nested.unnest_{kind}{suffix}"
    for kind in ("values", "rows", "map")
    for suffix in ("", "_ordinality")
}


def bind_unnest(binder: Any, left: Any, join: exp.Join) -> Any:  # noqa: ANN401 - FromBinder, Rel
    from deltaflow.processor.planner.relation import Rel, unique_fields

    node: exp.Unnest = join.this
    if len(node.expressions) != 1:
        raise SqlError("UNNEST takes one ARRAY or MAP", *position(node))
    scope = Scope(left.columns, binder.functions)
    operand = bind(node.expressions[0], scope)
    kind, columns = _columns(operand.type, node)
    join_type, condition = _join_type(join, node)
    alias = node.args.get("alias")
    ordinality = node.args.get("offset")  # WITH ORDINALITY (sqlglot: the last alias column)
    function = UNNEST
    if ordinality:
        if join_type == "LEFT":
            raise SqlError("LEFT JOIN UNNEST(..) WITH ORDINALITY is not supported (Flink 2.3 "
                           "fails to plan it too); use CROSS JOIN", *position(node))  # fmt: skip
        function, kind = UNNEST_ORDINALITY, f"{kind}_ordinality"
        if kind == "values_ordinality":  # Flink names the element EXPR$0 here
            columns = [("EXPR$0", columns[0][1])]
        columns = [*columns, ("ORDINALITY", _ORDINAL)]
    names = _names(alias, [n for n, _ in columns], node, ordinality)
    qualifier = alias.name if isinstance(alias, exp.TableAlias) and alias.name else None
    right = [
        ScopeColumn(qualifier, n, t.with_nullable(True) if join_type == "LEFT" else t)
        for n, (_, t) in zip(names, columns, strict=True)
    ]
    out = left.columns + right
    declared = [ScopeColumn(None, n, c.type) for (n, _), c in zip(columns, right, strict=True)]
    corr = Correlate([left.node], unique_fields(left.columns + declared), function=function,
                     target=_TARGETS[kind], operands=[operand], join_type=join_type)  # fmt: skip
    if condition is None:
        return Rel(corr, out)
    cond = bind(condition, Scope(out, binder.functions))
    proj: list[Expr] = [InputRef(c.type, i) for i, c in enumerate(out)]
    return Rel(L.Calc([corr], unique_fields(out), projection=proj, condition=cond), out)


def _columns(t: DataType, node: exp.Expr) -> tuple[str, list[tuple[str, DataType]]]:
    if t.root in (ARRAY, MULTISET) and t.element is not None:
        element = t.element
        if element.root == ROW and element.fields:
            nullable = element.nullable
            return "rows", [(n, f.with_nullable(f.nullable or nullable)) for n, f in element.fields]
        return "values", [("f0", element)]
    if t.root == MAP and t.element is not None and t.value is not None:
        return "map", [("f0", t.element), ("f1", t.value)]
    raise SqlError(f"UNNEST takes an ARRAY, MULTISET or MAP, not {t.sql()}", *position(node))


def _join_type(join: exp.Join, node: exp.Expr) -> tuple[str, exp.Expr | None]:
    side = (join.side or "").upper()
    on = join.args.get("on")
    is_true = on is None or (isinstance(on, exp.Boolean) and on.this is True)
    if side not in ("", "LEFT") or join.args.get("using") or (side == "LEFT" and not is_true):
        raise SqlError("UNNEST joins with ',', CROSS JOIN, JOIN ... ON or LEFT JOIN ... ON TRUE",
                       *position(node))  # fmt: skip
    return ("LEFT" if side == "LEFT" else "INNER"), None if is_true else on


def _names(
    alias: exp.Expr | None, declared: list[str], node: exp.Expr, ordinality: object = None
) -> list[str]:
    names = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    if isinstance(ordinality, exp.Identifier):
        names.append(ordinality.name)
    if not names:
        return declared
    if len(names) != len(declared):
        raise SqlError(
            f"{alias.name or 'the alias'} names {len(names)} columns but UNNEST gives "  # type: ignore[union-attr]
            f"{len(declared)} ({', '.join(declared)})", *position(node))  # fmt: skip
    return names
