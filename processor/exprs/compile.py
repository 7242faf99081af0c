"""Compile bound expressions to Python functions, once, at plan time.

``compile_calc`` generates ONE Python function per Calc: it loops over the batch and
evaluates the filter and every projected column inline, so a row costs one loop
iteration, never a walk over an expression tree or a chain of closures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.exprs import gen_functions, gen_nested, gen_operators  # noqa: F401 - registers generators
from deltaflow.processor.exprs.codegen import Gen, describe
from deltaflow.processor.exprs.errors import EvalError
from deltaflow.processor.exprs.nodes import Expr

CalcFn = Callable[[list[int], list[tuple]], tuple[list[int], list[tuple]]]


@dataclass
class EvalContext:
    """Session settings expressions depend on: ``table.local-time-zone``."""

    time_zone: str = "UTC"


_GUARD = """    except _EvalError:
        raise
    except (TypeError, ValueError, ArithmeticError, AttributeError, IndexError) as err:
        raise _EvalError(f"cannot evaluate {_what} on row {r!r}: {err}") from err
"""


def _build(source: str, name: str, g: Gen, what: str) -> Callable:  # type: ignore[type-arg]
    g.ns["_what"] = what
    code = compile(source, f"<deltaflow {name}>", "exec")
    exec(code, g.ns)  # noqa: S102 - generated from typed plan nodes, not user text
    fn = g.ns[name]
    fn.__deltaflow_source__ = source  # type: ignore[attr-defined]
    return cast(Callable[..., Any], fn)


def _gen(ctx: EvalContext | None) -> Gen:
    try:
        return Gen((ctx or EvalContext()).time_zone)
    except (KeyError, ValueError) as err:
        raise DeltaflowError(
            f"unknown time zone {ctx.time_zone!r} in table.local-time-zone: {err}; use an IANA "  # type: ignore[union-attr]
            "name such as 'Europe/Berlin' or 'UTC'"
        ) from None


def compile_calc(
    projection: list[Expr], condition: Expr | None, ctx: EvalContext | None = None
) -> CalcFn:
    """``f(kinds, rows) -> (kinds, rows)``: rows where ``condition`` is TRUE, projected.

    Each row keeps its own kind; a row whose condition is FALSE or NULL is dropped.
    """
    g = _gen(ctx)
    row = "(" + "".join(f"{g.expr(p)}, " for p in projection) + ")"
    what = ", ".join(describe(p) for p in projection)
    if condition is None:
        body = f"""        for r in rows:
            out_rows_append({row})
        out_kinds = list(kinds)
"""
        init = "    out_kinds = None\n"
    else:
        what = f"{what} WHERE {describe(condition)}"
        body = f"""        for k, r in zip(kinds, rows):
            if {g.expr(condition)}:
                out_kinds_append(k)
                out_rows_append({row})
"""
        init = "    out_kinds = []\n    out_kinds_append = out_kinds.append\n"
    source = (
        "def _calc(kinds, rows):\n"
        f"{init}"
        "    out_rows = []\n"
        "    out_rows_append = out_rows.append\n"
        "    r = None\n"
        "    try:\n"
        f"{body}"
        f"{_GUARD}"
        "    return out_kinds, out_rows\n"
    )
    return _build(source, "_calc", g, what)  # type: ignore[return-value]


def compile_scalar(expr: Expr, ctx: EvalContext | None = None) -> Callable[[tuple], object]:
    """``f(row) -> value`` of one expression."""
    g = _gen(ctx)
    source = f"def _scalar(r):\n    try:\n        return {g.expr(expr)}\n{_GUARD}"
    return _build(source, "_scalar", g, describe(expr))  # type: ignore[no-any-return]


def compile_predicate(expr: Expr, ctx: EvalContext | None = None) -> Callable[[tuple], bool]:
    """``f(row) -> bool``: TRUE only when the condition is TRUE (NULL counts as FALSE)."""
    g = _gen(ctx)
    source = f"def _predicate(r):\n    try:\n        return ({g.expr(expr)}) is True\n{_GUARD}"
    return _build(source, "_predicate", g, describe(expr))  # type: ignore[no-any-return]


def compile_key(indexes: tuple[int, ...]) -> Callable[[tuple], tuple]:  # type: ignore[type-arg]
    """``f(row) -> tuple`` of the given columns, always a tuple (also for 0 or 1 columns)."""
    items = "".join(f"r[{i}], " for i in indexes)
    source = f"def _key(r):\n    return ({items})\n"
    ns: dict[str, object] = {}
    exec(compile(source, "<deltaflow key>", "exec"), ns)  # noqa: S102
    return ns["_key"]  # type: ignore[return-value]


__all__ = [
    "CalcFn",
    "EvalContext",
    "EvalError",
    "compile_calc",
    "compile_key",
    "compile_predicate",
    "compile_scalar",
]
