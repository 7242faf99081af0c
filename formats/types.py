"""Flink SQL data types, and the Python values that stand for them.

| SQL type                      | Python value                         |
|-------------------------------|--------------------------------------|
| BOOLEAN                       | bool                                 |
| TINYINT SMALLINT INT BIGINT   | int                                  |
| FLOAT DOUBLE                  | float                                |
| DECIMAL(p, s)                 | decimal.Decimal with exactly s digits|
| CHAR VARCHAR STRING           | str                                  |
| BINARY VARBINARY BYTES        | bytes                                |
| DATE                          | datetime.date                        |
| TIME(p)                       | datetime.time (at most microseconds) |
| TIMESTAMP(p)                  | datetime.datetime, naive             |
| TIMESTAMP_LTZ(p)              | datetime.datetime, tzinfo=UTC        |
| TIMESTAMP(7..9), _LTZ(7..9)   | the same, or a ``nanos.NanoDatetime``|
|                               | when nanoseconds go below the micro- |
|                               | second                               |
| ARRAY<T>                      | list                                 |
| MAP<K, V> / MULTISET<T>       | dict                                 |
| ROW<f T, ...>                 | tuple                                |
| NULL of any type              | None                                 |
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal

from deltaflow.formats.errors import DeltaflowError

# Canonical type roots.
BOOLEAN = "BOOLEAN"
TINYINT = "TINYINT"
SMALLINT = "SMALLINT"
INT = "INT"
BIGINT = "BIGINT"
FLOAT = "FLOAT"
DOUBLE = "DOUBLE"
DECIMAL = "DECIMAL"
CHAR = "CHAR"
VARCHAR = "VARCHAR"
BINARY = "BINARY"
VARBINARY = "VARBINARY"
DATE = "DATE"
TIME = "TIME"
TIMESTAMP = "TIMESTAMP"
TIMESTAMP_LTZ = "TIMESTAMP_LTZ"
ARRAY = "ARRAY"
MAP = "MAP"
MULTISET = "MULTISET"
ROW = "ROW"
NULL = "NULL"

INTEGER_ROOTS = frozenset({TINYINT, SMALLINT, INT, BIGINT})
APPROX_ROOTS = frozenset({FLOAT, DOUBLE})
NUMERIC_ROOTS = INTEGER_ROOTS | APPROX_ROOTS | {DECIMAL}
STRING_ROOTS = frozenset({CHAR, VARCHAR})
BINARY_ROOTS = frozenset({BINARY, VARBINARY})
TEMPORAL_ROOTS = frozenset({DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ})

MAX_LENGTH = 2147483647


class TypeParseError(DeltaflowError):
    pass


@dataclass(frozen=True, slots=True)
class DataType:
    """A Flink SQL type. ``params`` are the numeric parameters (length, precision, scale)."""

    root: str
    nullable: bool = True
    precision: int | None = None  # DECIMAL precision, TIME/TIMESTAMP fraction digits
    scale: int | None = None  # DECIMAL scale
    length: int | None = None  # CHAR/VARCHAR/BINARY/VARBINARY length
    element: DataType | None = None  # ARRAY/MULTISET element, MAP key
    value: DataType | None = None  # MAP value
    fields: tuple[tuple[str, DataType], ...] = ()  # ROW fields

    def not_null(self) -> DataType:
        return replace(self, nullable=False)

    def with_nullable(self, nullable: bool) -> DataType:
        return self if self.nullable == nullable else replace(self, nullable=nullable)

    def __str__(self) -> str:
        return self.sql()

    def sql(self) -> str:
        """The type as Flink prints it, e.g. ``DECIMAL(10, 2) NOT NULL``, ``STRING``."""
        text = self._sql_root()
        return text if self.nullable else text + " NOT NULL"

    def _sql_root(self) -> str:
        r = self.root
        if r == VARCHAR and self.length == MAX_LENGTH:
            return "STRING"
        if r == VARBINARY and self.length == MAX_LENGTH:
            return "BYTES"
        if r in (CHAR, VARCHAR, BINARY, VARBINARY):
            return f"{r}({self.length})"
        if r == DECIMAL:
            return f"DECIMAL({self.precision}, {self.scale})"
        if r in (TIME, TIMESTAMP, TIMESTAMP_LTZ):
            return f"{r}({self.precision})"
        if r in (ARRAY, MULTISET):
            return f"{r}<{self.element.sql()}>"  # type: ignore[union-attr]
        if r == MAP:
            return f"MAP<{self.element.sql()}, {self.value.sql()}>"  # type: ignore[union-attr]
        if r == ROW:
            inner = ", ".join(f"`{n}` {t.sql()}" for n, t in self.fields)
            return f"ROW<{inner}>"
        return r

    @property
    def is_string(self) -> bool:
        return self.root in STRING_ROOTS

    @property
    def is_numeric(self) -> bool:
        return self.root in NUMERIC_ROOTS

    @property
    def is_integer(self) -> bool:
        return self.root in INTEGER_ROOTS


def string(nullable: bool = True) -> DataType:
    return DataType(VARCHAR, nullable, length=MAX_LENGTH)


def decimal(precision: int, scale: int, nullable: bool = True) -> DataType:
    return DataType(DECIMAL, nullable, precision=precision, scale=scale)


def simple(root: str, nullable: bool = True) -> DataType:
    return DataType(root, nullable)


def timestamp(precision: int = 6, nullable: bool = True) -> DataType:
    return DataType(TIMESTAMP, nullable, precision=precision)


def timestamp_ltz(precision: int = 6, nullable: bool = True) -> DataType:
    return DataType(TIMESTAMP_LTZ, nullable, precision=precision)


# ---------------------------------------------------------------------------
# Type facts: what decoders, writers, expressions and aggregates know of a type, stated
# once here and read from here.

# Integer types: two's complement widths (Java's byte, short, int, long), so the range
# and the decimal digits of the largest value (the precision of the type as a DECIMAL).
INT_BITS = {TINYINT: 8, SMALLINT: 16, INT: 32, BIGINT: 64}
INT_RANGES = {root: (-(1 << (b - 1)), (1 << (b - 1)) - 1) for root, b in INT_BITS.items()}
INT_DIGITS = {root: len(str(high)) for root, (_, high) in INT_RANGES.items()}

# Types whose values are exactly the values of one Python type: a decoded value of that
# type is the column's value as it is (a CHAR/VARCHAR length is not enforced on read;
# FLOAT is rounded to 32 bits, integers are range-checked, DECIMAL rounded to its scale).
PLAIN_TYPES: dict[str, type] = {CHAR: str, VARCHAR: str, BOOLEAN: bool, DOUBLE: float}

# DECIMAL(p, s): DECIMAL alone is DECIMAL(10, 0); p is at most 38. Every value of the
# type is a finite ``Decimal`` with exactly s digits after the point (its exponent is
# -s) and fewer than p - s digits before it. Every decoder and expression keeps this
# (``is_decimal_value``, tests/formats/test_type_facts.py), so that sums of one column
# add values of one exponent exactly, as ``processor/runtime/aggs.py`` does inline, and
# writers print a value's own digits (``json_text``: ``str(value)`` is Flink's text).
DECIMAL_DEFAULT = (10, 0)
DECIMAL_MAX_PRECISION = 38


def plain_type(dtype: DataType) -> type | None:
    """The Python type that is already a value of ``dtype`` (see ``PLAIN_TYPES``), or None."""
    return PLAIN_TYPES.get(dtype.root)


def decimal_params(dtype: DataType) -> tuple[int, int]:
    """(precision, scale) of a DECIMAL type, its defaults filled in."""
    default_p, default_s = DECIMAL_DEFAULT
    p = dtype.precision if dtype.precision is not None else default_p
    return p, dtype.scale if dtype.scale is not None else default_s


def decimal_quantum(scale: int) -> Decimal:
    """``Decimal('1E-scale')``: the exponent every value of a DECIMAL(p, scale) has."""
    return Decimal(1).scaleb(-scale)


def decimal_limit(precision: int, scale: int) -> Decimal:
    """10 ** (p - s): every value of DECIMAL(p, s) is smaller than this in magnitude."""
    return Decimal(10) ** (precision - scale)


def is_decimal_value(value: Decimal, dtype: DataType) -> bool:
    """True when ``value`` is a value of the DECIMAL type ``dtype`` as the table states."""
    precision, scale = decimal_params(dtype)
    return (
        value.is_finite()
        and value.as_tuple().exponent == -scale
        and abs(value) < decimal_limit(precision, scale)
    )


def has_decimal(dtype: DataType) -> bool:
    """True if a DECIMAL is anywhere inside ``dtype`` (then JSON floats parse exactly)."""
    if dtype.root == DECIMAL:
        return True
    inner = [dtype.element, dtype.value, *(t for _, t in dtype.fields)]
    return any(t is not None and has_decimal(t) for t in inner)


# ---------------------------------------------------------------------------
# Parsing Flink type strings: "DECIMAL(10, 2) NOT NULL", "ARRAY<INT>", "ROW<a INT>"

_TOKEN = re.compile(r"\s*(`[^`]*`|[A-Za-z_][A-Za-z0-9_]*|\d+|[(),<>])")

_ALIASES = {
    "INTEGER": INT,
    "BOOL": BOOLEAN,
    "DEC": DECIMAL,
    "NUMERIC": DECIMAL,
    "REAL": FLOAT,
}


def parse_type(text: str) -> DataType:
    """Parse a Flink SQL type string. Raises ``TypeParseError`` naming the problem."""
    tokens = [m.group(1) for m in _TOKEN.finditer(text)]
    if "".join(tokens).replace(" ", "") != re.sub(r"\s+", "", text):
        raise TypeParseError(f"cannot read type {text!r}")
    parser = _TypeParser(tokens, text)
    result = parser.parse()
    if parser.pos != len(tokens):
        raise TypeParseError(f"unexpected {tokens[parser.pos]!r} in type {text!r}")
    return result


class _TypeParser:
    def __init__(self, tokens: list[str], text: str) -> None:
        self.tokens = tokens
        self.text = text
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise TypeParseError(f"type {self.text!r} ends too early")
        self.pos += 1
        return tok

    def expect(self, tok: str) -> None:
        got = self.take()
        if got != tok:
            raise TypeParseError(f"expected {tok!r} but found {got!r} in type {self.text!r}")

    def accept_word(self, word: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.upper() == word:
            self.pos += 1
            return True
        return False

    def numbers(self) -> list[int]:
        if self.peek() != "(":
            return []
        self.take()
        out = [self.number()]
        while self.peek() == ",":
            self.take()
            out.append(self.number())
        self.expect(")")
        return out

    def number(self) -> int:
        tok = self.take()
        if not tok.isdigit():
            raise TypeParseError(f"expected a number but found {tok!r} in type {self.text!r}")
        return int(tok)

    def parse(self) -> DataType:
        dt = self._root()
        if self.accept_word("NOT"):
            if not self.accept_word("NULL"):
                raise TypeParseError(f"expected NULL after NOT in type {self.text!r}")
            dt = dt.not_null()
        elif self.accept_word("NULL"):
            pass
        return dt

    def _root(self) -> DataType:  # noqa: C901 - a dispatch table over type names
        word = self.take().upper()
        word = _ALIASES.get(word, word)
        if word == "STRING":
            return string()
        if word == "BYTES":
            return DataType(VARBINARY, length=MAX_LENGTH)
        if word in (CHAR, VARCHAR, BINARY, VARBINARY):
            nums = self.numbers()
            default = MAX_LENGTH if word in (VARCHAR, VARBINARY) and not nums else 1
            return DataType(word, length=nums[0] if nums else default)
        if word == "CHARACTER" and self.accept_word("VARYING"):
            nums = self.numbers()
            return DataType(VARCHAR, length=nums[0] if nums else 1)
        if word == "DOUBLE":
            self.accept_word("PRECISION")
            return DataType(DOUBLE)
        if word == DECIMAL:
            nums = self.numbers()
            precision = nums[0] if nums else 10
            scale = nums[1] if len(nums) > 1 else 0
            return decimal(precision, scale)
        if word in (BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DATE, NULL):
            return DataType(word)
        if word == TIME:
            nums = self.numbers()
            self._zone_suffix(allow=False)
            return DataType(TIME, precision=nums[0] if nums else 0)
        if word == TIMESTAMP:
            nums = self.numbers()
            precision = nums[0] if nums else 6
            if self._zone_suffix(allow=True):
                return timestamp_ltz(precision)
            return timestamp(precision)
        if word == TIMESTAMP_LTZ:
            nums = self.numbers()
            return timestamp_ltz(nums[0] if nums else 6)
        if word in (ARRAY, MULTISET):
            self.expect("<")
            element = self.parse()
            self.expect(">")
            return DataType(word, element=element)
        if word == MAP:
            self.expect("<")
            key = self.parse()
            self.expect(",")
            val = self.parse()
            self.expect(">")
            return DataType(MAP, element=key, value=val)
        if word == ROW:
            return self._row()
        raise TypeParseError(
            f"unknown type {word!r} in {self.text!r}; Flink types are BOOLEAN, TINYINT, "
            "SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), CHAR(n), VARCHAR(n), "
            "STRING, BYTES, DATE, TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p), ARRAY<T>, "
            "MAP<K, V>, ROW<name T, ...>"
        )

    def _zone_suffix(self, allow: bool) -> bool:
        """Reads ``WITH [LOCAL] TIME ZONE`` / ``WITHOUT TIME ZONE``; True for LOCAL."""
        if self.accept_word("WITHOUT"):
            self.accept_word("TIME")
            self.accept_word("ZONE")
            return False
        if self.accept_word("WITH"):
            local = self.accept_word("LOCAL")
            self.accept_word("TIME")
            self.accept_word("ZONE")
            if not (allow and local):
                raise TypeParseError(f"unsupported time zone type {self.text!r}")
            return True
        return False

    def _row(self) -> DataType:
        close = {"<": ">", "(": ")"}
        opener = self.take()
        if opener not in close:
            raise TypeParseError(f"expected '<' after ROW in type {self.text!r}")
        fields: list[tuple[str, DataType]] = []
        while self.peek() != close[opener]:
            name = self.take().strip("`")
            fields.append((name, self.parse()))
            if self.peek() == ",":
                self.take()
        self.expect(close[opener])
        return DataType(ROW, fields=tuple(fields))
