"""Binding sqlglot scalar expressions to typed ``deltaflow.processor.exprs`` nodes over a scope."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
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
    NUMERIC_ROOTS,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    DataType,
    TypeParseError,
    parse_type,
)
from deltaflow.processor.exprs.functions import infer_call, literal, make_cast
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, Literal, UdfCall
from deltaflow.processor.planner.bind_functions import BARE_FUNCTIONS, bind_function
from deltaflow.processor.planner.bind_intervals import interval_literal
from deltaflow.processor.planner.bind_nested import (
    bind_array,
    bind_bracket,
    bind_dot,
    bind_row,
    column_parts,
    resolve_path,
)
from deltaflow.processor.sql.errors import closest, position, start_position

_BINARY: dict[type[exp.Expr], str] = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%",
    exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
    exp.And: "AND", exp.Or: "OR", exp.DPipe: "||",
    exp.NullSafeEQ: "IS NOT DISTINCT FROM", exp.NullSafeNEQ: "IS DISTINCT FROM",
}  # fmt: skip


@dataclass(frozen=True)
class ScopeColumn:
    qualifier: str | None
    name: str
    type: DataType
    time_attr: str | None = None  # ROWTIME / PROCTIME
    # ("start" | "end", WindowSpec): a window's bound that outlives its window aggregate, so a
    # later GROUP BY over both bounds is a window aggregate again (Flink's window properties)
    window_prop: tuple[str, object] | None = None


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
        bound = _bind(node, scope)
    except SqlError as err:
        if err.line or not position(node)[0]:
            raise
        raise SqlError(err.message, *position(node), err.highlight) from None
    except DeltaflowError as err:
        raise SqlError(str(err), *position(node)) from None
    if isinstance(bound, Call | UdfCall) and bound.pos == (0, 0):
        bound = replace(bound, pos=start_position(node))  # named by its runtime errors
    return bound


def _bind(node: exp.Expr, scope: Scope) -> Expr:  # noqa: C901 - a dispatch over node classes
    if isinstance(node, exp.Paren):
        return _bind(node.this, scope)
    if isinstance(node, exp.Column):
        return _column(node, scope)
    if isinstance(node, exp.Literal | exp.Boolean | exp.Null):
        return _literal(node)
    if isinstance(node, exp.HexString):
        value = bytes.fromhex(str(node.this))
        return literal(value, DataType("BINARY", length=max(len(value), 1)))
    if isinstance(node, exp.Interval):
        return interval_literal(node)
    op = _BINARY.get(type(node))
    if op is not None:
        return infer_call(op, [_bind(node.this, scope), _bind(node.expression, scope)])
    if isinstance(node, exp.Like) or (
        isinstance(node, exp.Escape) and isinstance(node.this, exp.Like)
    ):
        return _like(node, scope)
    if isinstance(node, exp.Not):
        if isinstance(node.this, exp.Is):
            return _is(node.this, scope, "IS NOT")
        return infer_call("NOT", [_bind(node.this, scope)])
    if isinstance(node, exp.Is):
        return _is(node, scope, "IS")
    if isinstance(node, exp.Neg):
        return _negate(_bind(node.this, scope))
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
    if isinstance(node, exp.Dot):
        return bind_dot(node, scope, lambda e: _bind(e, scope))
    if isinstance(node, exp.Bracket):
        return bind_bracket(node, lambda e: _bind(e, scope))
    if isinstance(node, exp.Tuple):
        return bind_row(node, lambda e: _bind(e, scope))
    if isinstance(node, exp.Array):
        return bind_array(node, lambda e: _bind(e, scope))
    if isinstance(node, exp.Func):
        return bind_function(node, lambda e: _bind(e, scope), scope.functions)
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


_FLINK_TYPE_NAMES = {"TEXT": "STRING", "TIMESTAMPLTZ": "TIMESTAMP_LTZ", "STRUCT": "ROW"}
_SQLGLOT_TYPE_NAMES = re.compile(r"\b(TEXT|TIMESTAMPLTZ|STRUCT)\b")


def _cast(node: exp.Cast, scope: Scope) -> Expr:
    # sqlglot renders Flink's STRING as TEXT and TIMESTAMP_LTZ as TIMESTAMPLTZ, nested too
    text = _SQLGLOT_TYPE_NAMES.sub(lambda m: _FLINK_TYPE_NAMES[m.group(0)], node.to.sql())
    try:
        target = parse_type(text)
    except (TypeParseError, ValueError) as err:  # parse_type lets int() errors through
        raise SqlError(f"{err}", *position(node)) from None
    if _typed_literal_form(node) and target.root in (TIMESTAMP, TIME):
        # TIMESTAMP '2024-01-01 10:00:00.5' has the precision its fraction is written with
        fraction = str(node.this.this).rpartition(".")[2] if "." in str(node.this.this) else ""
        target = DataType(target.root, precision=len(fraction.strip()))
    operand = _bind(node.this, scope)
    if target.root == TIMESTAMP_LTZ and operand.type.root in NUMERIC_ROOTS:
        raise SqlError(
            f"The cast from NUMERIC type to TIMESTAMP_LTZ type is not allowed: {node.sql()!r}; "
            "use TO_TIMESTAMP_LTZ(numeric, precision) instead", *position(node))  # fmt: skip
    return make_cast(operand, target, try_cast=isinstance(node, exp.TryCast))


def _typed_literal_form(node: exp.Cast) -> bool:
    """``TIMESTAMP '...'`` rather than ``CAST('...' AS TIMESTAMP)``: sqlglot builds the typed
    literal's Cast without the ``safe`` argument an explicit CAST carries."""
    return isinstance(node.this, exp.Literal) and node.this.is_string and "safe" not in node.args


