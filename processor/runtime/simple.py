"""Stateless operators: source scan, Calc, DropUpdateBefore, Union, Sink."""

from __future__ import annotations

from deltaflow.formats.changelog import UPDATE_BEFORE, Batch
from deltaflow.processor.exprs.compile import compile_calc
from deltaflow.processor.plan import Calc, Sink, SinkUpsertMaterializer
from deltaflow.processor.runtime.base import Operator
from deltaflow.processor.runtime.keyed import UpsertMaterializer, input_upsert_key


class PassThrough(Operator):
    """A source scan (its batches are already decoded) and Union (concatenation)."""

    def process(self, batch: Batch, port: int = 0) -> Batch:
        return batch


class CalcOperator(Operator):
    """Projection and filter fused into one generated function; each row keeps its kind."""

    def __init__(self, node: Calc, backend, ctx) -> None:
        self.fn = compile_calc(list(node.projection), node.condition, ctx.eval_context())

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        kinds, rows = self.fn(batch.kinds, batch.rows)
        return Batch(kinds, rows)


class DropUpdateBeforeOperator(Operator):
    def process(self, batch: Batch, port: int = 0) -> Batch:
        if UPDATE_BEFORE not in batch.kinds:
            return batch
        out = Batch()
        for kind, row in zip(batch.kinds, batch.rows, strict=True):
            if kind != UPDATE_BEFORE:
                out.append(kind, row)
        return out


class SinkOperator(Operator):
    """The rows a sink receives; materializes upserts when the plan asks and no
    SinkUpsertMaterializer node precedes it."""

    def __init__(self, node: Sink, backend, ctx) -> None:
        self.materializer = None
        if node.upsert_materialize and not isinstance(node.inputs[0], SinkUpsertMaterializer):
            names = [f.name for f in (node.fields or node.physical)]
            key = tuple(names.index(c) for c in node.primary_key)
            self.materializer = UpsertMaterializer(
                node.node_id, key, backend, input_upsert_key(node)
            )

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if self.materializer is None:
            return batch
        return self.materializer.process(batch)
