"""Type inference follows Flink's LogicalTypeMerging / LogicalTypeCasts rules."""

from __future__ import annotations

import pytest
from ex_helpers import call, cast, col, i, lit, null, s, t, unit

from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.exprs.functions import (
    FunctionError,
    cast_type_ok,
    function_names,
    infer_call,
    is_deterministic,
    is_dynamic,
)
from deltaflow.processor.exprs.nodes import Call


def typ(op: str, *types: str) -> str:
    return call(op, *(col(n, x) for n, x in enumerate(types))).type.sql()


@pytest.mark.parametrize(
    ("op", "a", "b", "expected"),
    [
        # + -: s = max(s1, s2), p = max(p1 - s1, p2 - s2) + s + 1
        ("+", "DECIMAL(10, 2) NOT NULL", "DECIMAL(5, 3) NOT NULL", "DECIMAL(12, 3) NOT NULL"),
        ("-", "DECIMAL(10, 2) NOT NULL", "INT NOT NULL", "DECIMAL(13, 2) NOT NULL"),
        ("+", "DECIMAL(38, 8) NOT NULL", "DECIMAL(32, 8) NOT NULL", "DECIMAL(38, 7) NOT NULL"),
        # *: p1 + p2 + 1, s1 + s2; capped at 38 keeping at least 6 fraction digits
        ("*", "DECIMAL(10, 2) NOT NULL", "DECIMAL(5, 3) NOT NULL", "DECIMAL(16, 5) NOT NULL"),
        ("*", "DECIMAL(20, 10) NOT NULL", "DECIMAL(20, 10) NOT NULL", "DECIMAL(38, 17) NOT NULL"),
        ("*", "DECIMAL(38, 10) NOT NULL", "DECIMAL(38, 10) NOT NULL", "DECIMAL(38, 6) NOT NULL"),
        # /: s = max(6, s1 + p2 + 1), p = p1 - s1 + s2 + s
        ("/", "DECIMAL(10, 2) NOT NULL", "INT NOT NULL", "DECIMAL(21, 13) NOT NULL"),
        ("/", "DECIMAL(5, 0) NOT NULL", "DECIMAL(3, 0) NOT NULL", "DECIMAL(11, 6) NOT NULL"),
        # %: s = max(s1, s2), p = min(p1 - s1, p2 - s2) + s
        ("%", "DECIMAL(10, 2) NOT NULL", "DECIMAL(5, 3) NOT NULL", "DECIMAL(5, 3) NOT NULL"),
        ("+", "INT", "BIGINT NOT NULL", "BIGINT"),
        ("+", "TINYINT NOT NULL", "TINYINT NOT NULL", "TINYINT NOT NULL"),
        ("/", "INT NOT NULL", "INT NOT NULL", "INT NOT NULL"),
        ("*", "INT NOT NULL", "DOUBLE NOT NULL", "DOUBLE NOT NULL"),
        ("+", "DECIMAL(10, 2) NOT NULL", "FLOAT NOT NULL", "DOUBLE NOT NULL"),
        ("+", "INT NOT NULL", "FLOAT NOT NULL", "FLOAT NOT NULL"),
    ],
)
def test_arithmetic_result_types(op: str, a: str, b: str, expected: str) -> None:
    assert typ(op, a, b) == expected


def test_nullability_of_special_forms() -> None:
    assert call("IS NULL", col(0, "INT")).type.sql() == "BOOLEAN NOT NULL"
    assert call("=", col(0, "INT"), col(1, "INT NOT NULL")).type.nullable
    assert not call("IS DISTINCT FROM", col(0, "INT"), col(1, "INT")).type.nullable
    assert not call("COALESCE", col(0, "INT"), col(1, "INT NOT NULL")).type.nullable
    assert call("COALESCE", col(0, "INT"), col(1, "INT")).type.nullable
    assert call("NULLIF", col(0, "INT NOT NULL"), i(1)).type.nullable
    assert call("UPPER", col(0, "STRING NOT NULL")).type.sql() == "STRING NOT NULL"
    assert call("REGEXP_EXTRACT", col(0, "STRING NOT NULL"), s("a")).type.nullable
    assert not call("NOW").type.nullable


def test_case_takes_the_common_type_and_casts_branches() -> None:
    expr = call("CASE", col(0, "BOOLEAN"), col(1, "DECIMAL(5, 2) NOT NULL"), i(3))
    assert expr.type.sql() == "DECIMAL(12, 2) NOT NULL"
    assert isinstance(expr.operands[1], Call) and expr.operands[1].op == "CAST"
    assert expr.operands[2].type.root == "DECIMAL"
    assert call("CASE", col(0, "BOOLEAN"), i(1), null()).type.sql() == "INT"


def test_comparing_numbers_with_strings_needs_a_cast() -> None:
    with pytest.raises(FunctionError, match=r"=\(INT, STRING NOT NULL\).*NUMERIC and STRING"):
        call("=", col(0, "INT"), s("1"))


