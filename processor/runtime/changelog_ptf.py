"""TO_CHANGELOG and FROM_CHANGELOG operators: stateless, one pass over each batch.

TO_CHANGELOG writes each change as an insert with its op code in front; FROM_CHANGELOG reads
the op code of each (inserted) row, emits the row as that change and leaves the code out.
"""

from __future__ import annotations

from operator import itemgetter

from deltaflow.formats.changelog import INSERT, Batch
from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.plan import FromChangelog, ToChangelog
from deltaflow.processor.runtime.base import Operator


class ToChangelogOperator(Operator):
    def __init__(self, node: ToChangelog, backend, ctx) -> None:  # noqa: ANN001 - graph builder shape
        self.codes = node.codes
        self.drops = None in node.codes

    def process(self, batch: Batch, port: int = 0) -> Batch:
        codes = self.codes
        pairs = zip(batch.kinds, batch.rows, strict=True)
        if self.drops:
            rows = [(codes[k], *r) for k, r in pairs if codes[k] is not None]
        else:
            rows = [(codes[k], *r) for k, r in pairs]
        return Batch([INSERT] * len(rows), rows)


class FromChangelogOperator(Operator):
    def __init__(self, node: FromChangelog, backend, ctx) -> None:  # noqa: ANN001 - graph builder shape
        self.node_id = node.node_id
        self.op = node.op_index
        self.kinds = dict(node.kinds)
        width = len(node.inputs[0].fields) if node.inputs else len(node.fields) + 1
        keep = [i for i in range(width) if i != node.op_index]
        self.project = itemgetter(*keep) if len(keep) > 1 else (lambda r, i=keep[0]: (r[i],))

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        op = self.op
        try:
            kinds = [self.kinds[r[op]] for r in batch.rows]
        except KeyError:
            raise self._invalid(batch) from None
        return Batch(kinds, list(map(self.project, batch.rows)))

    def _invalid(self, batch: Batch) -> DeltaflowError:
        code = next(r[self.op] for r in batch.rows if r[self.op] not in self.kinds)
        shown = "null" if code is None else code
        return DeltaflowError(
            f"FROM_CHANGELOG (node {self.node_id}): Received invalid op code '{shown}'. Defined "
            f"op codes are: [{', '.join(self.kinds)}]; map it in op_mapping or filter such rows "
            "out before FROM_CHANGELOG"
        )