def _case(node: exp.Case, scope: Scope) -> Expr:
    operands: list[Expr] = []
    subject = node.this
    for when in node.args.get("ifs") or []:
        cond = when.this if subject is None else exp.EQ(this=subject.copy(), expression=when.this)
        operands += [_bind(cond, scope), _bind(when.args["true"], scope)]
    default = node.args.get("default")
    operands.append(_bind(default, scope) if default is not None else literal(None, DataType(NULL)))
    return infer_call("CASE", operands)


def _column(node: exp.Column, scope: Scope) -> Expr:
    """A column; ``LOCALTIMESTAMP``, ``CURRENT_DATE`` ... unquoted and not a column are calls."""
    name = node.name.upper()
    quoted = isinstance(node.this, exp.Identifier) and node.this.quoted
    if name in BARE_FUNCTIONS and not node.table and not quoted and not scope.has(node):
        return infer_call(name, [])
    if node.table and not scope.has(node):
        nested = resolve_path(scope, column_parts(node))  # r.f, t.r.f, r.f.g: ROW fields
        if nested is not None:
            return nested
    return scope.resolve(node)


def _like(node: exp.Like | exp.Escape, scope: Scope) -> Expr:
    """``s [NOT] LIKE pattern [ESCAPE c]``; sqlglot wraps the LIKE in an Escape node."""
    escape = node.expression if isinstance(node, exp.Escape) else None
    like = node.this if isinstance(node, exp.Escape) else node
    op = "NOT LIKE" if like.args.get("negate") else "LIKE"
    args = [like.this, like.expression] + ([escape] if escape is not None else [])
    return infer_call(op, [_bind(e, scope) for e in args])


def _is(node: exp.Is, scope: Scope, op: str) -> Expr:
    """``x IS [NOT] NULL`` and ``b IS [NOT] TRUE|FALSE``."""
    test = node.expression
    if isinstance(test, exp.Boolean):
        return infer_call(f"{op} {'TRUE' if test.this else 'FALSE'}", [_bind(node.this, scope)])
    return infer_call(f"{op} NULL", [_bind(node.this, scope)])


def _negate(operand: Expr) -> Expr:
    """Unary minus keeps the operand's type; ``-1`` is a literal, as Flink folds it."""
    value = operand.value if isinstance(operand, Literal) else None
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        return literal(-value, operand.type)
    return infer_call("-", [operand])
