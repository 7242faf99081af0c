"""Stateless operators: source scan, Calc, DropUpdateBefore, Union, Sink."""

from __future__ import annotations

from operator import itemgetter

from deltaflow.formats.changelog import UPDATE_BEFORE, Batch
from deltaflow.formats.errors import DeltaflowError
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
        names = node.inputs[0].names if node.inputs else None
        self.fn = compile_calc(list(node.projection), node.condition, ctx.eval_context(), names)

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
        self.table = node.table
        given = node.inputs[0].fields if node.inputs else ()
        self.not_null = [
            (i, f.name)
            for i, f in enumerate(node.physical)
            if (not f.type.nullable or f.name in node.primary_key)
            and (len(given) != len(node.physical) or given[i].type.nullable)
        ]
        self.not_null_getters = [itemgetter(i) for i, _ in self.not_null]
        self.drop_nulls = ctx.drop_not_null_violations
        self.materializer = None
        if node.upsert_materialize and not isinstance(node.inputs[0], SinkUpsertMaterializer):
            names = [f.name for f in (node.fields or node.physical)]
            key = tuple(names.index(c) for c in node.primary_key)
            self.materializer = UpsertMaterializer(
                node.node_id, key, backend, input_upsert_key(node), node.inputs[0].types
            )

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if self.not_null:
            batch = self.enforce_not_null(batch)
        if self.materializer is None:
            return batch
        return self.materializer.process(batch)

    def enforce_not_null(self, batch: Batch) -> Batch:
        """Flink's sink NOT NULL check (primary key columns are NOT NULL too): a NULL
        fails the job, or with ``table.exec.sink.not-null-enforcer`` = DROP the row is
        dropped."""
        rows = batch.rows
        if not any(None in map(get, rows) for get in self.not_null_getters):  # C loops
            return batch
        bad = {j for i, _ in self.not_null for j, row in enumerate(rows) if row[i] is None}
        if not self.drop_nulls:
            row = batch.rows[min(bad)]
            column = next(name for i, name in self.not_null if row[i] is None)
            raise DeltaflowError(
                f"sink {self.table}: column '{column}' is NOT NULL, however, a null value is being "
                "written into it; filter such rows out, or SET 'table.exec.sink.not-null-enforcer' "
                "= 'DROP' to drop them silently"
            )
        keep = [j for j in range(len(batch.rows)) if j not in bad]
        return Batch([batch.kinds[j] for j in keep], [batch.rows[j] for j in keep])
