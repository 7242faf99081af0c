"""$WELFORD_M2$1 (the sum of squared deviations behind STDDEV_* / VAR_*) with retraction:
after any sequence of adds and retracts it is the M2 of the values left, as recomputed from
scratch (NULL where rounding leaves it below zero, as in Flink); NULL for no values and while
retractions outnumber additions."""

from __future__ import annotations

import statistics
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from deltaflow.processor.runtime.agg_functions import WelfordM2

VALUES = st.lists(st.integers(-1000, 1000), min_size=1, max_size=30)


@given(VALUES, st.data())
def test_m2_after_retractions_is_the_m2_of_the_values_left(values, data):
    fn = WelfordM2()
    acc = fn.init()
    for v in values:
        acc = fn.add(acc, v)
    gone = data.draw(st.lists(st.sampled_from(values), max_size=len(values) - 1, unique=True))
    left = list(values)
    for v in gone:
        acc = fn.retract(acc, v)
        left.remove(v)
    expected = statistics.pvariance(left) * len(left)
    got = fn.value(acc)
    if got is None:  # rounding left m2 a hair below zero: NULL, as Flink's getValue
        assert expected < 1e-6 and acc[2] < 0
    else:
        assert abs(got - expected) <= 1e-6 * max(1.0, expected)


def test_decimals_no_values_and_early_retractions():
    fn = WelfordM2()
    acc = fn.init()
    assert fn.value(acc) is None
    acc = fn.retract(acc, Decimal("2.50"))  # a retraction before its row: NULL, counted
    assert fn.value(acc) is None
    for v in (Decimal("2.50"), Decimal("1.50"), Decimal("3.50")):
        acc = fn.add(acc, v)
    assert fn.value(acc) == 2.0  # (1.5 - 2.5)^2 + (3.5 - 2.5)^2 over the two counted
    acc = fn.retract(acc, Decimal("1.50"))
    acc = fn.retract(acc, Decimal("3.50"))
    assert fn.value(acc) is None and acc[0] == 0
