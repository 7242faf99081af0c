"""Window Top-N: ``ROW_NUMBER() OVER (PARTITION BY window_start, window_end, ... ORDER BY ..)``
over a window aggregate's output, planned as Flink's ``WindowRank``: the rows of each window
are ranked once, when the watermark passes the window's end, so the output is append-only
(``+I`` only), where a Rank would update its top rows as they come.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltaflow.formats.errors import PlanError
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
        n = len(rel.columns)
        return WindowRank(rank.inputs, rank.fields, partition_keys=rank.partition_keys,
                          order_keys=rank.order_keys, rank_start=rank.rank_start,
                          rank_end=rank.rank_end, output_rank_number=rank.output_rank_number,
                          window=rel.window, bounds=(n - 3, n - 2), tvf=True)  # fmt: skip
    refs: list[Expr] = [InputRef(rel.columns[c].type, c) for c in rank.partition_keys]
    bounds = grouped_bounds(rel, refs)
    if bounds is None:
        return None
    return WindowRank(rank.inputs, rank.fields, partition_keys=rank.partition_keys,
                      order_keys=rank.order_keys, rank_start=rank.rank_start, rank_end=rank.rank_end,
                      output_rank_number=rank.output_rank_number, window=bounds[2],
                      bounds=(bounds[0], bounds[1]))  # fmt: skip


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
    )
