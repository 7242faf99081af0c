"""Type inference of SQL operators and of the functions whose result type depends on
their operands (arithmetic, comparisons, CASE/COALESCE, ROUND, FLOOR, CONCAT ...).

Implicit casts that Flink inserts become explicit ``CAST`` calls here, so the compiler
never has to guess: a DECIMAL(5, 2) branch of a DECIMAL(12, 4) CASE is cast to it.
"""

from __future__ import annotations

from collections.abc import Callable

from deltaflow.formats.types import (
    APPROX_ROOTS,
    BOOLEAN,
    CHAR,
    DATE,
    DECIMAL,
    DOUBLE,
    INTEGER_ROOTS,
    MAX_LENGTH,
    NULL,
    NUMERIC_ROOTS,
    STRING_ROOTS,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    DataType,
    decimal,
    timestamp,
)
from deltaflow.processor.exprs.coercion import (
    BINARY_ROOTS,
    INTERVAL_DAY_TIME,
    INTERVAL_ROOTS,
    INTERVAL_YEAR_MONTH,
    SYMBOL,
    TIMESTAMP_ROOTS,
    arithmetic_type,
    bytes_type,
    char_type,
    common_type,
    comparable,
    round_decimal,
    string_type,
)
from deltaflow.processor.exprs.nodes import Call, Expr, Literal
from deltaflow.processor.exprs.signatures import symbol_value


