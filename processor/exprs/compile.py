"""Compile bound expressions to Python functions, once, at plan time.

``compile_calc`` generates ONE Python function per Calc: it loops over the batch and
evaluates the filter and every projected column inline, so a row costs one loop
iteration, never a walk over an expression tree or a chain of closures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from deltaflow.formats.errors import DeltaflowError
from deltaflow.formats.generated import define, definition, generated_at
from deltaflow.processor.exprs import gen_functions, gen_nested, gen_operators  # noqa: F401 - registers generators
from deltaflow.processor.exprs.codegen import Gen, describe
from deltaflow.processor.exprs.errors import EvalError
from deltaflow.processor.exprs.nodes import Expr

CalcFn = Callable[[list[int], list[tuple]], tuple[list[int], list[tuple]]]


@dataclass
class EvalContext:
    """Session settings expressions depend on: ``table.local-time-zone``."""

    time_zone: str = "UTC"


_GUARD = """    except (_EvalError, TypeError, ValueError, ArithmeticError, AttributeError, IndexError) as err:
        raise _located(err, r) from err
"""


class _Where:
    """Which expression of one generated function a line holds: its text and SQL position,
    so that an error names the node, the expression and where the job's SQL wrote it."""

    def __init__(self, what: str, names: list[str] | None = None) -> None:
        self.what = what  # the whole function's expressions, for a line not in ``lines``
        self.names = names  # the input's column names, when known
        self.lines: dict[int, Expr] = {}

    def mark(self, source: str, expr: Expr) -> str:
        """The line the next text appended to ``source`` is on holds ``expr``."""
        self.lines[source.count("\n") + 1] = expr
        return source

    def __call__(self, err: BaseException, row: object) -> EvalError:
        if isinstance(err, EvalError) and err.node:
            return err  # located by the generated code it came from
        at = generated_at(err.__traceback__)
        expr = self.lines.get(at[1]) if at else None
        defined = definition(at[0]) if at else None
        node = defined.owner if defined and defined.owner else "an expression"
        what = describe(expr, self.names) if expr is not None else self.what
        line, col = getattr(expr, "pos", (0, 0))
        where = f" at SQL line {line}, column {col}" if line else ""
        reason = str(err) if isinstance(err, EvalError) else f"cannot evaluate {what}: {err}"
        located = EvalError(f"{node} failed on {what}{where}, for the row {row!r}: {reason}")
        located.node, located.line, located.col = node, line, col
        return located


def _build(source: str, name: str, g: Gen, where: _Where) -> Callable:  # type: ignore[type-arg]
    g.ns["_located"] = where
    return define(source, name, g.ns)  # type: ignore[no-any-return]


def _gen(ctx: EvalContext | None) -> Gen:
    try:
        return Gen((ctx or EvalContext()).time_zone)
    except (KeyError, ValueError) as err:
        raise DeltaflowError(
            f"unknown time zone {ctx.time_zone!r} in table.local-time-zone: {err}; use an IANA "  # type: ignore[union-attr]
            "name such as 'Europe/Berlin' or 'UTC'"
        ) from None


def compile_calc(
    projection: list[Expr],
    condition: Expr | None,
    ctx: EvalContext | None = None,
    names: list[str] | None = None,
) -> CalcFn:
    """``f(kinds, rows) -> (kinds, rows)``: rows where ``condition`` is TRUE, projected.

    Each row keeps its own kind; a row whose condition is FALSE or NULL is dropped. Each
    expression is generated on a line of its own, which names it in an error (with the
    input's column ``names`` when given).
    """
    g = _gen(ctx)
    what = ", ".join(describe(p, names) for p in projection)
    if condition is not None:
        what = f"{what} WHERE {describe(condition, names)}"
    where = _Where(what, names)
    source = (
        "def _calc(kinds, rows):\n"
        f"    out_kinds = {'None' if condition is None else '[]'}\n"
        + ("" if condition is None else "    out_kinds_append = out_kinds.append\n")
        + "    out_rows = []\n"
        "    out_rows_append = out_rows.append\n"
        "    r = None\n"
        "    try:\n"
    )
    if condition is None:
        source += "        for r in rows:\n"
        pad = " " * 12
    else:
        source += "        for k, r in zip(kinds, rows):\n"
        source = where.mark(source, condition) + f"            if {g.expr(condition)}:\n"
        source += "                out_kinds_append(k)\n"
        pad = " " * 16
    source += f"{pad}out_rows_append((\n"
    for p in projection:
        source = where.mark(source, p) + f"{pad}    {g.expr(p)},\n"
    source += f"{pad}))\n"
    if condition is None:
        source += "        out_kinds = list(kinds)\n"
    source += f"{_GUARD}    return out_kinds, out_rows\n"
    return _build(source, "_calc", g, where)  # type: ignore[return-value]


def compile_scalar(expr: Expr, ctx: EvalContext | None = None) -> Callable[[tuple], object]:
    """``f(row) -> value`` of one expression."""
    g = _gen(ctx)
    where = _Where(describe(expr))
    head = where.mark("def _scalar(r):\n    try:\n", expr)
    source = f"{head}        return {g.expr(expr)}\n{_GUARD}"
    return _build(source, "_scalar", g, where)  # type: ignore[no-any-return]


def compile_predicate(expr: Expr, ctx: EvalContext | None = None) -> Callable[[tuple], bool]:
    """``f(row) -> bool``: TRUE only when the condition is TRUE (NULL counts as FALSE)."""
    g = _gen(ctx)
    where = _Where(describe(expr))
    head = where.mark("def _predicate(r):\n    try:\n", expr)
    source = f"{head}        return ({g.expr(expr)}) is True\n{_GUARD}"
    return _build(source, "_predicate", g, where)  # type: ignore[no-any-return]


def compile_key(indexes: tuple[int, ...]) -> Callable[[tuple], tuple]:  # type: ignore[type-arg]
    """``f(row) -> tuple`` of the given columns, always a tuple (also for 0 or 1 columns)."""
    items = "".join(f"r[{i}], " for i in indexes)
    source = f"def _key(r):\n    return ({items})\n"
    return define(source, "_key")  # type: ignore[no-any-return]


__all__ = [
    "CalcFn",
    "EvalContext",
    "EvalError",
    "compile_calc",
    "compile_key",
    "compile_predicate",
    "compile_scalar",
]
