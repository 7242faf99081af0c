"""Operand families and fixed signatures of Flink's built-in scalar functions.

A signature is a tuple of family codes, one per operand; a trailing ``*`` repeats the
last family. ``FAMILIES`` says which type roots each code accepts; an untyped NULL
literal fits every family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from deltaflow.formats.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    NULL,
    NUMERIC_ROOTS,
    STRING_ROOTS,
    TIME,
    DataType,
    timestamp,
    timestamp_ltz,
)
from deltaflow.processor.exprs.coercion import (
    BINARY_ROOTS,
    INTERVAL_ROOTS,
    SYMBOL,
    TIMESTAMP_ROOTS,
    bytes_type,
    char_type,
    string_type,
)
from deltaflow.processor.exprs.nodes import Expr, Literal

FAMILIES: dict[str, frozenset[str] | None] = {
    "S": STRING_ROOTS,
    "N": NUMERIC_ROOTS,
    "I": frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT"}),
    "B": frozenset({BOOLEAN}),
    "T": TIMESTAMP_ROOTS,
    "D": frozenset({DATE}),
    "X": TIMESTAMP_ROOTS | {DATE, TIME},
    "V": BINARY_ROOTS,
    "Y": frozenset({SYMBOL}),
    "W": INTERVAL_ROOTS,
    "A": None,
}
FAMILY_NAMES = {
    "S": "STRING",
    "N": "NUMERIC",
    "I": "INTEGER",
    "B": "BOOLEAN",
    "T": "TIMESTAMP",
    "D": "DATE",
    "X": "DATETIME",
    "V": "BYTES",
    "Y": "<time unit>",
    "W": "INTERVAL",
    "A": "ANY",
}


def fits(code: str, t: DataType) -> bool:
    family = FAMILIES[code]
    return family is None or t.root == NULL or t.root in family


def matches(signature: tuple[str, ...], operands: list[Expr]) -> bool:
    if signature and signature[-1] == "*":
        fixed, repeat = signature[:-2], signature[-2]
        if len(operands) < len(fixed) + 1:
            return False
        codes = list(fixed) + [repeat] * (len(operands) - len(fixed))
    else:
        if len(signature) != len(operands):
            return False
        codes = list(signature)
    return all(fits(c, o.type) for c, o in zip(codes, operands, strict=True))


def render(name: str, signature: tuple[str, ...]) -> str:
    if signature and signature[-1] == "*":
        parts = [FAMILY_NAMES[c] for c in signature[:-1]] + ["..."]
    else:
        parts = [FAMILY_NAMES[c] for c in signature]
    return f"{name}({', '.join(parts)})"


Result = Callable[[list[Expr]], DataType]


def const(t: DataType) -> Result:
    return lambda operands: t


def same_as(i: int) -> Result:
    return lambda operands: operands[i].type


STRING = const(string_type())
INT_T = const(DataType(INT))
BIGINT_T = const(DataType(BIGINT))
DOUBLE_T = const(DataType(DOUBLE))
BOOLEAN_T = const(DataType(BOOLEAN))
DATE_T = const(DataType(DATE))
TS3 = const(timestamp(3))
LTZ3 = const(timestamp_ltz(3))
BYTES = const(bytes_type())


def char(n: int) -> Result:
    return const(char_type(n))


def same_string(operands: list[Expr]) -> DataType:
    """UPPER, LOWER, INITCAP: the argument's own string type (CHAR(3) stays CHAR(3))."""
    t = operands[0].type
    return t if t.root in STRING_ROOTS else string_type()


def varchar_of_first(operands: list[Expr]) -> DataType:
    """SUBSTRING, LEFT, RIGHT: at most as long as the argument, so VARCHAR of its length."""
    t = operands[0].type
    return string_type(length=t.length) if t.root in STRING_ROOTS and t.length else string_type()


@dataclass(frozen=True)
class Fixed:
    """A function with fixed signatures; nullability ``any`` (NULL in, NULL out), ``always``
    (may return NULL for non-null input) or ``never``."""

    signatures: tuple[tuple[str, ...], ...]
    result: Result
    nulls: str = "any"


def symbol_value(e: Expr) -> str | None:
    if isinstance(e, Literal) and e.type.root == SYMBOL:
        return str(e.value).upper()
    return None


