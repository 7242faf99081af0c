"""Every NULL-in-NULL-out function returns NULL for a NULL argument, and DECIMAL arithmetic
matches exact decimal math rounded HALF_UP to Flink's derived scale."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext

import pytest
from ex_helpers import call, col, ev, lit
from hypothesis import given
from hypothesis import strategies as st

from deltaflow.processor.exprs.signatures import FIXED

SAMPLE_TYPES = {
    "S": "STRING",
    "N": "INT",
    "I": "INT",
    "B": "BOOLEAN",
    "T": "TIMESTAMP(3)",
    "D": "DATE",
    "X": "TIMESTAMP(3)",
    "V": "BYTES",
    "A": "INT",
}
STRICT = sorted(
    (name, sig)
    for name, fixed in FIXED.items()
    if fixed.nulls in ("any", "always")
    for sig in fixed.signatures
    if sig and "Y" not in sig and "*" not in sig and name != "RAND_INTEGER"
)


@pytest.mark.parametrize(("name", "signature"), STRICT)
def test_null_argument_gives_null(name: str, signature: tuple[str, ...]) -> None:
    for position in range(len(signature)):
        operands = [col(n, SAMPLE_TYPES[code]) for n, code in enumerate(signature)]
        row = tuple(None if n == position else _sample(code) for n, code in enumerate(signature))
        assert ev(call(name, *operands), row) is None, (name, signature, position)


def _sample(code: str) -> object:
    import datetime as dt

    samples = {
        "S": "2024-01-02 03:04:05",
        "N": 3,
        "I": 3,
        "B": True,
        "T": dt.datetime(2024, 1, 2, 3, 4, 5),
        "D": dt.date(2024, 1, 2),
        "X": dt.datetime(2024, 1, 2, 3, 4, 5),
        "V": b"ab",
        "A": 3,
    }
    return samples[code]


DECIMALS = st.decimals(min_value=-(10**6), max_value=10**6, places=2, allow_nan=False)


@given(DECIMALS, DECIMALS)
def test_decimal_arithmetic_matches_exact_math(a: Decimal, b: Decimal) -> None:
    x, y = col(0, "DECIMAL(8, 2) NOT NULL"), col(1, "DECIMAL(8, 2) NOT NULL")
    with localcontext() as ctx:
        ctx.prec = 100
        # + - : DECIMAL(10, 2); * : DECIMAL(17, 4); / : DECIMAL(19, 11)
        assert ev(call("+", x, y), (a, b)) == a + b
        assert ev(call("*", x, y), (a, b)) == (a * b).quantize(Decimal("0.0001"))
        if b:
            expected = (a / b).quantize(Decimal(1).scaleb(-11), rounding=ROUND_HALF_UP)
            assert ev(call("/", x, y), (a, b)) == expected
            assert str(ev(call("/", x, y), (a, b))).count(".") <= 1


def test_decimal_scale_is_exact_in_results() -> None:
    out = ev(call("*", lit(Decimal("1.10"), "DECIMAL(3, 2)"), lit(Decimal("2.0"), "DECIMAL(2, 1)")))
    assert out.as_tuple().exponent == -3
