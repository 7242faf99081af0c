"""Flink's type rules: common types, DECIMAL precision/scale derivation, castability.

Follows ``LogicalTypeMerging`` and ``LogicalTypeCasts`` of Flink's table-common: integer
types widen to DECIMAL(3/5/10/19, 0) when they meet a DECIMAL, DECIMAL meeting
FLOAT/DOUBLE gives DOUBLE, and results wider than 38 digits give up scale (keeping at
least 6 fraction digits) rather than integer digits.
"""

from __future__ import annotations

from deltaflow.formats.types import (
    APPROX_ROOTS,
    ARRAY,
    BINARY_ROOTS,
    BOOLEAN,
    CHAR,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INT_BITS,
    INT_DIGITS,
    INTEGER_ROOTS,
    MAP,
    MAX_LENGTH,
    MULTISET,
    NULL,
    NUMERIC_ROOTS,
    ROW,
    STRING_ROOTS,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    VARBINARY,
    VARCHAR,
    DataType,
    decimal,
)

# Interval types (value: milliseconds for DAY-TIME, months for YEAR-MONTH).
INTERVAL_DAY_TIME = "INTERVAL_DAY_TIME"
INTERVAL_YEAR_MONTH = "INTERVAL_YEAR_MONTH"
INTERVAL_ROOTS = frozenset({INTERVAL_DAY_TIME, INTERVAL_YEAR_MONTH})
# A time unit or flag operand (EXTRACT(DAY FROM ..), TRIM(LEADING ..)): a Literal whose
# value is the upper-case keyword.
SYMBOL = "SYMBOL"

MAX_PRECISION = 38
MIN_ADJUSTED_SCALE = 6
TIMESTAMP_ROOTS = frozenset({TIMESTAMP, TIMESTAMP_LTZ})
DATETIME_ROOTS = frozenset({DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ})


def as_decimal(t: DataType) -> tuple[int, int]:
    """(precision, scale) of an exact numeric type seen as a DECIMAL."""
    if t.root == DECIMAL:
        return t.precision or 10, t.scale or 0
    return INT_DIGITS[t.root], 0


def adjust(precision: int, scale: int) -> tuple[int, int]:
    """Flink's ``adjustPrecisionScale``: cap at 38 digits, sacrificing scale down to 6."""
    if precision <= MAX_PRECISION:
        return precision, scale
    digits = precision - scale
    return MAX_PRECISION, max(MAX_PRECISION - digits, min(scale, MIN_ADJUSTED_SCALE))


def decimal_result(op: str, a: DataType, b: DataType) -> tuple[int, int]:
    """Result (precision, scale) of ``a op b`` where one side is DECIMAL (``LogicalTypeMerging``)."""
    p1, s1 = as_decimal(a)
    p2, s2 = as_decimal(b)
    if op in ("+", "-"):
        s = max(s1, s2)
        return adjust(max(p1 - s1, p2 - s2) + s + 1, s)
    if op == "*":
        return adjust(p1 + p2 + 1, s1 + s2)
    if op == "/":
        s = max(6, s1 + p2 + 1)
        return adjust(p1 - s1 + s2 + s, s)
    s = max(s1, s2)  # % and MOD
    return adjust(min(p1 - s1, p2 - s2) + s, s)


def round_decimal(precision: int, scale: int, digits: int) -> tuple[int, int]:
    """Flink's ``findRoundDecimalType`` for ROUND/TRUNCATE(decimal, digits)."""
    if digits >= scale:
        return precision, scale
    if digits < 0:
        return min(MAX_PRECISION, 1 + precision - scale), 0
    return 1 + precision - scale + digits, digits


def arithmetic_type(op: str, a: DataType, b: DataType) -> DataType | None:
    """Type of a numeric binary operation, or None if the operands are not numeric."""
    if a.root not in NUMERIC_ROOTS or b.root not in NUMERIC_ROOTS:
        return None
    nullable = a.nullable or b.nullable
    if a.root in APPROX_ROOTS or b.root in APPROX_ROOTS:
        if DOUBLE in (a.root, b.root) or DECIMAL in (a.root, b.root):
            return DataType(DOUBLE, nullable)
        return DataType(FLOAT, nullable)
    if DECIMAL in (a.root, b.root):
        p, s = decimal_result(op, a, b)
        return decimal(p, s, nullable)
    if op in ("%", "MOD"):
        return b.with_nullable(nullable)  # Calcite: MOD of integers has the divisor's type
    wider = a if INT_BITS[a.root] >= INT_BITS[b.root] else b
    return DataType(wider.root, nullable)


def common_type(types: list[DataType]) -> DataType | None:
    """Flink's ``findCommonType`` for the types Flink lets meet (CASE, COALESCE, IN, ...)."""
    nullable = any(t.nullable for t in types)
    real = [t for t in types if t.root != NULL]
    if not real:
        return DataType(NULL, True)
    result = real[0]
    for t in real[1:]:
        merged = _merge(result, t)
        if merged is None:
            return None
        result = merged
    return result.with_nullable(nullable)


