"""Flink's built-in scalar functions: type inference and determinism flags.

``infer_call`` is what the planner calls when it binds ``op(operands)``: it checks the
operand types against Flink's signatures, inserts the implicit casts Flink inserts
(for example a STRING literal compared with a TIMESTAMP), and returns the typed
``Call``. CAST/TRY_CAST have their own constructor, ``make_cast``.
"""

from __future__ import annotations

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import NULL, DataType
from deltaflow.processor.exprs import nested, operators
from deltaflow.processor.exprs.coercion import SYMBOL, cast_type_ok
from deltaflow.processor.exprs.nodes import Call, Expr, Literal
from deltaflow.processor.exprs.signatures import FIXED, Fixed, matches, render


class FunctionError(SqlError):
    """A call of an unknown function, or with argument types no signature accepts."""


# Flink (Calcite) marks these non-deterministic; in streaming they are evaluated per record.
_NON_DETERMINISTIC = frozenset(
    {
        "RAND",
        "RAND_INTEGER",
        "UUID",
        "NOW",
        "CURRENT_TIMESTAMP",
        "CURRENT_ROW_TIMESTAMP",
        "LOCALTIMESTAMP",
        "CURRENT_DATE",
        "CURRENT_TIME",
        "LOCALTIME",
        "UNIX_TIMESTAMP",
        "PROCTIME",
    }
)
# Calcite's "dynamic functions": constant within a batch query, per record in streaming.
_DYNAMIC = frozenset(
    {
        "NOW",
        "CURRENT_TIMESTAMP",
        "LOCALTIMESTAMP",
        "CURRENT_DATE",
        "CURRENT_TIME",
        "LOCALTIME",
        "CURRENT_ROW_TIMESTAMP",
        "UNIX_TIMESTAMP",
    }
)


def function_names() -> list[str]:
    """Every operator and function name ``infer_call`` accepts."""
    return sorted(set(FIXED) | set(operators.INFER) | set(nested.INFER) | {"CAST", "TRY_CAST"})


def is_deterministic(op: str) -> bool:
    return op.upper() not in _NON_DETERMINISTIC


def is_dynamic(op: str) -> bool:
    return op.upper() in _DYNAMIC


def infer_call(op: str, operands: list[Expr]) -> Call:
    """Type ``op(operands)`` with Flink's rules; raises ``FunctionError`` for a bad call."""
    name = op.upper()
    operands = list(operands)
    special = operators.INFER.get(name) or nested.INFER.get(name)
    if special is not None:
        try:
            return special(name, operands)
        except operators.BadCall as bad:
            raise _bad_call(name, operands, bad.accepted, bad.reason) from None
    fixed = FIXED.get(name)
    if fixed is None:
        if name in ("CAST", "TRY_CAST"):
            raise FunctionError(f"{name} needs a target type; bind it with make_cast()")
        raise _unknown(name)
    return _infer_fixed(name, fixed, operands)


def _infer_fixed(name: str, fixed: Fixed, operands: list[Expr]) -> Call:
    for signature in fixed.signatures:
        if matches(signature, operands):
            base = fixed.result(operands)
            nullable = _nullable(fixed.nulls, operands)
            return Call(base.with_nullable(nullable), name, tuple(operands))
    accepted = [render(name, s) for s in fixed.signatures]
    raise _bad_call(name, operands, accepted, "")


def _nullable(rule: str, operands: list[Expr]) -> bool:
    if rule == "never":
        return False
    if rule == "always":
        return True
    if rule == "first":
        return operands[0].type.nullable
    return any(o.type.nullable for o in operands if o.type.root != SYMBOL)


def make_cast(expr: Expr, target: DataType, *, try_cast: bool = False) -> Call:
    """``CAST(expr AS target)`` / ``TRY_CAST``; the result is nullable if the input is (always
    for TRY_CAST). Raises ``FunctionError`` for a cast Flink does not support."""
    op = "TRY_CAST" if try_cast else "CAST"
    if not cast_type_ok(expr.type, target):
        raise FunctionError(
            f"cannot cast {expr.type.sql()} to {target.sql()}: Flink does not support this "
            "cast; convert through an intermediate type or use a function"
        )
    nullable = True if try_cast else expr.type.nullable or expr.type.root == NULL
    if not nullable and target.nullable:
        target = target.not_null()
    return Call(target.with_nullable(nullable), op, (expr,))


def symbol(keyword: str) -> Literal:
    """A time unit or flag operand: ``EXTRACT(DAY FROM ts)`` -> ``symbol('DAY')``."""
    return Literal(DataType(SYMBOL, nullable=False), keyword.upper())


def literal(value: object, dtype: DataType) -> Literal:
    """A typed constant; NOT NULL unless ``value`` is None."""
    return Literal(dtype.with_nullable(value is None), value)


def _unknown(name: str) -> FunctionError:
    close = [n for n in function_names() if n[:3] == name[:3]]
    hint = f" Did you mean {', '.join(close[:5])}?" if close else ""
    return FunctionError(
        f"No match found for function signature {name}: {name} is not a Flink built-in "
        f"function deltaflow supports; register a Python UDF with CREATE FUNCTION.{hint}"
    )


def _bad_call(name: str, operands: list[Expr], accepted: list[str], reason: str) -> FunctionError:
    got = f"{name}({', '.join(_type_name(o) for o in operands)})"
    text = f"Invalid function call {got}"
    if reason:
        text += f": {reason}"
    if accepted:
        text += ". Supported signatures: " + "; ".join(accepted)
    return FunctionError(text)


def _type_name(e: Expr) -> str:
    if e.type.root == SYMBOL and isinstance(e, Literal):
        return str(e.value)
    return e.type.sql()
