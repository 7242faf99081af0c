"""Binding sqlglot scalar expressions to typed ``deltaflow.processor.exprs`` nodes over a scope."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from sqlglot import exp

from deltaflow.formats.errors import DeltaflowError, SqlError
from deltaflow.formats.types import (
    BIGINT,
    BOOLEAN,
    CHAR,
    DOUBLE,
    INT,
    NULL,
    DataType,
    TypeParseError,
    parse_type,
    timestamp_ltz,
)
from deltaflow.processor.exprs.coercion import INTERVAL_DAY_TIME, INTERVAL_YEAR_MONTH
from deltaflow.processor.exprs.functions import infer_call, literal, make_cast, symbol
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, UdfCall
from deltaflow.processor.planner.udfs import udf_signature
from deltaflow.processor.sql.errors import closest, position

_BINARY = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%",
    exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
    exp.And: "AND", exp.Or: "OR", exp.Like: "LIKE", exp.DPipe: "||",
    exp.NullSafeEQ: "IS NOT DISTINCT FROM", exp.NullSafeNEQ: "IS DISTINCT FROM",
}  # fmt: skip
_RENAMED = {
    "LENGTH": "CHAR_LENGTH",
    "DAY_OF_WEEK": "DAYOFWEEK",
    "DAY_OF_MONTH": "DAYOFMONTH",
    "DAY_OF_YEAR": "DAYOFYEAR",
    "CURRENTTIMESTAMP": "CURRENT_TIMESTAMP",
    "CURRENTDATE": "CURRENT_DATE",
}
_UNIT_MS = {
    "SECOND": 1000,
    "MINUTE": 60_000,
    "HOUR": 3_600_000,
    "DAY": 86_400_000,
    "MILLISECOND": 1,
}
_UNIT_MONTHS = {"MONTH": 1, "YEAR": 12}


@dataclass(frozen=True)
class ScopeColumn:
    qualifier: str | None
    name: str
    type: DataType
    time_attr: str | None = None  # ROWTIME / PROCTIME


@dataclass
class Scope:
    """Columns visible to an expression, by index (for a join: left then right)."""

    columns: list[ScopeColumn]
    functions: dict[str, str]  # UDF name (upper case) -> 'module.attr'
    placeholders: dict[str, int] = field(default_factory=dict)  # rewritten subtrees -> column

    def resolve(self, column: exp.Column) -> InputRef:
        name, qual = column.name, column.table or None
        if qual is None and name in self.placeholders:
            index = self.placeholders[name]
            return InputRef(self.columns[index].type, index)
        hits = [
            i
            for i, c in enumerate(self.columns)
            if c.name == name and (qual is None or c.qualifier == qual)
        ]
        if len(hits) == 1:
            return InputRef(self.columns[hits[0]].type, hits[0])
        if hits:
            raise SqlError(
                f"Column '{name}' is ambiguous; qualify it with its table alias", *position(column)
            )
        pool = [c.name for c in self.columns if qual is None or c.qualifier == qual]
        where = f"table '{qual}'" if qual else "any table"
        raise SqlError(
            f"Column '{name}' not found in {where}{closest(name, pool)}", *position(column)
        )

    def has(self, column: exp.Column) -> bool:
        name, qual = column.name, column.table or None
        return any(c.name == name and (qual is None or c.qualifier == qual) for c in self.columns)


def bind(node: exp.Expr, scope: Scope) -> Expr:
    """A typed expression; user mistakes raise SqlError with the node's position."""
    try:
        return _bind(node, scope)
    except SqlError as err:
        if err.line or not position(node)[0]:
            raise
        raise SqlError(err.message, *position(node), err.highlight) from None
    except DeltaflowError as err:
        raise SqlError(str(err), *position(node)) from None


def _bind(node: exp.Expr, scope: Scope) -> Expr:  # noqa: C901 - a dispatch over node classes
    if isinstance(node, exp.Paren):
        return _bind(node.this, scope)
    if isinstance(node, exp.Column):
        return scope.resolve(node)
    if isinstance(node, exp.Literal | exp.Boolean | exp.Null):
        return _literal(node)
    if isinstance(node, exp.HexString):
        value = bytes.fromhex(str(node.this))
        return literal(value, DataType("BINARY", length=max(len(value), 1)))
    if isinstance(node, exp.Interval):
        return _interval(node)
    op = _BINARY.get(type(node))
    if op is not None:
        return infer_call(op, [_bind(node.this, scope), _bind(node.expression, scope)])
    if isinstance(node, exp.Not):
        if isinstance(node.this, exp.Is):
            return infer_call("IS NOT NULL", [_bind(node.this.this, scope)])
        return infer_call("NOT", [_bind(node.this, scope)])
    if isinstance(node, exp.Is):
        return infer_call("IS NULL", [_bind(node.this, scope)])
    if isinstance(node, exp.Neg):
        return infer_call("-", [literal(0, DataType(INT, False)), _bind(node.this, scope)])
    if isinstance(node, exp.Cast):
        return _cast(node, scope)
    if isinstance(node, exp.Case):
        return _case(node, scope)
    if isinstance(node, exp.In):
        return infer_call(
            "IN", [_bind(node.this, scope), *(_bind(e, scope) for e in node.expressions)]
        )
    if isinstance(node, exp.Between):
        args = [node.this, node.args["low"], node.args["high"]]
        return infer_call("BETWEEN", [_bind(e, scope) for e in args])
    if isinstance(node, exp.Func):
        return _function(node, scope)
    raise SqlError(
        f"deltaflow does not support the expression {node.sql()!r} here", *position(node)
    )


