"""Window properties that outlive a window aggregate: its window_start and window_end (under
any name, through subqueries and views) keep the window they bound, so a GROUP BY over both
is a window aggregate again, as Flink plans it:
``WindowAggregate(window=[HOP(win_start=[starttime], win_end=[endtime], size=[..], slide=[..])])``.
Each input row belongs to the one window its two columns name; the aggregate fires when the
watermark passes the window's end, as the first one did.
"""

from __future__ import annotations

from dataclasses import replace

from deltaflow.formats.types import timestamp
from deltaflow.processor.exprs.nodes import Expr, InputRef
from deltaflow.processor.plan import AggCall, Field, WindowSpec
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import ScopeColumn
from deltaflow.processor.planner.relation import Rel, fields_of


def grouped_bounds(rel: Rel, refs: list[Expr]) -> tuple[int, int, WindowSpec] | None:
    """(start column, end column, window) when ``refs`` (the GROUP BY) hold both bounds of
    one window among ``rel``'s columns."""
    found: dict[str, tuple[int, object]] = {}
    for ref in refs:
        if isinstance(ref, InputRef):
            prop = rel.columns[ref.index].window_prop
            if prop is not None:
                found.setdefault(prop[0], (ref.index, prop[1]))
    if "start" not in found or "end" not in found or found["start"][1] != found["end"][1]:
        return None
    spec = found["start"][1]
    assert isinstance(spec, WindowSpec)
    return found["start"][0], found["end"][0], spec


def window_over_bounds(
    rel: Rel,
    bounds: tuple[int, int, WindowSpec],
    pre: list[Expr],
    pre_cols: list[ScopeColumn],
    out_cols: list[ScopeColumn],
    nkeys: int,
    aggs: list[AggCall],
) -> L.LNode:
    """The WindowAggregate whose windows are the input's ``bounds`` columns."""
    start, end, spec = bounds
    cols = [rel.columns[start], rel.columns[end]]
    projection = [*pre, *(InputRef(c.type, i) for c, i in zip(cols, (start, end), strict=True))]
    fields = [*fields_of(pre_cols), *(Field(c.name, c.type) for c in cols)]
    calc = L.Calc([rel.node], fields, projection=projection)
    at = len(pre)
    window = replace(spec, time_column=at, start_column=at, end_column=at + 1, partition_keys=())
    out_cols += [*cols, ScopeColumn(None, "window_time", timestamp(3, nullable=False), "ROWTIME")]
    return L.WindowAggregate(
        [calc], fields_of(out_cols), window=window, group_keys=tuple(range(nkeys)), aggs=aggs
    )
