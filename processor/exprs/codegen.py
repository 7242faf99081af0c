"""Expression trees to Python source text: each node becomes one inline Python expression.

NULL handling is spelled out in the generated text: an operand that may be NULL is bound
once with ``:=`` and tested with ``is None``; an operand typed NOT NULL is used directly.
Constants that are not plain literals (Decimals, datetimes, compiled regexes, helper
functions) are bound to names in the namespace the generated function runs in.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from deltaflow.formats.errors import DeltaflowError
from deltaflow.formats.generated import define
from deltaflow.formats.types import NULL, DataType
from deltaflow.processor.exprs import lib_numeric, lib_strings, lib_temporal
from deltaflow.processor.exprs.casts import cast_function
from deltaflow.processor.exprs.errors import EvalError
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, Literal, UdfCall
from deltaflow.processor.exprs.udf_loading import import_target

Generator = Callable[["Gen", Call], str]
GENERATORS: dict[str, Generator] = {}

# Operators whose value depends on their operands only: a tree of them over literals
# (TPC-H's ``DATE '1995-09-01' + INTERVAL '1' MONTH``, a CAST of a string literal) is
# computed once when the function is generated, not once per row.
FOLDED = frozenset({"CAST", "TRY_CAST", "+", "-", "*", "/"})
_UNFOLDED = object()


def _constant(e: Expr) -> bool:
    if isinstance(e, Literal):
        return True
    return isinstance(e, Call) and e.op in FOLDED and all(map(_constant, e.operands))


def generator(*ops: str) -> Callable[[Generator], Generator]:
    def register(fn: Generator) -> Generator:
        for op in ops:
            GENERATORS[op] = fn
        return fn

    return register


def _try(fn: Callable[[object], object], value: object) -> object:
    try:
        return fn(value)
    except (EvalError, ValueError, ArithmeticError, OverflowError):
        return None


class Gen:
    """Builds the source of one generated function and the namespace it runs in."""

    def __init__(self, time_zone: str) -> None:
        self.time_zone = time_zone
        self.tz = lib_temporal.zone(time_zone)
        self.ns: dict[str, object] = {
            "_EvalError": EvalError,
            "_n": lib_numeric,
            "_s": lib_strings,
            "_t": lib_temporal,
            "_tz": self.tz,
            "_C": lib_numeric.CTX,
            # DECIMAL + - * in CTX and their rounding to the result type, without an
            # attribute lookup per row
            "_fit": lib_numeric.fit,
            "_Cadd": lib_numeric.CTX.add,
            "_Csubtract": lib_numeric.CTX.subtract,
            "_Cmultiply": lib_numeric.CTX.multiply,
            "_try": _try,
        }
        self._count = 0
        self.folds = True  # constant subexpressions computed once (see FOLDED)

    def tmp(self) -> str:
        self._count += 1
        return f"_v{self._count}"

    def bind(self, value: object, prefix: str = "_k") -> str:
        """A name for ``value`` in the generated function's namespace."""
        self._count += 1
        name = f"{prefix}{self._count}"
        self.ns[name] = value
        return name

    def expr(self, e: Expr) -> str:
        if isinstance(e, InputRef):
            return f"r[{e.index}]"
        if isinstance(e, Literal):
            return self.literal(e.value)
        if isinstance(e, UdfCall):
            return self.udf(e)
        if isinstance(e, Call):
            if self.folds and e.op in FOLDED and _constant(e):
                value = self._fold(e)
                if value is not _UNFOLDED:
                    return self.literal(value)
            gen = GENERATORS.get(e.op)
            if gen is None:
                raise DeltaflowError(
                    f"deltaflow cannot evaluate {e.op} yet; rewrite the expression without it"
                )
            return gen(self, e)
        raise DeltaflowError(f"cannot compile expression node {type(e).__name__}")

    def _fold(self, e: Call) -> object:
        """The value of a constant expression, computed once by its own generated code
        (as each row would compute it); ``_UNFOLDED`` when that fails: the per-row code
        then raises the error where a row meets it, as before."""
        sub = Gen(self.time_zone)
        sub.folds = False
        code = sub.expr(e)
        fn = define(f"def _constant():\n    return {code}\n", "_constant", sub.ns, "constant")
        try:
            value = fn()
            hash(value)  # a list or dict (ARRAY, MAP) is built per row: rows may not share it
        except Exception:  # noqa: BLE001 - any failure is left to the per-row code
            return _UNFOLDED
        return value

    def literal(self, value: object) -> str:
        if value is None or type(value) in (bool, int):
            return repr(value)
        if type(value) is float and math.isfinite(value):  # type: ignore[arg-type]
            return repr(value)
        if type(value) is str and len(value) < 200:  # type: ignore[arg-type]
            return repr(value)
        return self.bind(value)

    def strict(self, operands: tuple[Expr, ...] | list[Expr], build: Callable[..., str]) -> str:
        """``build(*operand_texts)`` with NULL in any operand giving NULL."""
        checks: list[str] = []
        args: list[str] = []
        for o in operands:
            if isinstance(o, Literal) and o.value is None:
                return "None"
            code = self.expr(o)
            if o.type.nullable and not isinstance(o, Literal):
                t = self.tmp()
                checks.append(f"({t} := {code}) is None")
                args.append(t)
            else:
                args.append(code)
        body = build(*args)
        if not checks:
            return body
        return f"(None if {' or '.join(checks)} else {body})"

    def cast(self, e: Expr, target: DataType, try_cast: bool = False) -> str:
        if e.type.root == NULL or isinstance(e, Literal) and e.value is None:
            return "None"
        fn = cast_function(e.type, target, self.tz)
        if fn is None:
            return self.expr(e)
        name = self.bind(fn, "_cast")
        if try_cast:
            return self.strict([e], lambda a: f"_try({name}, {a})")
        return self.strict([e], lambda a: f"{name}({a})")

    def udf(self, e: UdfCall) -> str:
        fn = import_target("function", e.name, e.target)
        if isinstance(fn, type) and hasattr(fn, "eval"):
            fn = fn().eval  # a ScalarFunction-style class: one instance per compiled function
        elif hasattr(fn, "eval") and not callable(fn):
            fn = fn.eval
        name = self.bind(fn, "_udf")
        return f"{name}({', '.join(self.expr(o) for o in e.operands)})"

    def const_value(self, e: Expr, what: str) -> object:
        """The value of a literal operand (a seed, a number of digits); errors otherwise."""
        if not isinstance(e, Literal) or e.value is None:
            raise DeltaflowError(f"{what} must be a constant, not {describe(e)}")
        return e.value


def describe(e: Expr, names: list[str] | None = None) -> str:
    """A short SQL-like rendering for error messages: ``$0 + $1``, ``UPPER($2)``; with the
    input's column ``names``, ``a + b``."""
    if isinstance(e, InputRef):
        return names[e.index] if names and e.index < len(names) else f"${e.index}"
    if isinstance(e, Literal):
        return "NULL" if e.value is None else repr(e.value)
    args = [describe(o, names) for o in getattr(e, "operands", ())]
    if isinstance(e, UdfCall):
        return f"{e.name}({', '.join(args)})"
    assert isinstance(e, Call)
    if e.op in ("CAST", "TRY_CAST"):
        return f"{e.op}({args[0]} AS {e.type.sql()})"
    if len(args) == 2 and not e.op.isalpha():
        return f"({args[0]} {e.op} {args[1]})"
    return f"{e.op}({', '.join(args)})"
