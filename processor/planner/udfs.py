"""Python user functions (``CREATE FUNCTION f AS 'module.attr' LANGUAGE PYTHON``): result type
and determinism read from the function object, as PyFlink's ``@udf(result_type=...,
deterministic=...)`` declares them. ``result_type`` is a Flink type string (default STRING);
``deterministic`` defaults to true."""

from __future__ import annotations

from functools import cache

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import DataType, TypeParseError, parse_type, string
from deltaflow.processor.exprs.udf_loading import import_target


@cache
def udf_signature(name: str, target: str) -> tuple[DataType, bool]:
    fn = import_target("function", name, target, SqlError)
    declared = getattr(fn, "result_type", None)
    try:
        dtype = parse_type(declared) if isinstance(declared, str) else string()
    except (TypeParseError, ValueError) as err:  # parse_type lets int() errors through
        raise SqlError(
            f"function {name}: result_type {declared!r} is not a Flink type ({err})"
        ) from None
    return dtype, bool(getattr(fn, "deterministic", True))
