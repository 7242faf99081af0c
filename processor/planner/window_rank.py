"""Window Top-N: ``ROW_NUMBER() OVER (PARTITION BY window_start, window_end, ... ORDER BY ..)``
over a window aggregate's output, planned as Flink's ``WindowRank``: the rows of each window
are ranked once, when the watermark passes the window's end, so the output is append-only
(``+I`` only), where a Rank would update its top rows as they come.

Window deduplication is its rank-1 case over a window TVF ordered by the event-time
attribute alone (``ORDER BY ts ASC|DESC ... rn <= 1``): Flink's ``WindowDeduplicate``,
``keep=[FirstRow]`` keeping the earliest row (of equal times, the first to arrive) and
``keep=[LastRow]`` the latest (of equal times, the last to arrive).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltaflow.formats.errors import PlanError, SqlError
from deltaflow.processor import plan as P
from deltaflow.processor.exprs.nodes import Expr, InputRef
from deltaflow.processor.plan import Key, Mode, WindowSpec
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.relation import Rel
from deltaflow.processor.planner.window_props import grouped_bounds


@dataclass(eq=False)
class WindowRank(L.LNode):
    partition_keys: Key = ()  # the window bounds too
    order_keys: tuple[tuple[int, bool, bool], ...] = ()
    rank_start: int = 1
    rank_end: int = 1
    output_rank_number: bool = False
    window: WindowSpec = None  # type: ignore[assignment]
    bounds: tuple[int, int] = (0, 0)  # window_start, window_end columns
    tvf: bool = False  # directly over a window TVF: the operator assigns the windows
    keep: str = ""  # a window deduplication: FirstRow or LastRow

    def produces(self, inputs: list[Mode]) -> Mode:
        if inputs[0] != L.INSERT_ONLY:
            from deltaflow.processor.planner.explain import describe  # renders this node
            from deltaflow.processor.planner.traits import producer_of_updates

            node = describe(producer_of_updates(self.inputs[0]))
            raise PlanError(
                "StreamPhysicalWindowRank doesn't support consuming update and delete changes "
                f"which is produced by node {node}",
                node=node,
            )
        return L.INSERT_ONLY


def tvf_partitioned(rel: Rel, partition: tuple[int, ...]) -> bool:
    """A ROW_NUMBER over a window TVF partitioned by its window_start and window_end."""
    n = len(rel.columns)
    return rel.window is not None and {n - 3, n - 2} <= set(partition)


def window_rank(rel: Rel, rank: L.Rank) -> WindowRank | None:
    """``rank`` as a WindowRank when its PARTITION BY holds both bounds of one window."""
    if tvf_partitioned(rel, rank.partition_keys):
        assert rel.window is not None  # tvf_partitioned: over a window TVF
        if rel.window.proctime:
            raise SqlError("window Top-N and window deduplication over processing-time windows "
                           "are not supported; use an event-time attribute", 0, 0)  # fmt: skip
        n = len(rel.columns)
        return WindowRank(rank.inputs, rank.fields, partition_keys=rank.partition_keys,
                          order_keys=rank.order_keys, rank_start=rank.rank_start,
                          rank_end=rank.rank_end, output_rank_number=rank.output_rank_number,
                          window=rel.window, bounds=(n - 3, n - 2), tvf=True,
                          keep=_deduplication(rel, rank))  # fmt: skip
    refs: list[Expr] = [InputRef(rel.columns[c].type, c) for c in rank.partition_keys]
    bounds = grouped_bounds(rel, refs)
    if bounds is None:
        return None
    return WindowRank(rank.inputs, rank.fields, partition_keys=rank.partition_keys,
                      order_keys=rank.order_keys, rank_start=rank.rank_start, rank_end=rank.rank_end,
                      output_rank_number=rank.output_rank_number, window=bounds[2],
                      bounds=(bounds[0], bounds[1]))  # fmt: skip


def _deduplication(rel: Rel, rank: L.Rank) -> str:
    """FirstRow / LastRow when ``rank`` keeps one row per window ordered by event time only."""
    if rank.rank_start != 1 or rank.rank_end != 1 or len(rank.order_keys) != 1:
        return ""
    column, asc, _ = rank.order_keys[0]
    if rel.columns[column].time_attr != "ROWTIME":
        return ""
    return "FirstRow" if asc else "LastRow"


def _describe_deduplicate(node: WindowRank, sizes: str, names: list[str]) -> str:
    w = node.window
    start, end = (names[i] for i in node.bounds)
    partition = ", ".join(names[c] for c in node.partition_keys if c not in node.bounds)
    return (
        f"WindowDeduplicate(window=[{w.kind}(win_start=[{start}], win_end=[{end}], {sizes})], "
        f"keep=[{node.keep}], partitionKeys=[{partition}], orderKey=[{names[node.order_keys[0][0]]}], "
        "order=[ROWTIME])"
    )


def describe_window_rank(node: WindowRank, duration) -> str:  # noqa: ANN001
    names = [f.name for f in node.fields]  # the input's columns (and the window's) first
    w = node.window
    sizes = f"size=[{duration(w.size_ms)}]"
    if w.kind == "HOP":
        sizes += f", slide=[{duration(w.slide_ms or 0)}]"
    elif w.kind == "CUMULATE":
        sizes = f"max_size=[{duration(w.size_ms)}], step=[{duration(w.step_ms or 0)}]"
    elif w.kind == "SESSION":
        sizes = f"gap=[{duration(w.size_ms)}]"
    if node.keep:
        return _describe_deduplicate(node, sizes, names)
    start, end = (names[i] for i in node.bounds)
    window = f"{w.kind}(win_start=[{start}], win_end=[{end}], {sizes})"
    if node.tvf:
        window = f"{w.kind}(time_col=[{names[w.time_column]}], {sizes})"
    partition = ", ".join(names[c] for c in node.partition_keys if c not in node.bounds)
    order = ", ".join(f"{names[c]} {'ASC' if asc else 'DESC'}" for c, asc, _ in node.order_keys)
    select = ", ".join(f.name for f in node.fields)
    return (
        f"WindowRank(window=[{window}], rankType=[ROW_NUMBER], rankRange=[rankStart={node.rank_start}, "
        f"rankEnd={node.rank_end}], partitionBy=[{partition}], orderBy=[{order}], select=[{select}])"
    )


def build_window_rank(node: WindowRank, base: dict[str, Any]) -> P.Node:
    return P.WindowRank(
        **base,
        partition_keys=node.partition_keys,
        order_keys=node.order_keys,
        rank_start=node.rank_start,
        rank_end=node.rank_end,
        output_rank_number=node.output_rank_number,
        bounds=node.bounds,
        assign=node.window if node.tvf else None,
        keep_last=node.keep == "LastRow",
    )
