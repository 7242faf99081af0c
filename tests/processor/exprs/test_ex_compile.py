"""The compiled forms: one generated function per Calc, kinds kept, NULL filters drop."""

from __future__ import annotations

import dis

import pytest
from ex_helpers import call, col, i, lit, s

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from deltaflow.formats.errors import DeltaflowError
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.compile import (
    EvalContext,
    compile_calc,
    compile_key,
    compile_predicate,
    compile_scalar,
)
from deltaflow.processor.exprs.errors import EvalError
from deltaflow.processor.exprs.nodes import UdfCall

ID, NAME, AMOUNT = col(0, "INT NOT NULL"), col(1, "STRING"), col(2, "INT")


def test_calc_filters_each_row_and_keeps_its_kind() -> None:
    fn = compile_calc([NAME, call("*", AMOUNT, i(2))], call(">", AMOUNT, i(10)), EvalContext())
    kinds = [INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE, INSERT]
    rows = [(1, "a", 5), (2, "b", 20), (2, "b", 5), (3, "c", 30), (4, "d", None)]
    # -U passes and +U does not: each row is judged alone, as Flink's Calc does.
    assert fn(kinds, rows) == ([UPDATE_BEFORE, DELETE], [("b", 40), ("c", 60)])


def test_calc_without_condition_projects_every_row() -> None:
    fn = compile_calc([ID, call("UPPER", NAME)], None)
    assert fn([INSERT, DELETE], [(1, "a", 0), (2, None, 0)]) == (
        [INSERT, DELETE],
        [(1, "A"), (2, None)],
    )
    assert fn([], []) == ([], [])


def test_calc_is_one_generated_function() -> None:
    projection = [ID, call("UPPER", NAME), call("+", AMOUNT, i(1))]
    fn = compile_calc(projection, call("LIKE", NAME, s("a%")))
    code = fn.__code__
    assert code.co_name == "_calc"
    # no nested functions, lambdas or comprehensions: the row loop is in this one body
    assert not [c for c in code.co_consts if hasattr(c, "co_code")]
    ops = [ins.opname for ins in dis.get_instructions(code)]
    assert "FOR_ITER" in ops and ops.count("FOR_ITER") == 1
    assert "MAKE_FUNCTION" not in ops


def test_errors_name_the_expression_and_row() -> None:
    fn = compile_calc([call("/", ID, AMOUNT)], None)
    with pytest.raises(EvalError, match="division by zero"):
        fn([INSERT], [(1, "a", 0)])


def test_predicate_treats_null_as_false() -> None:
    pred = compile_predicate(call(">", AMOUNT, i(1)), EvalContext())
    assert pred((1, "a", 5)) is True
    assert pred((1, "a", 0)) is False
    assert pred((1, "a", None)) is False


def test_scalar() -> None:
    fn = compile_scalar(call("CONCAT", NAME, s("!")))
    assert fn((1, "hi", 0)) == "hi!"
    assert fn((1, None, 0)) is None


def test_compile_key_always_returns_a_tuple() -> None:
    row = (10, "x", 30)
    assert compile_key((0,))(row) == (10,)
    assert compile_key((2, 0))(row) == (30, 10)
    assert compile_key(())(row) == ()


def test_python_udf_is_loaded_once_and_called() -> None:
    udf = UdfCall(parse_type("INT"), "add_one", "ex_udfs.add_one", (AMOUNT,))
    fn = compile_calc([udf], None)
    assert fn([INSERT, INSERT], [(1, "a", 1), (2, "b", None)]) == (
        [INSERT, INSERT],
        [(2,), (None,)],
    )


def test_udf_class_with_eval_is_instantiated_once() -> None:
    udf = UdfCall(parse_type("INT"), "doubler", "ex_udfs.Doubler", (AMOUNT,))
    assert compile_scalar(udf)((1, "a", 21)) == 42


def test_missing_udf_module_is_a_clear_error() -> None:
    udf = UdfCall(parse_type("INT"), "f", "no_such_module_xyz.f", (AMOUNT,))
    with pytest.raises(DeltaflowError, match="no_such_module_xyz.f"):
        compile_scalar(udf)


def test_unknown_time_zone_names_the_option() -> None:
    with pytest.raises(DeltaflowError, match="table.local-time-zone"):
        compile_scalar(lit(1, "INT"), EvalContext("Mars/Olympus"))
