"""Operator semantics: Java integer arithmetic, DECIMAL rounding, three-valued logic, NULLs."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from ex_helpers import call, col, ev, i, lit, null, s
from hypothesis import given
from hypothesis import strategies as st

from deltaflow.processor.exprs.errors import EvalError

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def java_int(x: int, bits: int) -> int:
    """Two's complement wrap, written independently of the code under test."""
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >= 1 << (bits - 1) else x


def test_int_overflow_wraps_like_java() -> None:
    assert ev(call("+", i(2147483647), i(1))) == -2147483648
    assert ev(call("*", i(65536), i(65536))) == 0
    assert ev(call("-", lit(LONG_MIN, "BIGINT"), lit(1, "BIGINT"))) == LONG_MAX
    assert ev(call("-", i(INT_MIN))) == INT_MIN
    assert ev(call("/", i(INT_MIN), i(-1))) == INT_MIN


@given(st.integers(INT_MIN, INT_MAX), st.integers(INT_MIN, INT_MAX))
def test_int_arithmetic_property(a: int, b: int) -> None:
    row = (a, b)
    x, y = col(0, "INT NOT NULL"), col(1, "INT NOT NULL")
    assert ev(call("+", x, y), row) == java_int(a + b, 32)
    assert ev(call("-", x, y), row) == java_int(a - b, 32)
    assert ev(call("*", x, y), row) == java_int(a * b, 32)
    if b != 0:
        quotient = int(Decimal(a) / Decimal(b))  # Java truncates toward zero
        assert ev(call("/", x, y), row) == java_int(quotient, 32)
        assert ev(call("%", x, y), row) == a - b * quotient


@given(st.integers(LONG_MIN, LONG_MAX), st.integers(LONG_MIN, LONG_MAX))
def test_bigint_arithmetic_property(a: int, b: int) -> None:
    x, y = col(0, "BIGINT NOT NULL"), col(1, "BIGINT NOT NULL")
    assert ev(call("+", x, y), (a, b)) == java_int(a + b, 64)
    assert ev(call("*", x, y), (a, b)) == java_int(a * b, 64)


def test_integer_division_truncates_toward_zero() -> None:
    assert ev(call("/", i(7), i(2))) == 3
    assert ev(call("/", i(-7), i(2))) == -3
    assert ev(call("%", i(-7), i(2))) == -1
    assert ev(call("MOD", i(7), i(-2))) == 1


def test_division_by_zero() -> None:
    with pytest.raises(EvalError, match="division by zero"):
        ev(call("/", i(1), i(0)))
    with pytest.raises(EvalError, match="division by zero"):
        ev(call("/", lit(Decimal("1.0"), "DECIMAL(2, 1)"), lit(Decimal("0.0"), "DECIMAL(2, 1)")))
    assert ev(call("/", lit(1.0, "DOUBLE"), lit(0.0, "DOUBLE"))) == math.inf
    assert math.isnan(ev(call("/", lit(0.0, "DOUBLE"), lit(0.0, "DOUBLE"))))


def test_decimal_arithmetic_rounds_half_up_to_the_derived_scale() -> None:
    a = lit(Decimal("1.00"), "DECIMAL(3, 2)")
    b = lit(Decimal("3"), "DECIMAL(1, 0)")
    # DECIMAL(3,2) / DECIMAL(1,0) -> DECIMAL(9, 6)
    assert ev(call("/", a, b)) == Decimal("0.333333")
    assert str(ev(call("/", lit(Decimal("2.00"), "DECIMAL(3, 2)"), b))) == "0.666667"
    assert str(ev(call("+", a, lit(Decimal("0.005"), "DECIMAL(3, 3)")))) == "1.005"
    assert str(ev(call("*", a, lit(Decimal("2.5"), "DECIMAL(2, 1)")))) == "2.500"
    assert str(ev(call("+", a, i(1)))) == "2.00"


def test_decimal_overflow_is_null() -> None:
    big = lit(Decimal("9" * 38), "DECIMAL(38, 0)")
    assert ev(call("+", big, big)) is None


def test_mixed_decimal_double_is_double() -> None:
    out = ev(call("+", lit(Decimal("1.5"), "DECIMAL(2, 1)"), lit(0.25, "DOUBLE")))
    assert out == 1.75 and isinstance(out, float)


def test_null_propagates_through_arithmetic() -> None:
    assert ev(call("+", col(0, "INT"), i(1)), (None,)) is None
    assert ev(call("+", null("INT"), i(1))) is None


BOOLS = st.sampled_from([True, False, None])


def sql_and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def sql_or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


@given(BOOLS, BOOLS, BOOLS)
def test_three_valued_logic(a: bool | None, b: bool | None, c: bool | None) -> None:
    x, y, z = (col(n, "BOOLEAN") for n in range(3))
    row = (a, b, c)
    assert ev(call("AND", x, y), row) is sql_and(a, b)
    assert ev(call("OR", x, y), row) is sql_or(a, b)
    assert ev(call("AND", x, y, z), row) is sql_and(sql_and(a, b), c)
    assert ev(call("OR", x, call("AND", y, z)), row) is sql_or(a, sql_and(b, c))
    assert ev(call("NOT", x), row) is (None if a is None else not a)
    assert ev(call("IS TRUE", x), row) is (a is True)
    assert ev(call("IS NOT FALSE", x), row) is (a is not False)


