"""Python user functions (``CREATE FUNCTION f AS 'module.attr' LANGUAGE PYTHON``): result type
and determinism read from the function object, as PyFlink's ``@udf(result_type=...,
deterministic=...)`` declares them. ``result_type`` is a Flink type string (default STRING);
``deterministic`` defaults to true."""

from __future__ import annotations

import importlib
from functools import cache

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import DataType, TypeParseError, parse_type, string


@cache
def udf_signature(name: str, target: str) -> tuple[DataType, bool]:
    module, _, attr = target.rpartition(".")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as err:
        raise SqlError(
            f"cannot load Python function {name} from {target!r} ({err}); make the module importable "
            "(PYTHONPATH) and check CREATE FUNCTION ... AS 'module.attr'"
        ) from None
    declared = getattr(fn, "result_type", None)
    try:
        dtype = parse_type(declared) if isinstance(declared, str) else string()
    except (TypeParseError, ValueError) as err:  # parse_type lets int() errors through
        raise SqlError(
            f"function {name}: result_type {declared!r} is not a Flink type ({err})"
        ) from None
    return dtype, bool(getattr(fn, "deterministic", True))
