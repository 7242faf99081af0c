"""Importing the Python object behind ``CREATE FUNCTION name AS 'module.attr' LANGUAGE PYTHON``.

Shared by the planner (which reads a function's declared types) and the compiler and
runtime (which call it), so a missing module reads the same everywhere.
"""

from __future__ import annotations

import importlib

from deltaflow.formats.errors import DeltaflowError


def import_target(
    kind: str, name: str, target: str, error: type[DeltaflowError] = DeltaflowError
) -> object:
    """The object ``target`` ('module.attr') names; ``error`` says what to check if it fails."""
    module, _, attr = target.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as err:
        raise error(
            f"cannot load Python {kind} {name} from {target!r} ({err}); make the module "
            "importable (PYTHONPATH) and check CREATE FUNCTION ... AS 'module.attr'"
        ) from None
