"""Refuse, at plan time, keys the runtime cannot hash yet: an ARRAY, MAP or MULTISET value
(also inside a ROW) as a window aggregate's group key, a join key or a Top-N partition key
(a GroupAggregate groups them by content: runtime/collection_keys.py). Elements and fields of such values (``arr[1]``, ``r.f``) are fine keys."""

from __future__ import annotations

from deltaflow.formats.errors import SqlError
from deltaflow.processor.exprs.nested import holds_collection
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.semi_join import SemiJoin


def check_collection_keys(sink: L.Sink, settings: dict[str, str]) -> L.Sink:
    seen: set[int] = set()
    todo: list[L.LNode] = [sink]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for side, keys, what in _keys(node):
            for k in keys:
                f = node.inputs[side].fields[k]
                if holds_collection(f.type):
                    raise SqlError(
                        f"deltaflow cannot use column '{f.name}' ({f.type.sql()}) as a {what} "
                        "yet; use its elements or fields (arr[1], m['k'], r.f) or "
                        f"CAST({f.name} AS STRING)"
                    )
        todo += node.inputs
    return sink


def _keys(node: L.LNode) -> list[tuple[int, tuple[int, ...], str]]:
    if (
        isinstance(node, L.WindowAggregate)
        or isinstance(node, L.Aggregate)
        and type(node) is not L.Aggregate
    ):
        return [(0, node.group_keys, "group key")]  # a GroupAggregate groups them by content
    if isinstance(node, L.Join | SemiJoin):
        return [(0, node.left_keys, "join key"), (1, node.right_keys, "join key")]
    if isinstance(node, L.Rank):
        return [(0, node.partition_keys, "partition key")]
    return []
