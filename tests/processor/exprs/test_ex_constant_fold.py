"""Constant subexpressions (CAST of a literal, date arithmetic over literals) are computed
once when the function is generated; a row's value and its errors stay what they were."""

from __future__ import annotations

import datetime as dt
import linecache
from decimal import Decimal

import pytest
from ex_helpers import call, cast, col, ev, i, s
from test_ex_temporal import date, interval

from deltaflow.processor.exprs.coercion import INTERVAL_YEAR_MONTH
from deltaflow.processor.exprs.compile import compile_predicate, compile_scalar
from deltaflow.processor.exprs.errors import EvalError


def source(fn) -> str:  # type: ignore[no-untyped-def]
    return "".join(linecache.getlines(fn.__code__.co_filename))


def test_tpch_date_range_is_computed_once_and_filters_as_sql_says():
    """TPC-H Q14's ``l_shipdate < DATE '1995-09-01' + INTERVAL '1' MONTH``: before
    1995-10-01, the date one month on (SQL interval arithmetic)."""
    d = col(0, "DATE")
    end = call("+", date("1995-09-01"), interval(1, INTERVAL_YEAR_MONTH))
    where = call("AND", call(">=", d, date("1995-09-01")), call("<", d, end))
    fn = compile_predicate(where)
    assert "parse" not in source(fn) and "add_months" not in source(fn)
    assert fn((dt.date(1995, 9, 1),)) is True
    assert fn((dt.date(1995, 9, 30),)) is True
    assert fn((dt.date(1995, 10, 1),)) is False
    assert fn((dt.date(1995, 8, 31),)) is False
    assert fn((None,)) is False


def test_arithmetic_over_literals_and_columns():
    fn = compile_scalar(call("+", col(0, "INT"), call("*", i(6), i(7))))
    assert "42" in source(fn)
    assert fn((1,)) == 43
    assert fn((None,)) is None
    assert ev(call("*", cast(s("1.5"), "DECIMAL(5, 2)"), i(2))) == Decimal("3.00")


def test_a_constant_that_fails_still_fails_on_the_row_that_meets_it():
    """CAST('non-number' AS INT) is not folded: the error comes when a row evaluates it
    (a CASE that never reaches it never fails), as without folding."""
    bad = cast(s("non-number"), "INT")
    with pytest.raises(EvalError, match="TRY_CAST"):
        compile_scalar(call("+", col(0, "INT"), bad))((1,))
    guarded = call("CASE", call(">", col(0, "INT"), i(0)), col(0, "INT"), bad)
    assert compile_scalar(guarded)((5,)) == 5
    with pytest.raises(EvalError, match="division by zero"):
        compile_scalar(call("+", col(0, "INT"), call("/", i(1), i(0))))((1,))
