"""Code generators for SQL operators: arithmetic, comparisons, logic, CASE and friends."""

from __future__ import annotations

from deltaflow.formats.types import (
    BOOLEAN,
    DECIMAL,
    INT_BITS,
    INTEGER_ROOTS,
    DataType,
)
from deltaflow.processor.exprs.codegen import Gen, generator
from deltaflow.processor.exprs.coercion import INTERVAL_DAY_TIME, INTERVAL_ROOTS
from deltaflow.processor.exprs.lib_numeric import exponent, wrap_text
from deltaflow.processor.exprs.lib_strings import like_regex
from deltaflow.processor.exprs.nodes import Call, Expr, Literal

_BOOL = DataType(BOOLEAN)
_PY_OP = {"=": "==", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_DECIMAL_OP = {"+": "add", "-": "subtract", "*": "multiply"}


@generator("+", "-", "*", "/", "%", "MOD")
def _arithmetic(g: Gen, c: Call) -> str:
    t = c.type
    if len(c.operands) == 1:
        if c.op == "+":
            return g.expr(c.operands[0])
        if t.root in INTEGER_ROOTS:
            return g.strict(c.operands, lambda a: wrap_text(f"-{a}", INT_BITS[t.root]))
        return g.strict(c.operands, lambda a: f"(-{a})")
    a, b = c.operands
    if t.root in INTERVAL_ROOTS and (
        a.type.root not in INTERVAL_ROOTS or b.type.root not in INTERVAL_ROOTS
    ):
        if c.op == "*":
            return g.strict(c.operands, lambda x, y: f"({x} * {y})")
    if a.type.root in INTERVAL_ROOTS or b.type.root in INTERVAL_ROOTS:
        return _interval_arithmetic(g, c)
    if t.root in INTEGER_ROOTS:
        return _integer(g, c)
    if t.root == DECIMAL:
        return _decimal(g, c)
    return _floating(g, c)


def _integer(g: Gen, c: Call) -> str:
    bits = INT_BITS[c.type.root]
    if c.op == "/":
        return g.strict(c.operands, lambda x, y: wrap_text(f"_n.idiv({x}, {y})", bits))
    if c.op in ("%", "MOD"):
        return g.strict(c.operands, lambda x, y: f"_n.imod({x}, {y})")
    return g.strict(c.operands, lambda x, y: wrap_text(f"{x} {c.op} {y}", bits))


def _decimal(g: Gen, c: Call) -> str:
    exp = g.bind(exponent(c.type.scale or 0))
    digits = (c.type.precision or 10) - (c.type.scale or 0)
    if c.op == "/":
        return g.strict(c.operands, lambda x, y: f"_n.ddiv({x}, {y}, {exp}, {digits})")
    if c.op in ("%", "MOD"):
        return g.strict(c.operands, lambda x, y: f"_n.dmod({x}, {y}, {exp}, {digits})")
    method = _DECIMAL_OP[c.op]
    return g.strict(c.operands, lambda x, y: f"_fit(_C{method}({x}, {y}), {exp}, {digits})")


def _floating(g: Gen, c: Call) -> str:
    def num(e: Expr, text: str) -> str:
        return f"float({text})" if e.type.root == DECIMAL else text

    a, b = c.operands
    if c.op == "/":
        return g.strict(c.operands, lambda x, y: f"_n.fdiv({num(a, x)}, {num(b, y)})")
    if c.op in ("%", "MOD"):
        return g.strict(c.operands, lambda x, y: f"_n.fmod({num(a, x)}, {num(b, y)})")
    return g.strict(c.operands, lambda x, y: f"({num(a, x)} {c.op} {num(b, y)})")


def _interval_arithmetic(g: Gen, c: Call) -> str:
    a, b = c.operands
    if a.type.root in INTERVAL_ROOTS and b.type.root in INTERVAL_ROOTS:
        return g.strict(c.operands, lambda x, y: f"({x} {c.op} {y})")
    interval_first = a.type.root in INTERVAL_ROOTS
    kind = (a if interval_first else b).type.root
    fn = "_t.add_millis" if kind == INTERVAL_DAY_TIME else "_t.add_months"
    sign = "-" if c.op == "-" else ""
    if interval_first:
        return g.strict(c.operands, lambda x, y: f"{fn}({y}, {sign}{x})")
    return g.strict(c.operands, lambda x, y: f"{fn}({x}, {sign}{y})")


@generator("=", "<>", "<", "<=", ">", ">=")
def _comparison(g: Gen, c: Call) -> str:
    op = _PY_OP[c.op]
    return g.strict(c.operands, lambda x, y: f"({x} {op} {y})")


@generator("IS DISTINCT FROM", "IS NOT DISTINCT FROM")
def _distinct(g: Gen, c: Call) -> str:
    op = "!=" if c.op == "IS DISTINCT FROM" else "=="
    a, b = (g.expr(o) for o in c.operands)
    return f"({a} {op} {b})"


@generator("AND", "OR")
def _logical(g: Gen, c: Call) -> str:
    text = g.expr(c.operands[0])
    nullable = c.operands[0].type.nullable
    for right in c.operands[1:]:
        text = _binary_logic(g, c.op, text, nullable, right)
        nullable = nullable or right.type.nullable
    return text


def _binary_logic(g: Gen, op: str, left: str, left_null: bool, right: Expr) -> str:
    r = g.expr(right)
    if not left_null and not right.type.nullable:
        return f"({left} {op.lower()} {r})"
    # Three-valued logic: FALSE dominates AND, TRUE dominates OR, otherwise NULL wins.
    dominant, other = ("False", "True") if op == "AND" else ("True", "False")
    t1, t2 = g.tmp(), g.tmp()
    return (
        f"({dominant} if ({t1} := {left}) is {dominant} else ({dominant} if ({t2} := {r}) is "
        f"{dominant} else (None if {t1} is None or {t2} is None else {other})))"
    )


@generator("NOT")
def _not(g: Gen, c: Call) -> str:
    return g.strict(c.operands, lambda a: f"(not {a})")


_NULL_TESTS = {
    "IS NULL": "is None",
    "IS NOT NULL": "is not None",
    "IS TRUE": "is True",
    "IS FALSE": "is False",
    "IS NOT TRUE": "is not True",
    "IS NOT FALSE": "is not False",
}


@generator(*_NULL_TESTS)
def _null_test(g: Gen, c: Call) -> str:
    return f"({g.expr(c.operands[0])} {_NULL_TESTS[c.op]})"


@generator("LIKE", "NOT LIKE")
def _like(g: Gen, c: Call) -> str:
    value, pattern, *rest = c.operands
    escape = rest[0] if rest else None
    negate = "not " if c.op == "NOT LIKE" else ""
    literal_escape = escape is None or isinstance(escape, Literal) and escape.value is not None
    if isinstance(pattern, Literal) and pattern.value is not None and literal_escape:
        esc = escape.value if isinstance(escape, Literal) else None
        rx = g.bind(like_regex(str(pattern.value), None if esc is None else str(esc)), "_rx")
        return g.strict([value], lambda v: f"({negate}{rx}.fullmatch({v}) is not None)")
    return g.strict(c.operands, lambda *a: f"({negate}_s.like({', '.join(a)}))")


@generator("IN", "NOT IN")
def _in(g: Gen, c: Call) -> str:
    value, *items = c.operands
    negate = c.op == "NOT IN"
    if all(isinstance(i, Literal) and i.value is not None for i in items):
        try:
            members = g.bind(frozenset(i.value for i in items))  # type: ignore[attr-defined]
        except TypeError:
            members = g.bind(tuple(i.value for i in items))  # type: ignore[attr-defined]
        op = "not in" if negate else "in"
        return g.strict([value], lambda v: f"({v} {op} {members})")
    g.ns["_in3"] = _in3
    listed = ", ".join(g.expr(i) for i in items)
    text = f"_in3({g.expr(value)}, ({listed},))"
    if not negate:
        return text
    t = g.tmp()
    return f"(None if ({t} := {text}) is None else not {t})"


def _in3(value: object, items: tuple) -> bool | None:  # type: ignore[type-arg]
    """SQL IN with NULLs: TRUE if found, else NULL if the value or any item is NULL."""
    if value is None:
        return None
    saw_null = False
    for item in items:
        if item is None:
            saw_null = True
        elif value == item:
            return True
    return None if saw_null else False


@generator("BETWEEN", "NOT BETWEEN")
def _between(g: Gen, c: Call) -> str:
    value, low, high = c.operands
    nullable = c.type.nullable
    if c.op == "BETWEEN":
        parts = (Call(_BOOL, ">=", (value, low)), Call(_BOOL, "<=", (value, high)))
        return g.expr(Call(_BOOL.with_nullable(nullable), "AND", parts))
    parts = (Call(_BOOL, "<", (value, low)), Call(_BOOL, ">", (value, high)))
    return g.expr(Call(_BOOL.with_nullable(nullable), "OR", parts))


@generator("CASE")
def _case(g: Gen, c: Call) -> str:
    ops = c.operands
    text = g.expr(ops[-1])
    for i in range(len(ops) - 3, -1, -2):
        text = f"({g.expr(ops[i + 1])} if {g.expr(ops[i])} else {text})"
    return text


@generator("COALESCE", "IFNULL")
def _coalesce(g: Gen, c: Call) -> str:
    ops = c.operands
    text = g.expr(ops[-1])
    for o in reversed(ops[:-1]):
        if not o.type.nullable:
            text = g.expr(o)
            continue
        t = g.tmp()
        text = f"({t} if ({t} := {g.expr(o)}) is not None else {text})"
    return text


@generator("IF")
def _if(g: Gen, c: Call) -> str:
    cond, a, b = (g.expr(o) for o in c.operands)
    return f"({a} if {cond} else {b})"


@generator("NULLIF")
def _nullif(g: Gen, c: Call) -> str:
    t = g.tmp()
    a, b = (g.expr(o) for o in c.operands)
    return f"(None if ({t} := {a}) is None or {t} == {b} else {t})"


@generator("GREATEST", "LEAST")
def _greatest(g: Gen, c: Call) -> str:
    fn = "max" if c.op == "GREATEST" else "min"
    if len(c.operands) == 1:
        return g.expr(c.operands[0])
    return g.strict(c.operands, lambda *a: f"{fn}({', '.join(a)})")


@generator("CAST")
def _cast(g: Gen, c: Call) -> str:
    return g.cast(c.operands[0], c.type)


@generator("TRY_CAST")
def _try_cast(g: Gen, c: Call) -> str:
    return g.cast(c.operands[0], c.type, try_cast=True)