class BadCall(Exception):
    def __init__(self, reason: str = "", accepted: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.accepted = list(accepted)


Infer = Callable[[str, list[Expr]], Call]
_BOOL = DataType(BOOLEAN)
_TEMPORAL = frozenset({DATE, TIME}) | TIMESTAMP_ROOTS


def _any_null(operands: list[Expr]) -> bool:
    return any(o.type.nullable for o in operands)


def _call(t: DataType, op: str, operands: list[Expr]) -> Call:
    return Call(t, op, tuple(operands))


def to_type(e: Expr, t: DataType) -> Expr:
    """``e`` as type ``t`` (keeping e's nullability): a CAST unless nothing changes."""
    target = t.with_nullable(e.type.nullable)
    same = e.type.with_nullable(True) == t.with_nullable(True)
    if same or e.type.root in STRING_ROOTS and t.root in STRING_ROOTS:
        return e
    if isinstance(e, Literal) and e.value is None:
        return Literal(t.with_nullable(True), None)
    return Call(target, "CAST", (e,))


# ---------------------------------------------------------------- arithmetic


def _arithmetic(op: str, operands: list[Expr]) -> Call:
    if len(operands) == 1 and op in ("-", "+"):
        t = operands[0].type
        if t.root not in NUMERIC_ROOTS | INTERVAL_ROOTS | {NULL}:
            raise BadCall(f"unary {op} needs a numeric operand", (f"{op}NUMERIC",))
        return _call(t, op, operands)
    if len(operands) != 2:
        raise BadCall(f"{op} takes two operands")
    a, b = (o.type for o in operands)
    if NULL in (a.root, b.root):
        other = b if a.root == NULL else a
        return _call(other.with_nullable(True), op, operands)
    temporal = _temporal_arithmetic(op, a, b)
    if temporal is not None:
        return _call(temporal.with_nullable(a.nullable or b.nullable), op, operands)
    if op in ("MOD", "%") and not (
        a.root in INTEGER_ROOTS | {DECIMAL} and b.root in INTEGER_ROOTS | {DECIMAL}
    ):
        raise BadCall("MOD needs exact numeric operands", ("MOD(EXACT_NUMERIC, EXACT_NUMERIC)",))
    found = arithmetic_type(op, a, b)
    if found is None:
        raise BadCall("", (f"NUMERIC {op} NUMERIC", "DATETIME +/- INTERVAL"))
    return _call(found, op, operands)


def _temporal_arithmetic(op: str, a: DataType, b: DataType) -> DataType | None:
    if op in ("+", "-") and a.root in _TEMPORAL and b.root in INTERVAL_ROOTS:
        return a
    if op == "+" and a.root in INTERVAL_ROOTS and b.root in _TEMPORAL:
        return b
    if op in ("+", "-") and a.root in INTERVAL_ROOTS and a.root == b.root:
        return a
    if op == "*" and a.root in INTERVAL_ROOTS and b.root in INTEGER_ROOTS:
        return a
    if op == "*" and b.root in INTERVAL_ROOTS and a.root in INTEGER_ROOTS:
        return b
    return None


# ---------------------------------------------------------------- comparisons


def coerce_pair(op: str, x: Expr, y: Expr) -> tuple[Expr, Expr]:
    """Operands of a comparison, with Flink's implicit casts; raises BadCall if incomparable."""
    a, b = x.type, y.type
    if comparable(a, b):
        approx = {a.root, b.root} & APPROX_ROOTS
        if approx and DECIMAL in (a.root, b.root):  # Flink compares DECIMAL with DOUBLE as DOUBLE
            double = DataType(DOUBLE)
            return to_type(x, double), to_type(y, double)
        if {a.root, b.root} == {TIMESTAMP, TIMESTAMP_LTZ}:
            ltz = DataType(TIMESTAMP_LTZ, precision=max(a.precision or 0, b.precision or 0))
            return to_type(x, ltz), to_type(y, ltz)
        return x, y
    if a.root in STRING_ROOTS and b.root in _TEMPORAL:
        return to_type(x, b), y
    if b.root in STRING_ROOTS and a.root in _TEMPORAL:
        return x, to_type(y, a)
    numeric_string = {a.root in NUMERIC_ROOTS, b.root in NUMERIC_ROOTS} == {True, False} and (
        a.root in STRING_ROOTS or b.root in STRING_ROOTS
    )
    if numeric_string and op in ("<", "<=", ">", ">=", "BETWEEN", "NOT BETWEEN"):
        return (to_type(x, b), y) if a.root in STRING_ROOTS else (x, to_type(y, a))
    hint = ""
    if numeric_string:
        hint = "; implicit conversion between NUMERIC and STRING is not supported, use CAST"
    raise BadCall(f"cannot compare {a.sql()} with {b.sql()}{hint}")


def _comparison(op: str, operands: list[Expr]) -> Call:
    if len(operands) != 2:
        raise BadCall(f"{op} takes two operands")
    x, y = coerce_pair(op, *operands)
    distinct = op in ("IS DISTINCT FROM", "IS NOT DISTINCT FROM")
    nullable = False if distinct else _any_null(operands)
    return Call(_BOOL.with_nullable(nullable), op, (x, y))


def _logical(op: str, operands: list[Expr]) -> Call:
    if op == "NOT" and len(operands) != 1 or op != "NOT" and len(operands) < 2:
        raise BadCall(f"wrong number of operands for {op}")
    for o in operands:
        if o.type.root not in (BOOLEAN, NULL):
            raise BadCall(f"{op} needs BOOLEAN operands", (f"BOOLEAN {op} BOOLEAN",))
    return _call(_BOOL.with_nullable(_any_null(operands)), op, operands)


def _null_test(op: str, operands: list[Expr]) -> Call:
    if len(operands) != 1:
        raise BadCall(f"{op} takes one operand")
    if op not in ("IS NULL", "IS NOT NULL") and operands[0].type.root not in (BOOLEAN, NULL):
        raise BadCall(f"{op} needs a BOOLEAN operand", (f"BOOLEAN {op}",))
    return _call(_BOOL.not_null(), op, operands)


def _like(op: str, operands: list[Expr]) -> Call:
    if len(operands) not in (2, 3) or any(
        o.type.root not in STRING_ROOTS | {NULL} for o in operands
    ):
        raise BadCall("", (f"STRING {op} STRING [ESCAPE STRING]",))
    return _call(_BOOL.with_nullable(_any_null(operands)), op, operands)


def _in(op: str, operands: list[Expr]) -> Call:
    if len(operands) < 2:
        raise BadCall(f"{op} needs a value and at least one list element")
    value = operands[0]
    items: list[Expr] = []
    for item in operands[1:]:
        value_cast, item_cast = coerce_pair("=", value, item)
        if value_cast is not value and items:
            raise BadCall(f"cannot compare {value.type.sql()} with {item.type.sql()}")
        value = value_cast
        items.append(item_cast)
    return Call(_BOOL.with_nullable(_any_null(operands)), op, (value, *items))


def _between(op: str, operands: list[Expr]) -> Call:
    if len(operands) != 3:
        raise BadCall(f"{op} takes a value and two bounds")
    value, low, high = operands
    v1, lo = coerce_pair(op, value, low)
    v2, hi = coerce_pair(op, value, high)
    if v1 is not value or v2 is not value:
        value = v1 if v1 is not value else v2
    return Call(_BOOL.with_nullable(_any_null(operands)), op, (value, lo, hi))


# ---------------------------------------------------------------- conditionals


def _common(op: str, exprs: list[Expr]) -> DataType:
    t = common_type([e.type for e in exprs])
    if t is None:
        types = ", ".join(e.type.sql() for e in exprs)
        raise BadCall(f"the operands of {op} have no common type ({types})")
    return t


def _case(op: str, operands: list[Expr]) -> Call:
    if len(operands) < 3 or len(operands) % 2 == 0:
        raise BadCall("CASE needs WHEN/THEN pairs and an ELSE operand (NULL when absent)")
    whens = operands[0:-1:2]
    branches = list(operands[1:-1:2]) + [operands[-1]]
    for w in whens:
        if w.type.root not in (BOOLEAN, NULL):
            raise BadCall(f"a CASE WHEN condition must be BOOLEAN, not {w.type.sql()}")
    t = _common(op, branches)
    cast = [to_type(b, t) for b in branches]
    out: list[Expr] = []
    for w, b in zip(whens, cast[:-1], strict=True):
        out += [w, b]
    out.append(cast[-1])
    return _call(t.with_nullable(any(b.type.nullable for b in branches)), op, out)


def _coalesce(op: str, operands: list[Expr]) -> Call:
    if not operands:
        raise BadCall("COALESCE needs at least one operand")
    t = _common(op, operands)
    nullable = all(o.type.nullable for o in operands)
    return _call(t.with_nullable(nullable), op, [to_type(o, t) for o in operands])


def _ifnull(op: str, operands: list[Expr]) -> Call:
    if len(operands) != 2:
        raise BadCall("", ("IFNULL(ANY, ANY)",))
    return _coalesce(op, operands)


def _if(op: str, operands: list[Expr]) -> Call:
    if len(operands) != 3 or operands[0].type.root not in (BOOLEAN, NULL):
        raise BadCall("", ("IF(BOOLEAN, ANY, ANY)",))
    t = _common(op, operands[1:])
    branches = [to_type(o, t) for o in operands[1:]]
    nullable = any(o.type.nullable for o in operands[1:])
    return _call(t.with_nullable(nullable), op, [operands[0], *branches])


def _nullif(op: str, operands: list[Expr]) -> Call:
    if len(operands) != 2:
        raise BadCall("", ("NULLIF(ANY, ANY)",))
    x, y = coerce_pair("=", *operands)
    return Call(operands[0].type.with_nullable(True), op, (x, y))


def _greatest(op: str, operands: list[Expr]) -> Call:
    if not operands:
        raise BadCall(f"{op} needs at least one operand")
    t = _common(op, operands)
    return _call(t.with_nullable(_any_null(operands)), op, [to_type(o, t) for o in operands])


# ---------------------------------------------------------------- functions with derived types


def _numeric_unary(op: str, operands: list[Expr]) -> Call:
    if len(operands) != 1 or operands[0].type.root not in NUMERIC_ROOTS | {NULL}:
        raise BadCall("", (f"{op}(NUMERIC)",))
    return _call(operands[0].type, op, operands)


def _round(op: str, operands: list[Expr]) -> Call:
    if len(operands) not in (1, 2) or operands[0].type.root not in NUMERIC_ROOTS | {NULL}:
        raise BadCall("", (f"{op}(NUMERIC)", f"{op}(NUMERIC, INTEGER)"))
    if len(operands) == 2 and operands[1].type.root not in INTEGER_ROOTS:
        raise BadCall("", (f"{op}(NUMERIC, INTEGER)",))
    t = operands[0].type
    if t.root == DECIMAL:
        digits = 0
        if len(operands) == 2:
            lit = operands[1]
            if not isinstance(lit, Literal) or lit.value is None:
                raise BadCall(f"the digits of {op} on a DECIMAL must be an integer literal")
            digits = int(lit.value)  # type: ignore[call-overload]
        p, s = round_decimal(t.precision or 10, t.scale or 0, digits)
        t = decimal(p, s)
    return _call(t.with_nullable(_any_null(operands)), op, operands)


def _floor_ceil(op: str, operands: list[Expr]) -> Call:
    name = "CEIL" if op == "CEILING" else op
    if len(operands) == 2 and symbol_value(operands[1]) and operands[0].type.root in _TEMPORAL:
        return _call(operands[0].type, name, operands)
    if len(operands) != 1 or operands[0].type.root not in NUMERIC_ROOTS | {NULL}:
        raise BadCall("", (f"{name}(NUMERIC)", f"{name}(DATETIME TO <time unit>)"))
    t = operands[0].type
    if t.root == DECIMAL:
        t = decimal(t.precision or 10, 0, t.nullable)
    return _call(t, name, operands)


def _concat(op: str, operands: list[Expr]) -> Call:
    roots = {o.type.root for o in operands} - {NULL}
    if operands and roots <= STRING_ROOTS:
        return _call(
            _concat_type(op, operands).with_nullable(_any_null(operands)), "CONCAT", operands
        )
    if operands and roots <= BINARY_ROOTS:
        return _call(bytes_type(_any_null(operands)), "CONCAT", operands)
    raise BadCall("", ("CONCAT(STRING, ...)", "CONCAT(BYTES, ...)"))


def _concat_type(op: str, operands: list[Expr]) -> DataType:
    """``||`` of CHAR(a) and CHAR(b) is CHAR(a + b), with a VARCHAR VARCHAR(a + b); CONCAT is STRING."""
    if op != "||" or any(o.type.root == NULL or not o.type.length for o in operands):
        return string_type()
    total = sum(o.type.length or 0 for o in operands)
    if all(o.type.root == CHAR for o in operands) and total <= MAX_LENGTH:
        return char_type(total)
    return string_type(length=min(total, MAX_LENGTH))


def _trimmed(value: Expr, nullable: bool) -> DataType:
    """TRIM of CHAR(n) or VARCHAR(n) is VARCHAR(n)."""
    return string_type(nullable, length=value.type.length or MAX_LENGTH)


def _trim(op: str, operands: list[Expr]) -> Call:
    if len(operands) == 1 and operands[0].type.root in STRING_ROOTS | {NULL}:
        return _call(_trimmed(operands[0], _any_null(operands)), op, operands)
    ok = (
        len(operands) == 3
        and symbol_value(operands[0]) in ("BOTH", "LEADING", "TRAILING")
        and all(o.type.root in STRING_ROOTS | {NULL} for o in operands[1:])
    )
    if not ok:
        raise BadCall("", ("TRIM(STRING)", "TRIM(BOTH|LEADING|TRAILING STRING FROM STRING)"))
    return _call(_trimmed(operands[2], _any_null(operands[1:])), op, operands)


_DATE_UNITS = frozenset({"YEAR", "QUARTER", "MONTH", "WEEK", "DAY"})


def _timestampadd(op: str, operands: list[Expr]) -> Call:
    ok = (
        len(operands) == 3
        and symbol_value(operands[0]) is not None
        and operands[1].type.root in INTEGER_ROOTS | {NULL}
        and operands[2].type.root in _TEMPORAL
    )
    if not ok:
        raise BadCall("", ("TIMESTAMPADD(<time unit>, INTEGER, DATETIME)",))
    t = operands[2].type
    if t.root == DATE and symbol_value(operands[0]) not in _DATE_UNITS:
        t = timestamp(0)
    return _call(t.with_nullable(_any_null(operands[1:])), op, operands)


INFER: dict[str, Infer] = {
    **dict.fromkeys(("+", "-", "*", "/", "%", "MOD"), _arithmetic),
    **dict.fromkeys(("=", "<>", "<", "<=", ">", ">="), _comparison),
    **dict.fromkeys(("IS DISTINCT FROM", "IS NOT DISTINCT FROM"), _comparison),
    **dict.fromkeys(("AND", "OR", "NOT"), _logical),
    **dict.fromkeys(
        ("IS NULL", "IS NOT NULL", "IS TRUE", "IS FALSE", "IS NOT TRUE", "IS NOT FALSE"),
        _null_test,
    ),
    "LIKE": _like,
    "NOT LIKE": _like,
    "IN": _in,
    "NOT IN": _in,
    "BETWEEN": _between,
    "NOT BETWEEN": _between,
    "CASE": _case,
    "COALESCE": _coalesce,
    "IFNULL": _ifnull,
    "IF": _if,
    "NULLIF": _nullif,
    "GREATEST": _greatest,
    "LEAST": _greatest,
    "ABS": _numeric_unary,
    "SIGN": _numeric_unary,
    "ROUND": _round,
    "TRUNCATE": _round,
    "FLOOR": _floor_ceil,
    "CEIL": _floor_ceil,
    "CEILING": _floor_ceil,
    "CONCAT": _concat,
    "||": _concat,
    "TRIM": _trim,
    "TIMESTAMPADD": _timestampadd,
}

__all__ = ["INFER", "BadCall", "INTERVAL_DAY_TIME", "INTERVAL_YEAR_MONTH", "SYMBOL", "coerce_pair"]
