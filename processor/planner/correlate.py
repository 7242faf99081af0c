"""Python table functions: ``FROM t, LATERAL TABLE(f(x)) AS T(a, b)`` to a Correlate node.

A table function is ``CREATE FUNCTION f AS 'module.attr' LANGUAGE PYTHON`` whose object declares
``result_types``, as PyFlink's ``@udtf(result_types=...)`` does with type strings:

* a list of Flink type strings (``['STRING', 'INT']``): one column each, named ``f0, f1, ...``;
* one type string (``'INT'``): one column ``EXPR$0`` (Flink's name for an atomic result);
  ``'ROW<word STRING, len INT>'``: the row's fields as columns, with their names;
* ``deterministic`` (default true), as for scalar functions.

The object is called with the argument values and yields (or returns an iterable of) result
rows: a tuple/list with one value per column, or a bare value for a one-column function.
A PyFlink ``@udtf`` wrapper keeps these under ``_result_types``/``_func``; both are read.

Columns bind in declared order; ``AS T(a, b)`` renames them by position and a count mismatch
is an error. ``LEFT JOIN LATERAL TABLE(...) ON TRUE`` keeps a row for which the function
yields nothing, with NULL columns (Flink allows only ``ON TRUE`` there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import DataType, TypeParseError, parse_type
from deltaflow.processor import plan as P
from deltaflow.processor.exprs.nodes import Expr, InputRef
from deltaflow.processor.exprs.udf_loading import import_target
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import Scope, ScopeColumn, bind
from deltaflow.processor.planner.bind_functions import arguments, function_name
from deltaflow.processor.sql.errors import position


@cache
def udtf_signature(name: str, target: str) -> tuple[tuple[tuple[str, DataType], ...], bool]:
    """The declared result columns (name, type) of table function ``name`` and its determinism."""
    fn = import_target("table function", name, target, SqlError)
    declared = getattr(fn, "result_types", getattr(fn, "_result_types", None))
    deterministic = getattr(fn, "deterministic", getattr(fn, "_deterministic", None))
    return _columns(name, declared), deterministic is not False


def _columns(name: str, declared: object) -> tuple[tuple[str, DataType], ...]:
    atomic = isinstance(declared, str)
    if atomic:
        declared = [declared]
    if not isinstance(declared, list | tuple) or not declared:
        raise SqlError(
            f"table function {name} declares no result_types; give it result_types=['STRING', ...] "
            "(Flink type strings), as PyFlink's @udtf(result_types=...) does"
        )
    if not all(isinstance(t, str) for t in declared):
        raise SqlError(
            f"table function {name}: result_types must be Flink type strings such as 'STRING' "
            f"or 'ROW<a INT, b STRING>', not {declared!r}"
        )
    try:
        types = [parse_type(t) for t in declared]
    except (TypeParseError, ValueError) as err:
        raise SqlError(
            f"table function {name}: result_types {declared!r} holds a type Flink does not know ({err})"
        ) from None
    if len(types) == 1 and types[0].root == "ROW" and types[0].fields:
        return tuple(types[0].fields)
    if atomic:  # Flink names the one column of an atomic result type EXPR$0
        return (("EXPR$0", types[0]),)
    return tuple((f"f{i}", t) for i, t in enumerate(types))


@dataclass(eq=False)
class Correlate(L.LNode):
    """Input row joined with each row the table function yields for it (LEFT: or one NULL row)."""

    function: str = ""
    target: str = ""
    operands: list[Expr] = field(default_factory=list)
    join_type: str = "INNER"  # INNER, LEFT
    deterministic: bool = True

    def input_needs_update_before(self, needs: bool) -> list[bool]:
        return [needs]

    def can_drop_update_before(self) -> bool:
        """As a projection: each input row maps to its own output rows, so it passes on its
        input's ability to leave out -U rows."""
        return L.UB not in self.mode or self.inputs[0].can_drop_update_before()