def _merge(a: DataType, b: DataType) -> DataType | None:  # noqa: C901 - a table of families
    if a.root == b.root and a.root not in STRING_ROOTS | BINARY_ROOTS | {DECIMAL} | DATETIME_ROOTS:
        return a
    if a.root in STRING_ROOTS and b.root in STRING_ROOTS:
        return _merge_strings(a, b, CHAR, VARCHAR)
    if a.root in BINARY_ROOTS and b.root in BINARY_ROOTS:
        return _merge_strings(a, b, "BINARY", VARBINARY)
    if a.root in NUMERIC_ROOTS and b.root in NUMERIC_ROOTS:
        if a.root in APPROX_ROOTS or b.root in APPROX_ROOTS:
            both_float = {a.root, b.root} <= {FLOAT} | INTEGER_ROOTS
            return DataType(FLOAT if both_float else DOUBLE)
        if DECIMAL not in (a.root, b.root):
            return a if INT_BITS[a.root] >= INT_BITS[b.root] else b
        p1, s1 = as_decimal(a)
        p2, s2 = as_decimal(b)
        d = min(max(p1 - s1, p2 - s2), MAX_PRECISION)
        s = min(max(s1, s2), MAX_PRECISION - d)
        return decimal(d + s, s)
    if a.root == TIME and b.root == TIME:
        return DataType(TIME, precision=max(a.precision or 0, b.precision or 0))
    if a.root in TIMESTAMP_ROOTS and b.root in TIMESTAMP_ROOTS:
        root = TIMESTAMP_LTZ if TIMESTAMP_LTZ in (a.root, b.root) else TIMESTAMP
        return DataType(root, precision=max(a.precision or 0, b.precision or 0))
    if a.root == DATE and b.root == DATE:
        return a
    if a.root in (ARRAY, MULTISET, MAP, ROW) and a == b.with_nullable(a.nullable):
        return a
    return None


def _merge_strings(a: DataType, b: DataType, fixed: str, varying: str) -> DataType:
    la, lb = a.length or 1, b.length or 1
    if a.root == fixed and b.root == fixed and la == lb:
        return DataType(fixed, length=la)
    if a.root == fixed and b.root == fixed:
        return DataType(varying, length=max(la, lb))
    return DataType(varying, length=min(max(la, lb), MAX_LENGTH))


def comparable(a: DataType, b: DataType) -> bool:
    """Whether ``a = b`` type-checks in Flink without an implicit cast."""
    if NULL in (a.root, b.root):
        return True
    for family in (NUMERIC_ROOTS, STRING_ROOTS, BINARY_ROOTS, TIMESTAMP_ROOTS):
        if a.root in family and b.root in family:
            return True
    if a.root == b.root and a.root in {BOOLEAN, DATE, TIME} | INTERVAL_ROOTS:
        return True
    return a.root == b.root and a == b.with_nullable(a.nullable)


_CONSTRUCTED = frozenset({ARRAY, MULTISET, MAP, ROW})
_PREDEFINED = {BOOLEAN, DATE, TIME} | NUMERIC_ROOTS | STRING_ROOTS | BINARY_ROOTS | TIMESTAMP_ROOTS


def cast_type_ok(src: DataType, dst: DataType) -> bool:
    """Whether ``CAST(src AS dst)`` is allowed by Flink's cast table (``LogicalTypeCasts``)."""
    s, d = src.root, dst.root
    if s == NULL or s == d and s not in _CONSTRUCTED:
        return True
    if s in _CONSTRUCTED or d in _CONSTRUCTED:
        if d in STRING_ROOTS:
            return True
        return s == d and _cast_children_ok(src, dst)
    return s in _CAST_FROM.get(d, frozenset())


_CAST_FROM: dict[str, frozenset[str]] = {}
for _root in STRING_ROOTS:
    _CAST_FROM[_root] = frozenset(_PREDEFINED | INTERVAL_ROOTS)
for _root in BINARY_ROOTS:
    _CAST_FROM[_root] = frozenset(BINARY_ROOTS | STRING_ROOTS)
_CAST_FROM[BOOLEAN] = frozenset(NUMERIC_ROOTS | STRING_ROOTS)
for _root in NUMERIC_ROOTS:
    _CAST_FROM[_root] = frozenset(NUMERIC_ROOTS | STRING_ROOTS | {BOOLEAN})
for _root in INTEGER_ROOTS | {DECIMAL}:
    _CAST_FROM[_root] = _CAST_FROM[_root] | INTERVAL_ROOTS
_CAST_FROM[DATE] = frozenset(TIMESTAMP_ROOTS | STRING_ROOTS)
_CAST_FROM[TIME] = frozenset(TIMESTAMP_ROOTS | STRING_ROOTS)
_CAST_FROM[TIMESTAMP] = frozenset(DATETIME_ROOTS | STRING_ROOTS)
_CAST_FROM[TIMESTAMP_LTZ] = frozenset(DATETIME_ROOTS | STRING_ROOTS | INTEGER_ROOTS | APPROX_ROOTS)
for _root in INTERVAL_ROOTS:
    _CAST_FROM[_root] = frozenset(INTEGER_ROOTS | {DECIMAL} | STRING_ROOTS)


def _cast_children_ok(src: DataType, dst: DataType) -> bool:
    if src.root == ROW:
        return len(src.fields) == len(dst.fields) and all(
            cast_type_ok(a, b) for (_, a), (_, b) in zip(src.fields, dst.fields, strict=True)
        )
    pairs = [(src.element, dst.element), (src.value, dst.value)]
    return all(a is None or b is None or cast_type_ok(a, b) for a, b in pairs)


def string_type(nullable: bool = True, length: int = MAX_LENGTH) -> DataType:
    return DataType(VARCHAR, nullable, length=length)


def char_type(length: int, nullable: bool = True) -> DataType:
    return DataType(CHAR, nullable, length=length)


def bytes_type(nullable: bool = True) -> DataType:
    return DataType(VARBINARY, nullable, length=MAX_LENGTH)