S, SS, SSS = ("S",), ("S", "S"), ("S", "S", "S")
FIXED: dict[str, Fixed] = {
    "UPPER": Fixed((S,), same_string),
    "LOWER": Fixed((S,), same_string),
    "INITCAP": Fixed((S,), same_string),
    "REVERSE": Fixed((S,), STRING),
    "LTRIM": Fixed((S, SS), STRING),
    "RTRIM": Fixed((S, SS), STRING),
    "SUBSTRING": Fixed((("S", "I"), ("S", "I", "I")), varchar_of_first),
    "SUBSTR": Fixed((("S", "I"), ("S", "I", "I")), varchar_of_first),
    "CONCAT_WS": Fixed((("S", "S", "*"),), STRING, "first"),
    "CHAR_LENGTH": Fixed((S,), INT_T),
    "CHARACTER_LENGTH": Fixed((S,), INT_T),
    "POSITION": Fixed((SS,), INT_T),
    "LOCATE": Fixed((SS, ("S", "S", "I")), INT_T),
    "INSTR": Fixed((SS,), INT_T),
    "REPLACE": Fixed((SSS,), STRING),
    "REGEXP_REPLACE": Fixed((SSS,), STRING),
    "REGEXP_EXTRACT": Fixed((SS, ("S", "S", "I")), STRING, "always"),
    "REGEXP": Fixed((SS,), BOOLEAN_T),
    "LPAD": Fixed((("S", "I", "S"),), STRING, "always"),
    "RPAD": Fixed((("S", "I", "S"),), STRING, "always"),
    "SPLIT_INDEX": Fixed((("S", "S", "I"),), STRING, "always"),
    "REPEAT": Fixed((("S", "I"),), STRING),
    "MD5": Fixed((S,), char(32)),
    "SHA1": Fixed((S,), char(40)),
    "SHA256": Fixed((S,), char(64)),
    "FROM_BASE64": Fixed((S,), STRING),
    "TO_BASE64": Fixed((S,), STRING),
    "ASCII": Fixed((S,), INT_T),
    "CHR": Fixed((("I",),), STRING),
    "LEFT": Fixed((("S", "I"),), varchar_of_first),
    "RIGHT": Fixed((("S", "I"),), varchar_of_first),
    "UUID": Fixed(((),), char(36), "never"),
    "JSON_VALUE": Fixed((SS,), STRING, "always"),
    "POWER": Fixed((("N", "N"),), DOUBLE_T),
    "SQRT": Fixed((("N",),), DOUBLE_T),
    "LN": Fixed((("N",),), DOUBLE_T),
    "LOG": Fixed((("N",), ("N", "N")), DOUBLE_T),
    "LOG10": Fixed((("N",),), DOUBLE_T),
    "LOG2": Fixed((("N",),), DOUBLE_T),
    "EXP": Fixed((("N",),), DOUBLE_T),
    "SIN": Fixed((("N",),), DOUBLE_T),
    "COS": Fixed((("N",),), DOUBLE_T),
    "TAN": Fixed((("N",),), DOUBLE_T),
    "DEGREES": Fixed((("N",),), DOUBLE_T),
    "RADIANS": Fixed((("N",),), DOUBLE_T),
    "PI": Fixed(((),), DOUBLE_T, "never"),
    "E": Fixed(((),), DOUBLE_T, "never"),
    "RAND": Fixed(((), ("I",)), DOUBLE_T, "never"),
    "RAND_INTEGER": Fixed((("I",), ("I", "I")), INT_T),
    "NOW": Fixed(((),), LTZ3, "never"),
    "CURRENT_TIMESTAMP": Fixed(((),), LTZ3, "never"),
    "CURRENT_ROW_TIMESTAMP": Fixed(((),), LTZ3, "never"),
    "LOCALTIMESTAMP": Fixed(((),), TS3, "never"),
    "CURRENT_DATE": Fixed(((),), DATE_T, "never"),
    "CURRENT_TIME": Fixed(((),), const(DataType(TIME, precision=0)), "never"),
    "LOCALTIME": Fixed(((),), const(DataType(TIME, precision=0)), "never"),
    "DATE_FORMAT": Fixed((("T", "S"), ("S", "S")), STRING),
    "TO_TIMESTAMP": Fixed((S, SS), TS3, "always"),
    "TO_TIMESTAMP_LTZ": Fixed((("N",), ("N", "I"), S, SS, SSS), LTZ3, "always"),
    "TO_DATE": Fixed((S, SS), DATE_T, "always"),
    "UNIX_TIMESTAMP": Fixed(((), S, SS), BIGINT_T, "always"),
    "FROM_UNIXTIME": Fixed((("I",), ("I", "S")), STRING),
    "CONVERT_TZ": Fixed((SSS,), STRING, "always"),
    "YEAR": Fixed((("X",),), BIGINT_T),
    "QUARTER": Fixed((("X",),), BIGINT_T),
    "MONTH": Fixed((("X",),), BIGINT_T),
    "WEEK": Fixed((("X",),), BIGINT_T),
    "DAYOFYEAR": Fixed((("X",),), BIGINT_T),
    "DAYOFMONTH": Fixed((("X",),), BIGINT_T),
    "DAYOFWEEK": Fixed((("X",),), BIGINT_T),
    "HOUR": Fixed((("X",),), BIGINT_T),
    "MINUTE": Fixed((("X",),), BIGINT_T),
    "SECOND": Fixed((("X",),), BIGINT_T),
    "EXTRACT": Fixed((("Y", "X"),), BIGINT_T),
    "TIMESTAMPDIFF": Fixed((("Y", "X", "X"),), INT_T),
}