def test_comparisons_across_numeric_types() -> None:
    assert ev(call("=", lit(Decimal("1.0"), "DECIMAL(2, 1)"), i(1))) is True
    assert ev(call("<", i(1), lit(1.5, "DOUBLE"))) is True
    assert ev(call(">", lit(Decimal("2.50"), "DECIMAL(3, 2)"), lit(2.4, "DOUBLE"))) is True
    # DECIMAL meets DOUBLE as DOUBLE: 0.1 = 0.1 although the binary double is not exactly 1/10
    assert ev(call("=", lit(Decimal("0.1"), "DECIMAL(1, 1)"), lit(0.1, "DOUBLE"))) is True
    assert ev(call("IN", lit(0.1, "DOUBLE"), lit(Decimal("0.1"), "DECIMAL(1, 1)"))) is True
    assert ev(call("IN", lit(Decimal("0.1"), "DECIMAL(1, 1)"), lit(0.1, "DOUBLE"))) is True
    assert ev(call("<>", s("a"), s("b"))) is True
    assert ev(call("<", s("B"), s("a"))) is True  # code point order
    assert ev(call("=", col(0, "INT"), i(1)), (None,)) is None


def test_is_distinct_from_treats_null_as_a_value() -> None:
    assert ev(call("IS DISTINCT FROM", i(1), null("INT"))) is True
    assert ev(call("IS DISTINCT FROM", null("INT"), null("INT"))) is False
    assert ev(call("IS NOT DISTINCT FROM", null("INT"), null("INT"))) is True


def test_like_with_escape() -> None:
    assert ev(call("LIKE", s("abc"), s("a%"))) is True
    assert ev(call("LIKE", s("abc"), s("a_c"))) is True
    assert ev(call("LIKE", s("abc"), s("A%"))) is False
    assert ev(call("LIKE", s("10%"), s("10!%"), s("!"))) is True
    assert ev(call("LIKE", s("100"), s("10!%"), s("!"))) is False
    assert ev(call("NOT LIKE", s("abc"), s("b%"))) is True
    assert ev(call("LIKE", s("a.c"), s("a.c"))) is True
    assert ev(call("LIKE", s("abc"), s("a.c"))) is False
    assert ev(call("LIKE", col(0, "STRING"), col(1, "STRING")), ("xyz", "%y%")) is True


def test_in_with_nulls() -> None:
    x = col(0, "INT")
    assert ev(call("IN", x, i(1), i(2)), (2,)) is True
    assert ev(call("IN", x, i(1), i(2)), (3,)) is False
    assert ev(call("IN", x, i(1), i(2)), (None,)) is None
    assert ev(call("IN", x, i(1), null("INT")), (1,)) is True
    assert ev(call("IN", x, i(1), null("INT")), (3,)) is None
    assert ev(call("NOT IN", x, i(1), null("INT")), (3,)) is None
    assert ev(call("NOT IN", x, i(1), i(2)), (3,)) is True


def test_between_uses_three_valued_and() -> None:
    x = col(0, "INT")
    assert ev(call("BETWEEN", x, i(1), i(3)), (2,)) is True
    assert ev(call("BETWEEN", x, i(1), i(3)), (4,)) is False
    # 5 BETWEEN NULL AND 3 is (5 >= NULL) AND (5 <= 3) = NULL AND FALSE = FALSE
    assert ev(call("BETWEEN", x, null("INT"), i(3)), (5,)) is False
    assert ev(call("BETWEEN", x, null("INT"), i(9)), (5,)) is None
    assert ev(call("NOT BETWEEN", x, i(1), i(3)), (4,)) is True


def test_conditionals() -> None:
    x = col(0, "INT")
    case = call("CASE", call(">", x, i(0)), s("pos"), call("<", x, i(0)), s("neg"), s("zero"))
    assert [ev(case, (v,)) for v in (5, -5, 0, None)] == ["pos", "neg", "zero", "zero"]
    assert ev(call("COALESCE", null("INT"), x, i(7)), (None,)) == 7
    assert ev(call("COALESCE", null("INT"), x, i(7)), (3,)) == 3
    assert ev(call("IFNULL", x, i(9)), (None,)) == 9
    assert ev(call("NULLIF", x, i(1)), (1,)) is None
    assert ev(call("NULLIF", x, i(1)), (2,)) == 2
    assert ev(call("IF", call(">", x, i(1)), s("big"), s("small")), (None,)) == "small"
    assert ev(call("GREATEST", i(1), x, i(3)), (7,)) == 7
    assert ev(call("LEAST", i(1), x, i(3)), (None,)) is None


def test_case_branch_values_take_the_result_scale() -> None:
    expr = call("CASE", col(0, "BOOLEAN"), lit(Decimal("1.5"), "DECIMAL(2, 1)"), i(2))
    assert str(ev(expr, (True,))) == "1.5"
    assert str(ev(expr, (False,))) == "2.0"
