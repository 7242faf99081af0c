"""DECIMAL results rounded to their type: ``lib_numeric.fit`` (CTX's own quantize, called
positionally) against its definition, ``value.quantize(exp, rounding=ROUND_HALF_UP,
context=CTX)`` and NULL past the precision; and the generated + - * against the same
definition computed here with ``decimal`` directly."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import pytest
from ex_helpers import call, col, ev
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.processor.exprs import lib_numeric
from deltaflow.processor.exprs.lib_numeric import CTX, exponent, fit

decimals = st.decimals(allow_nan=False, allow_infinity=False, places=None).filter(
    lambda d: abs(d.adjusted()) < 60
)


def defined(value: Decimal, exp: Decimal, int_digits: int) -> Decimal | None:
    q = value.quantize(exp, rounding=ROUND_HALF_UP, context=CTX)
    return None if q and q.adjusted() >= int_digits else q


@settings(max_examples=400, deadline=None)
@given(decimals, st.integers(0, 38), st.integers(1, 38))
def test_fit_is_half_up_rounding_to_the_scale_and_null_past_the_precision(value, scale, digits):
    exp = exponent(scale)
    got, want = fit(value, exp, digits), defined(value, exp, digits)
    assert (got is None) == (want is None)
    if want is not None:
        assert got == want
        assert str(got) == str(want)  # the same digits and exponent, not only the same number


@pytest.mark.parametrize("value", ["2.5", "-2.5", "0.125", "-0.125", "0.0", "-0", "1E+3"])
def test_fit_rounds_half_up_away_from_zero(value):
    exp = exponent(2)
    assert str(fit(Decimal(value), exp, 10)) == str(defined(Decimal(value), exp, 10))


def _outcome(fn, *args):  # noqa: ANN001, ANN202
    try:
        return str(fn(*args))
    except ArithmeticError as err:
        return type(err)


def test_fit_treats_specials_as_the_definition_does():
    """NaN stays NaN, an infinity raises InvalidOperation: in both."""
    for special in ("NaN", "-NaN", "Infinity", "-Infinity"):
        args = (Decimal(special), exponent(2), 10)
        assert _outcome(fit, *args) == _outcome(defined, *args)
    with pytest.raises(InvalidOperation):
        fit(Decimal("Infinity"), exponent(2), 10)


def test_fit_does_not_depend_on_the_thread_context():
    """CTX's rounding and precision, whatever ``decimal.getcontext()`` says."""
    import decimal

    with decimal.localcontext() as local:
        local.rounding, local.prec = decimal.ROUND_DOWN, 3
        assert str(fit(Decimal("12345.675"), exponent(2), 10)) == "12345.68"
    assert lib_numeric.CTX.rounding == ROUND_HALF_UP


_TYPES = [(10, 2), (15, 2), (38, 6), (2, 1), (5, 0), (38, 0), (20, 10)]


def _value(data, precision: int, scale: int) -> Decimal:
    unscaled = data.draw(st.integers(-(10**precision) + 1, 10**precision - 1))
    return Decimal(unscaled).scaleb(-scale)


@settings(max_examples=300, deadline=None)
@given(
    st.data(), st.sampled_from(["+", "-", "*"]), st.sampled_from(_TYPES), st.sampled_from(_TYPES)
)
def test_generated_decimal_arithmetic_is_the_definition(data, op, left, right):
    a, b = _value(data, *left), _value(data, *right)
    expr = call(
        op, col(0, f"DECIMAL({left[0]}, {left[1]})"), col(1, f"DECIMAL({right[0]}, {right[1]})")
    )
    t = expr.type
    exact = {"+": CTX.add, "-": CTX.subtract, "*": CTX.multiply}[op](a, b)
    want = defined(exact, exponent(t.scale or 0), (t.precision or 10) - (t.scale or 0))
    got = ev(expr, (a, b))
    assert (got is None) == (want is None)
    if want is not None:
        assert str(got) == str(want)
    assert ev(expr, (None, b)) is None and ev(expr, (a, None)) is None
