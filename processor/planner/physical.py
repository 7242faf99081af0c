"""The final logical tree to ``deltaflow.processor.plan`` nodes, numbered in post-order.

A keyed sink that needs materializing gets a SinkUpsertMaterializer node under it (Flink
prints it as ``upsertMaterialize=[true]`` on the Sink line, which EXPLAIN follows).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import count
from typing import Any

from deltaflow.processor import plan as P
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.changelog_ptf import ChangelogFunction, build_changelog_function
from deltaflow.processor.planner.correlate import Correlate, build_correlate
from deltaflow.processor.planner.delta_nodes import (
    DeltaAggregate,
    DeltaJoin,
    UnrewrittenJoin,
    build_delta_aggregate,
    build_delta_join,
)
from deltaflow.processor.planner.delta_semi_join import DeltaSemiJoin, build_delta_semi_join
from deltaflow.processor.planner.group_windows import GroupWindowAggregate
from deltaflow.processor.planner.interval_join import IntervalJoin, build_interval_join
from deltaflow.processor.planner.over_agg import OverAggregate, build_over
from deltaflow.processor.planner.semi_join import SemiJoin, build_semi_join
from deltaflow.processor.planner.temporal_join import TemporalJoin, build_temporal_join
from deltaflow.processor.planner.window_join import WindowJoin, build_window_join
from deltaflow.processor.planner.window_rank import WindowRank, build_window_rank
from deltaflow.processor.planner.window_tvf import WindowTableFunction, build_window_tvf


def to_physical(sink: L.Sink, ids: count, memo: dict[int, P.Node]) -> P.Sink:
    """``memo`` maps logical nodes already converted (shared by several sinks) to their node."""
    return _convert(sink, ids, memo)  # type: ignore[return-value]


def _convert(node: L.LNode, ids: count, memo: dict[int, P.Node]) -> P.Node:
    if id(node) not in memo:
        inputs = tuple(_convert(c, ids, memo) for c in node.inputs)
        if isinstance(node, L.Sink) and node.upsert_materialize:
            inputs = (_materializer(node, inputs[0], ids),)
        base = {
            "node_id": next(ids),
            "inputs": inputs,
            "fields": tuple(node.fields),
            "changelog_mode": frozenset(node.mode),
            "upsert_keys": tuple(node.keys),
        }
        memo[id(node)] = _BUILD[type(node)](node, base)
    return memo[id(node)]


def _materializer(sink: L.Sink, child: P.Node, ids: count) -> P.Node:
    return P.SinkUpsertMaterializer(
        node_id=next(ids),
        inputs=(child,),
        fields=child.fields,
        changelog_mode=child.changelog_mode,
        upsert_keys=(sink.primary_key,),
        key=sink.primary_key,
    )


def _sink(node: L.Sink, base: dict[str, Any]) -> P.Node:
    t = node.table
    return P.Sink(
        **base,
        table=t.qualified,
        options=dict(t.options),
        physical=tuple(P.Field(c.name, c.type) for c in t.persisted),  # type: ignore[arg-type]
        primary_key=t.primary_key,
        upsert_materialize=node.upsert_materialize,
    )


def _scan(node: L.Scan, base: dict[str, Any]) -> P.Node:
    t = node.table
    watermark = None
    if t.watermark is not None and node.watermark_expr is not None:
        names = [f.name for f in node.fields]
        at = names.index(t.watermark[0]) if t.watermark[0] in names else -1
        watermark = P.Watermark(at, node.watermark_expr)
    return P.TableSourceScan(
        **base,
        table=t.qualified,
        options=dict(t.options),
        physical=tuple(P.Field(c.name, c.type) for c in t.physical),  # type: ignore[arg-type]
        metadata=tuple((c.name, c.metadata_key, c.type) for c in t.metadata),  # type: ignore[misc]
        primary_key=t.primary_key,
        watermark=watermark,
        normalize=node.normalize,
    )


def _join(node: L.Join, base: dict[str, Any]) -> P.Node:
    return P.Join(
        **base,
        join_type=node.join_type,
        left_keys=node.left_keys,
        right_keys=node.right_keys,
        condition=node.condition,
        left_unique_keys=node.inputs[0].keys,
        right_unique_keys=node.inputs[1].keys,
    )


def _rank(node: L.Rank, base: dict[str, Any]) -> P.Node:
    return P.Rank(
        **base,
        partition_keys=node.partition_keys,
        order_keys=node.order_keys,
        rank_start=node.rank_start,
        rank_end=node.rank_end,
        output_rank_number=node.output_rank_number,
        later_first=node.keeps_last_in_time,
        first_on_watermark=node.first_on_watermark,
    )


def _lookup_join(node: L.LookupJoin, base: dict[str, Any]) -> P.Node:
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


def _window_aggregate(node: L.WindowAggregate, base: dict[str, Any]) -> P.Node:
    return P.WindowAggregate(
        **base, window=node.window, group_keys=node.group_keys, aggs=tuple(node.aggs)
    )


_BUILD: dict[type, Callable[[Any, dict[str, Any]], P.Node]] = {
    L.Sink: _sink,
    L.Scan: _scan,
    L.Join: _join,
    L.Rank: _rank,
    L.LookupJoin: _lookup_join,
    L.Calc: lambda n, b: P.Calc(**b, projection=tuple(n.projection), condition=n.condition),
    L.ChangelogNormalize: lambda n, b: P.ChangelogNormalize(**b, key=n.key),
    L.DropUpdateBefore: lambda n, b: P.DropUpdateBefore(**b),
    L.Aggregate: lambda n, b: P.GroupAggregate(**b, group_keys=n.group_keys, aggs=tuple(n.aggs)),
    L.WindowAggregate: _window_aggregate,
    GroupWindowAggregate: _window_aggregate,
    L.Union: lambda n, b: P.Union(**b),
    DeltaJoin: build_delta_join,
    UnrewrittenJoin: _join,
    DeltaAggregate: build_delta_aggregate,
    Correlate: build_correlate,
    IntervalJoin: build_interval_join,
    OverAggregate: build_over,
    WindowJoin: build_window_join,
    TemporalJoin: build_temporal_join,
    WindowRank: build_window_rank,
    WindowTableFunction: build_window_tvf,
    ChangelogFunction: build_changelog_function,
    SemiJoin: build_semi_join,
    DeltaSemiJoin: build_delta_semi_join,
}
