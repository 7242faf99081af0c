"""The error a compiled expression raises for a value it cannot evaluate."""

from __future__ import annotations

from deltaflow.formats.errors import DeltaflowError


class EvalError(DeltaflowError):
    """A runtime failure of a SQL expression (division by zero, a failed CAST, ...).

    Flink fails the job in these cases; so does deltaflow, naming the function and value.
    Raised out of generated code it also names the plan node (``node``, e.g. ``Calc#4``)
    and where the failing expression starts in the job's SQL (``line``, ``col``; 0: unknown).
    """

    node: str = ""
    line: int = 0
    col: int = 0
