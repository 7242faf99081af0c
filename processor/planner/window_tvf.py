"""A window table function's rows as rows: ``SELECT ... FROM TABLE(TUMBLE(...))`` without a
window aggregate, Top-N or deduplication over it (a plain projection, a filter on the window
columns, a join, or a GROUP BY that is not a window aggregate), planned as Flink's
``WindowTableFunction``: each row gets window_start, window_end and window_time, once per
window holding it, and the output is insert-only.

TUMBLE, HOP and CUMULATE rows go out as they come (their window_start / window_end stay
window attributes, so a later GROUP BY or join on both is a window aggregate or join
again). A SESSION's rows wait until their session has ended (the watermark reached its
end - 1), then go out with its bounds; Flink then plans a GROUP BY over them as a
GroupAggregate, so its window_start / window_end are plain columns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlglot import exp

from deltaflow.formats.errors import PlanError
from deltaflow.processor import plan as P
from deltaflow.processor.exprs.nodes import InputRef
from deltaflow.processor.plan import Mode, WindowSpec
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import bind
from deltaflow.processor.planner.relation import Rel, fields_of


@dataclass(eq=False)
class WindowTableFunction(L.LNode):
    window: WindowSpec = None  # type: ignore[assignment]

    def produces(self, inputs: list[Mode]) -> Mode:
        if inputs[0] != L.INSERT_ONLY:
            from deltaflow.processor.planner.explain import describe  # renders this node
            from deltaflow.processor.planner.traits import producer_of_updates

            node = describe(producer_of_updates(self.inputs[0]))
            raise PlanError(
                "StreamPhysicalWindowTableFunction doesn't support consuming update and delete "
                f"changes which is produced by node {node}",
                node=node,
            )
        return L.INSERT_ONLY


def materialize_window(rel: Rel) -> Rel:
    """``rel`` with its window columns computed by a WindowTableFunction (a window TVF's
    relation has them only virtually, for the window aggregate that usually consumes it)."""
    if rel.window is None:
        return rel
    cols = list(rel.columns)
    if rel.window.kind == "SESSION":
        cols = cols[:-3] + [replace(c, window_prop=None) for c in cols[-3:]]
    return Rel(WindowTableFunction([rel.node], fields_of(cols), window=rel.window), cols)


def session_rows_grouped(rel: Rel, grouped: list[int]) -> bool:
    """A GROUP BY (column positions) of a SESSION TVF without PARTITION BY that is not by its
    window_start and window_end alone: Flink groups the session rows with a GroupAggregate."""
    w = rel.window
    if w is None or w.kind != "SESSION" or w.partition_keys:
        return False
    n = len(rel.columns)
    return set(grouped) - {n - 1} != {n - 3, n - 2}


def session_rows_filtered(select: exp.Select, rel: Rel, aggregating: bool, functions) -> bool:  # noqa: ANN001
    """A WHERE over a SESSION TVF whose rows come out as rows (no window aggregate over it):
    it filters the session rows, as Flink plans it, rather than the rows sessions are made of
    (which a session window aggregate's WHERE does filter, Flink pushing it below)."""
    w = rel.window
    if w is None or w.kind != "SESSION":
        return False
    if not aggregating:
        return True
    group = select.args.get("group")
    scope = rel.scope(functions)
    grouped = [bind(g, scope) for g in group.expressions] if group else []
    return session_rows_grouped(rel, [g.index for g in grouped if isinstance(g, InputRef)])


def window_text(w: WindowSpec, names: list[str], duration) -> str:  # noqa: ANN001
    sizes = {
        "TUMBLE": f"size=[{duration(w.size_ms)}]",
        "HOP": f"size=[{duration(w.size_ms)}], slide=[{duration(w.slide_ms or 0)}]",
        "CUMULATE": f"max_size=[{duration(w.size_ms)}], step=[{duration(w.step_ms or 0)}]",
        "SESSION": f"gap=[{duration(w.size_ms)}]",
    }[w.kind]
    if w.partition_keys:
        sizes += f", partition keys=[{', '.join(names[k] for k in w.partition_keys)}]"
    if w.offset_ms:
        sizes += f", offset=[{duration(w.offset_ms)}]"
    return f"{w.kind}(time_col=[{names[w.time_column]}], {sizes})"


def describe_window_tvf(node: WindowTableFunction, duration) -> str:  # noqa: ANN001
    names = [f.name for f in node.inputs[0].fields]
    return f"WindowTableFunction(window=[{window_text(node.window, names, duration)}])"


def build_window_tvf(node: WindowTableFunction, base: dict[str, Any]) -> P.Node:
    return P.WindowTableFunction(**base, window=node.window)
