"""Small builders so expression tests read like SQL."""

from __future__ import annotations

from deltaflow.formats.types import DataType, parse_type
from deltaflow.processor.exprs.compile import EvalContext, compile_scalar
from deltaflow.processor.exprs.functions import infer_call, literal, make_cast, symbol
from deltaflow.processor.exprs.nodes import Expr, InputRef


def t(text: str) -> DataType:
    return parse_type(text)


def col(index: int, type_text: str) -> InputRef:
    return InputRef(t(type_text), index)


def lit(value: object, type_text: str) -> Expr:
    return literal(value, t(type_text))


def null(type_text: str = "NULL") -> Expr:
    return literal(None, t(type_text))


def call(op: str, *operands: Expr) -> Expr:
    return infer_call(op, list(operands))


def cast(expr: Expr, type_text: str, try_cast: bool = False) -> Expr:
    return make_cast(expr, t(type_text), try_cast=try_cast)


def unit(name: str) -> Expr:
    return symbol(name)


def ev(expr: Expr, row: tuple = (), time_zone: str = "UTC") -> object:
    return compile_scalar(expr, EvalContext(time_zone))(row)


def s(value: str) -> Expr:
    return lit(value, "STRING")


def i(value: int) -> Expr:
    return lit(value, "INT")