def bind_lateral(binder: Any, left: Any, join: exp.Join) -> Any:  # noqa: ANN401 - FromBinder, Rel
    """``left`` joined with ``LATERAL TABLE(f(...))``: the Rel of a Correlate (and a Calc over
    it for an inner join's ON condition other than TRUE)."""
    from deltaflow.processor.planner.relation import Rel, unique_fields

    lateral: exp.Lateral = join.this
    call = lateral.this
    if not (isinstance(call, exp.Anonymous) and str(call.this).upper() == "TABLE"):
        raise SqlError(
            "LATERAL takes TABLE(function(...)); deltaflow does not support lateral subqueries",
            *position(lateral),
        )
    fn = call.expressions[0] if len(call.expressions) == 1 else None
    if not isinstance(fn, exp.Func):
        raise SqlError("LATERAL TABLE(...) takes one function call", *position(lateral))
    name = function_name(fn)
    target = binder.functions.get(name)
    if target is None:
        raise SqlError(
            f"no table function {name}; register it with CREATE FUNCTION {name} AS 'module.attr' "
            "LANGUAGE PYTHON", *position(fn))  # fmt: skip
    columns, deterministic = udtf_signature(name, target)
    scope = Scope(left.columns, binder.functions)
    operands = [bind(a, scope) for a in arguments(fn)]
    join_type, condition = _join_type(join, lateral)
    qualifier = lateral.alias or None
    names = _aliased(lateral, [c for c, _ in columns])
    right = [
        ScopeColumn(qualifier, n, t.with_nullable(True) if join_type == "LEFT" else t)
        for n, (_, t) in zip(names, columns, strict=True)
    ]
    out = left.columns + right
    declared = [ScopeColumn(None, n, c.type) for (n, _), c in zip(columns, right, strict=True)]
    node = Correlate([left.node], unique_fields(left.columns + declared), function=name, target=target,
                     operands=operands, join_type=join_type, deterministic=deterministic)  # fmt: skip
    rel = Rel(node, out)
    if condition is None:
        return rel
    cond = bind(condition, Scope(out, binder.functions))
    proj: list[Expr] = [InputRef(c.type, i) for i, c in enumerate(out)]
    return Rel(L.Calc([node], unique_fields(out), projection=proj, condition=cond), out)


def _join_type(join: exp.Join, lateral: exp.Lateral) -> tuple[str, exp.Expr | None]:
    side = (join.side or "").upper()
    if side not in ("", "LEFT") or join.args.get("using"):
        raise SqlError(
            "a table function joins with ',', CROSS JOIN, JOIN ... ON or LEFT JOIN ... ON TRUE",
            *position(lateral),
        )
    on = join.args.get("on")
    is_true = on is None or (isinstance(on, exp.Boolean) and on.this is True)
    if side == "LEFT":
        if not is_true:
            raise SqlError(
                "a LEFT JOIN against LATERAL TABLE takes only ON TRUE as its condition; filter "
                "the function's columns in WHERE or an inner join's ON", *position(on))  # fmt: skip
        return "LEFT", None
    return "INNER", None if is_true else on


def _aliased(lateral: exp.Lateral, declared: list[str]) -> list[str]:
    alias: Any = lateral.args.get("alias")  # a TableAlias when it names columns
    names = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    if not names:
        return declared
    if len(names) != len(declared):
        raise SqlError(
            f"{alias.name or 'the alias'} names {len(names)} columns but the table function returns "
            f"{len(declared)} ({', '.join(declared)}); name each column once, in declared order",
            *position(alias))  # fmt: skip
    return names


def build_correlate(node: Correlate, base: dict[str, Any]) -> P.Node:
    return P.Correlate(
        **base,
        function=node.function,
        target=node.target,
        operands=tuple(node.operands),
        join_type=node.join_type,
    )


def describe_correlate(node: Correlate, render: Any) -> str:  # noqa: ANN401 - explain.render
    """Flink's ``PythonCorrelate(invocation=[f($1)], correlate=[table(f(s))], select=[...],
    rowType=[RecordType(...)], joinType=[INNER])``."""
    names = [f.name for f in node.inputs[0].fields]
    positional = [f"${i}" for i in range(len(names))]
    args = ", ".join(render(o, positional) for o in node.operands)
    named = ", ".join(render(o, names) for o in node.operands)
    row = ", ".join(f"{f.type.sql()} {f.name}" for f in node.fields)
    select = ",".join(f.name for f in node.fields)
    if node.function.startswith("$REPLICATE_ROWS"):  # Flink's built-in of INTERSECT / EXCEPT ALL
        inner = ",".join(render(o, names) for o in node.operands)
        return (
            f"Correlate(invocation=[{node.function}({args})], correlate=[table({node.function}({inner}))], "
            f"select=[{select}], rowType=[RecordType({row})], joinType=[{node.join_type}])"
        )
    if node.function.startswith("$UNNEST"):  # Flink's built-in: Correlate over $cor0's column
        cor = ", ".join(f"$cor0.{render(o, names)}" for o in node.operands)
        return (
            f"Correlate(invocation=[{node.function}({cor})], correlate=[table({node.function}({cor}))], "
            f"select=[{select}], rowType=[RecordType({row})], joinType=[{node.join_type}])"
        )
    return (
        f"PythonCorrelate(invocation=[{node.function}({args})], correlate=[table({node.function}({named}))], "
        f"select=[{select}], rowType=[RecordType({row})], joinType=[{node.join_type}])"
    )