def _literal(node: exp.Expr) -> Expr:
    try:
        return _typed_literal(node)
    except (ArithmeticError, ValueError):
        raise SqlError(f"cannot read the number {node.sql()!r}", *position(node)) from None


def _typed_literal(node: exp.Expr) -> Expr:
    if isinstance(node, exp.Null):
        return literal(None, DataType(NULL))
    if isinstance(node, exp.Boolean):
        return literal(bool(node.this), DataType(BOOLEAN))
    text = node.this
    if node.is_string:
        return literal(text, DataType(CHAR, length=max(len(text), 1)))
    if "e" in text.lower():
        return literal(float(text), DataType(DOUBLE))
    if "." in text:
        value = Decimal(text)
        scale = max(-value.as_tuple().exponent, 0)  # type: ignore[operator]
        digits = len(value.as_tuple().digits)
        return literal(value, DataType("DECIMAL", precision=max(digits, scale), scale=scale))
    value_int = int(text)
    return literal(value_int, DataType(INT if -(2**31) <= value_int < 2**31 else BIGINT))


def _interval(node: exp.Interval) -> Expr:
    unit = (node.unit.name if node.unit else "SECOND").upper().rstrip("S")
    try:
        amount = float(str(node.this.this))
    except ValueError:
        raise SqlError(
            f"cannot read the interval {node.sql()!r}; write a quoted number and a unit, such as "
            "INTERVAL '10' SECOND", *position(node)) from None  # fmt: skip
    if unit in _UNIT_MONTHS:
        return literal(int(amount * _UNIT_MONTHS[unit]), DataType(INTERVAL_YEAR_MONTH))
    if unit not in _UNIT_MS:
        raise SqlError(
            f"unsupported interval unit {unit!r}; use SECOND, MINUTE, HOUR, DAY, MONTH or YEAR",
            *position(node),
        )
    return literal(int(amount * _UNIT_MS[unit]), DataType(INTERVAL_DAY_TIME))


_FLINK_TYPE_NAMES = {"TEXT": "STRING", "TIMESTAMPLTZ": "TIMESTAMP_LTZ"}
_SQLGLOT_TYPE_NAMES = re.compile(r"\b(TEXT|TIMESTAMPLTZ)\b")


def _cast(node: exp.Cast, scope: Scope) -> Expr:
    # sqlglot renders Flink's STRING as TEXT and TIMESTAMP_LTZ as TIMESTAMPLTZ, nested too
    text = _SQLGLOT_TYPE_NAMES.sub(lambda m: _FLINK_TYPE_NAMES[m.group(0)], node.to.sql())
    try:
        target = parse_type(text)
    except (TypeParseError, ValueError) as err:  # parse_type lets int() errors through
        raise SqlError(f"{err}", *position(node)) from None
    return make_cast(_bind(node.this, scope), target, try_cast=isinstance(node, exp.TryCast))


def _case(node: exp.Case, scope: Scope) -> Expr:
    operands: list[Expr] = []
    subject = node.this
    for when in node.args.get("ifs") or []:
        cond = when.this if subject is None else exp.EQ(this=subject.copy(), expression=when.this)
        operands += [_bind(cond, scope), _bind(when.args["true"], scope)]
    default = node.args.get("default")
    operands.append(_bind(default, scope) if default is not None else literal(None, DataType(NULL)))
    return infer_call("CASE", operands)


def function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).upper()
    if isinstance(node, exp.Pad):  # sqlglot parses LPAD and RPAD as one Pad node
        return "LPAD" if node.args.get("is_left") else "RPAD"
    name = node.sql_name().upper()
    return _RENAMED.get(name, name)


def _function(node: exp.Func, scope: Scope) -> Expr:
    name = function_name(node)
    if name in ("EXTRACT",):
        return infer_call(name, [symbol(node.this.name), _bind(node.expression, scope)])
    if isinstance(node, exp.Floor | exp.Ceil) and isinstance(node.args.get("to"), exp.Var):
        # FLOOR(ts TO HOUR): the unit is a symbol operand, as for EXTRACT
        return infer_call(name, [_bind(node.this, scope), symbol(node.args["to"].name)])
    args = _arguments(node)
    if (
        name in ("TIMESTAMPDIFF", "TIMESTAMPADD")
        and args
        and isinstance(args[0], exp.Column | exp.Var)
    ):
        unit = symbol(args[0].name)
        return infer_call(name, [unit, *(_bind(a, scope) for a in args[1:])])
    if name == "PROCTIME" and not args:
        return Call(timestamp_ltz(3, nullable=False), "PROCTIME", ())
    operands = [_bind(a, scope) for a in args]
    target = scope.functions.get(name)
    if target is not None:
        dtype, deterministic = udf_signature(name, target)
        return UdfCall(dtype, name, target, tuple(operands), deterministic)
    return infer_call(name, operands)


def _arguments(node: exp.Func) -> list[exp.Expr]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    if isinstance(node, exp.Initcap):  # sqlglot adds its default delimiters as an argument
        return [node.this]
    out: list[exp.Expr] = []
    for key in node.arg_types:
        value = node.args.get(key)
        if isinstance(value, list):
            out += [v for v in value if isinstance(v, exp.Expr)]
        elif isinstance(value, exp.Expr):
            out.append(value)
    return out
