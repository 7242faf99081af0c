"""The final logical tree to ``deltaflow.processor.plan`` nodes, numbered in post-order."""

from __future__ import annotations

from itertools import count

from deltaflow.processor import plan as P
from deltaflow.processor.exprs.nodes import Expr, InputRef
from deltaflow.processor.planner import logical as L


def to_physical(sink: L.Sink, ids: count, memo: dict[int, P.Node]) -> P.Sink:
    """``memo`` maps logical nodes already converted (shared by several sinks) to their node."""
    return _convert(sink, ids, memo)  # type: ignore[return-value]


def _convert(node: L.LNode, ids: count, memo: dict[int, P.Node]) -> P.Node:
    if id(node) not in memo:
        memo[id(node)] = _build(node, tuple(_convert(c, ids, memo) for c in node.inputs), ids)
    return memo[id(node)]


def _build(node: L.LNode, inputs: tuple[P.Node, ...], ids: count) -> P.Node:  # noqa: C901 - one constructor per node class
    if isinstance(node, L.Sink) and node.upsert_materialize:
        mat = P.SinkUpsertMaterializer(
            node_id=next(ids),
            inputs=inputs,
            fields=inputs[0].fields,
            changelog_mode=inputs[0].changelog_mode,
            key=node.primary_key,
        )
        inputs = (mat,)
    base = {
        "node_id": next(ids),
        "inputs": inputs,
        "fields": tuple(node.fields),
        "changelog_mode": frozenset(node.mode),
        "upsert_keys": tuple(node.keys),
    }
    if isinstance(node, L.Sink):
        t = node.table
        physical = tuple(P.Field(c.name, c.type) for c in t.persisted)  # type: ignore[arg-type]
        return P.Sink(
            **base,
            table=t.qualified,
            options=dict(t.options),
            physical=physical,
            primary_key=t.primary_key,
            upsert_materialize=node.upsert_materialize,
        )
    if isinstance(node, L.Scan):
        t = node.table
        wm = None
        if t.watermark is not None:
            names = [f.name for f in node.fields]
            wm = P.Watermark(
                names.index(t.watermark[0]),
                InputRef(
                    node.fields[names.index(t.watermark[0])].type, names.index(t.watermark[0])
                ),
            )
        return P.TableSourceScan(
            **base,
            table=t.qualified,
            options=dict(t.options),
            physical=tuple(P.Field(c.name, c.type) for c in t.physical),  # type: ignore[arg-type]
            metadata=tuple((c.name, c.metadata_key, c.type) for c in t.metadata),  # type: ignore[misc]
            primary_key=t.primary_key,
            watermark=wm,
        )
    if isinstance(node, L.Calc):
        return P.Calc(**base, projection=tuple(node.projection), condition=node.condition)
    if isinstance(node, L.ChangelogNormalize):
        return P.ChangelogNormalize(**base, key=node.key)
    if isinstance(node, L.DropUpdateBefore):
        return P.DropUpdateBefore(**base)
    if isinstance(node, L.Aggregate):
        return P.GroupAggregate(**base, group_keys=node.group_keys, aggs=tuple(node.aggs))
    if isinstance(node, L.WindowAggregate):
        return P.WindowAggregate(
            **base, window=node.window, group_keys=node.group_keys, aggs=tuple(node.aggs)
        )
    if isinstance(node, L.Join):
        return P.Join(
            **base,
            join_type=node.join_type,
            left_keys=node.left_keys,
            right_keys=node.right_keys,
            condition=node.condition,
            left_unique_keys=node.inputs[0].keys,
            right_unique_keys=node.inputs[1].keys,
        )
    if isinstance(node, L.Rank):
        return P.Rank(
            **base,
            partition_keys=node.partition_keys,
            order_keys=node.order_keys,
            rank_start=node.rank_start,
            rank_end=node.rank_end,
            output_rank_number=node.output_rank_number,
        )
    if isinstance(node, L.Deduplicate):
        return P.Deduplicate(**base, keys=node.keys_, keep_last_row=node.keep_last_row)
    if isinstance(node, L.Union):
        return P.Union(**base)
    if isinstance(node, L.LookupJoin):
        t = node.table
        return P.LookupJoin(
            **base,
            join_type=node.join_type,
            table=t.qualified,
            options=dict(t.options),
            table_fields=tuple(P.Field(c.name, c.type) for c in t.physical),  # type: ignore[arg-type]
            probe_keys=node.probe_keys,
            lookup_keys=node.lookup_keys,
            condition=node.condition,
        )
    raise AssertionError(type(node).__name__)


__all__ = ["Expr", "to_physical"]
