"""Group keys holding ARRAY / MAP values (``GROUP BY tags``, ``SELECT DISTINCT m``), grouped by
content as Flink groups them.

The runtime holds such values as lists and dicts, which cannot be hashed or encoded as state
keys. ``FrozenKeys`` wraps a GroupAggregate: on the way in, each key column becomes a
canonical tuple (an ARRAY its frozen elements in order, a MAP its frozen entries sorted, a
ROW its frozen fields), on the way out the key columns of the results become lists and dicts
again. Only rows of such aggregates pay the conversion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deltaflow.formats.changelog import Batch
from deltaflow.formats.types import ARRAY, MAP, MULTISET, ROW, DataType
from deltaflow.processor.exprs.nested import holds_collection
from deltaflow.processor.plan import GroupAggregate
from deltaflow.processor.runtime.base import Operator

Convert = Callable[[Any], Any]


def _same(value: Any) -> Any:
    return value


def _freezer(t: DataType) -> Convert:
    if not holds_collection(t):
        return _same
    if t.root in (ARRAY, MULTISET):
        item = _freezer(t.element) if t.element is not None else _same
        return lambda v: None if v is None else tuple(map(item, v))
    if t.root == MAP:
        key = _freezer(t.element) if t.element is not None else _same
        val = _freezer(t.value) if t.value is not None else _same
        return lambda v: (
            None
            if v is None
            else tuple(
                sorted(((key(k), val(x)) for k, x in v.items()), key=repr)
            )
        )
    fields = [_freezer(f) for _, f in t.fields]
    return lambda v: None if v is None else tuple(f(x) for f, x in zip(fields, v, strict=True))


def _thawer(t: DataType) -> Convert:
    if not holds_collection(t):
        return _same
    if t.root in (ARRAY, MULTISET):
        item = _thawer(t.element) if t.element is not None else _same
        return lambda v: None if v is None else list(map(item, v))
    if t.root == MAP:
        key = _thawer(t.element) if t.element is not None else _same
        val = _thawer(t.value) if t.value is not None else _same
        return lambda v: None if v is None else {key(k): val(x) for k, x in v}
    assert t.root == ROW
    fields = [_thawer(f) for _, f in t.fields]
    return lambda v: None if v is None else tuple(f(x) for f, x in zip(fields, v, strict=True))


def _columns(types: list[DataType], columns: tuple[int, ...], make) -> Callable[[tuple], tuple]:  # noqa: ANN001
    """A row with its ``columns`` converted (those holding collections)."""
    todo = [(c, make(types[c])) for c in columns if holds_collection(types[c])]

    def convert(row: tuple) -> tuple:
        out = list(row)
        for c, f in todo:
            out[c] = f(row[c])
        return tuple(out)

    return convert


def collection_keys(node: GroupAggregate) -> bool:
    """Whether the aggregate's group keys hold ARRAY / MAP values."""
    types = node.inputs[0].types
    return any(holds_collection(types[k]) for k in node.group_keys)


class FrozenKeys(Operator):
    def __init__(self, inner: Operator, node: GroupAggregate) -> None:
        self.inner = inner
        n = len(node.group_keys)
        self.freeze = _columns(node.inputs[0].types, node.group_keys, _freezer)
        self.thaw = _columns(node.types, tuple(range(n)), _thawer)

    def _out(self, batch: Batch) -> Batch:
        return Batch(batch.kinds, list(map(self.thaw, batch.rows))) if batch else batch

    def process(self, batch: Batch, port: int = 0) -> Batch:
        if not batch:
            return Batch()
        frozen = Batch(batch.kinds, list(map(self.freeze, batch.rows)))
        return self._out(self.inner.process(frozen, port))

    def on_watermark(self, watermark: int) -> Batch:
        return self._out(self.inner.on_watermark(watermark))

    def flush(self) -> Batch:
        return self._out(self.inner.flush())
