"""The Correlate operator: a Python table function applied to each row of a batch.

The function is imported once per operator; its arguments are computed for the whole batch by
one generated projection. Every row the function yields for an input row is emitted with that
row's kind (a -U input re-runs the function and retracts what its +I/+U emitted). A LEFT
correlate emits the input row with NULL function columns when the function yields nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import cast

from deltaflow.formats.changelog import Batch
from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.exprs.compile import compile_calc
from deltaflow.processor.exprs.udf_loading import import_target
from deltaflow.processor.plan import Correlate
from deltaflow.processor.runtime.base import Operator


def load_table_function(name: str, target: str) -> Callable[..., Iterable[object] | None]:
    """The callable behind ``CREATE FUNCTION name AS 'target'`` (a PyFlink ``@udtf`` wrapper's
    ``_func``, a TableFunction-style object's ``eval``, or the function itself)."""
    fn = import_target("table function", name, target)
    fn = getattr(fn, "_func", fn)
    if isinstance(fn, type) and hasattr(fn, "eval"):
        return fn().eval  # type: ignore[no-any-return]
    if hasattr(fn, "eval"):
        return fn.eval  # type: ignore[no-any-return]
    return cast(Callable[..., Iterable[object] | None], fn)


class CorrelateOperator(Operator):
    def __init__(self, node: Correlate, backend, ctx) -> None:  # noqa: ANN001
        self.name = node.function
        self.fn = load_table_function(node.function, node.target)
        self.args = compile_calc(list(node.operands), None, ctx.eval_context())
        self.width = len(node.fields) - len(node.inputs[0].fields)
        self.left = node.join_type == "LEFT"

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        _, args = self.args(batch.kinds, batch.rows)
        out_kinds: list[int] = []
        out_rows: list[tuple] = []
        fn, width = self.fn, self.width
        empty = (None,) * width
        for kind, row, a in zip(batch.kinds, batch.rows, args, strict=True):
            produced = fn(*a)
            n = len(out_rows)
            if produced is not None:
                for value in produced:
                    out_rows.append(row + self._row(value))
            if self.left and len(out_rows) == n:
                out_rows.append(row + empty)
            out_kinds.extend([kind] * (len(out_rows) - n))
        return Batch(out_kinds, out_rows)

    def _row(self, value: object) -> tuple:  # type: ignore[type-arg]
        if isinstance(value, tuple | list):
            if len(value) == self.width:
                return tuple(value)
        elif value is None and self.width > 1:  # a NULL ROW element of UNNEST(array of ROW)
            return (None,) * self.width
        elif type(value) is int and self.name == "$UNNEST_ROWS_WITH_ORDINALITY$1":
            return (None,) * (self.width - 1) + (value,)  # a NULL ROW element, its position
        elif self.width == 1:
            return (value,)
        raise DeltaflowError(
            f"table function {self.name} yielded {value!r}, but it declares {self.width} result "
            "column(s); yield one tuple with a value per declared column"
        )