def test_string_literal_against_timestamp_is_cast_implicitly() -> None:
    expr = call("<", col(0, "TIMESTAMP(3)"), s("2023-09-30 18:22:42.123"))
    assert isinstance(expr.operands[1], Call) and expr.operands[1].op == "CAST"
    assert expr.operands[1].type.root == "TIMESTAMP"


def test_unknown_function_names_it() -> None:
    with pytest.raises(DeltaflowError, match="FROB"):
        call("FROB", i(1))


def test_wrong_argument_types_list_the_signatures() -> None:
    with pytest.raises(FunctionError) as err:
        call("SUBSTRING", i(1), i(2))
    text = str(err.value)
    assert "SUBSTRING(INT NOT NULL, INT NOT NULL)" in text
    assert "SUBSTRING(STRING, INTEGER, INTEGER)" in text


def test_logical_operators_need_booleans() -> None:
    with pytest.raises(FunctionError, match="AND"):
        call("AND", col(0, "BOOLEAN"), i(1))


def test_round_on_decimal_derives_scale() -> None:
    assert (
        call("ROUND", col(0, "DECIMAL(10, 4) NOT NULL"), i(2)).type.sql()
        == "DECIMAL(9, 2) NOT NULL"
    )
    assert (
        call("ROUND", col(0, "DECIMAL(10, 4) NOT NULL"), i(-1)).type.sql()
        == "DECIMAL(7, 0) NOT NULL"
    )
    assert call("FLOOR", col(0, "DECIMAL(10, 4)")).type.sql() == "DECIMAL(10, 0)"


def test_temporal_forms() -> None:
    assert call("EXTRACT", unit("DAY"), col(0, "DATE")).type.sql() == "BIGINT"
    assert (
        call("TIMESTAMPADD", unit("DAY"), i(1), col(0, "TIMESTAMP(3)")).type.sql() == "TIMESTAMP(3)"
    )
    assert call("TIMESTAMPDIFF", unit("DAY"), col(0, "DATE"), col(1, "DATE")).type.sql() == "INT"
    assert call("FLOOR", col(0, "TIMESTAMP(3)"), unit("HOUR")).type.sql() == "TIMESTAMP(3)"
    assert call("NOW").type.sql() == "TIMESTAMP_LTZ(3) NOT NULL"
    assert call("CURRENT_DATE").type.sql() == "DATE NOT NULL"


@pytest.mark.parametrize(
    ("src", "dst", "ok"),
    [
        ("STRING", "INT", True),
        ("INT", "STRING", True),
        ("INT", "BOOLEAN", True),
        ("DATE", "TIMESTAMP(3)", True),
        ("TIMESTAMP(3)", "DATE", True),
        ("BIGINT", "TIMESTAMP_LTZ(3)", True),
        ("BIGINT", "TIMESTAMP(3)", False),
        ("DATE", "INT", False),
        ("BOOLEAN", "DATE", False),
        ("BYTES", "INT", False),
        ("ARRAY<INT>", "ARRAY<STRING>", True),
        ("ARRAY<INT>", "STRING", True),
        ("ARRAY<INT>", "MAP<INT, INT>", False),
        ("TIME(0)", "DATE", False),
    ],
)
def test_cast_table(src: str, dst: str, ok: bool) -> None:
    assert cast_type_ok(t(src), t(dst)) is ok


def test_unsupported_cast_is_an_error() -> None:
    with pytest.raises(FunctionError, match="cannot cast DATE to INT"):
        cast(col(0, "DATE"), "INT")
    assert cast(col(0, "INT NOT NULL"), "STRING").type.sql() == "STRING NOT NULL"
    assert cast(col(0, "INT NOT NULL"), "STRING", try_cast=True).type.nullable


def test_determinism_flags() -> None:
    for name in ("RAND", "RAND_INTEGER", "UUID", "NOW", "CURRENT_TIMESTAMP", "CURRENT_DATE"):
        assert not is_deterministic(name)
    for name in ("UPPER", "ABS", "CONCAT", "DATE_FORMAT", "+"):
        assert is_deterministic(name)
    assert is_dynamic("NOW") and is_dynamic("CURRENT_DATE") and is_dynamic("LOCALTIMESTAMP")
    assert not is_dynamic("RAND") and not is_dynamic("UUID")


def test_every_function_name_has_a_code_generator() -> None:
    from deltaflow.processor.exprs import compile as _compile  # noqa: F401 - registers
    from deltaflow.processor.exprs.codegen import GENERATORS

    missing = [n for n in function_names() if n not in GENERATORS]
    assert missing == []


def test_infer_call_accepts_lower_case_names() -> None:
    assert infer_call("upper", [lit("a", "STRING NOT NULL")]).op == "UPPER"


def test_mod_needs_exact_numerics() -> None:
    with pytest.raises(FunctionError, match="exact numeric"):
        typ("%", "DOUBLE", "INT")
    assert typ("MOD", "BIGINT NOT NULL", "INT NOT NULL") == "INT NOT NULL"
