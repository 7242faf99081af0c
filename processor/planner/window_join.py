"""Window joins: a join of two inputs with window attributes (the window_start / window_end of
window aggregates over the same window) whose condition equates both bounds, planned as
Flink's ``WindowJoin``: the rows of each window are joined once the watermark passes the
window's end, then forgotten, so the output is append-only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deltaflow.formats.errors import PlanError
from deltaflow.processor import plan as P
from deltaflow.processor.exprs.nodes import Expr
from deltaflow.processor.plan import Key, Mode, WindowSpec
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import ScopeColumn


@dataclass(eq=False)
class WindowJoin(L.LNode):
    join_type: str = "INNER"
    left_keys: Key = ()
    right_keys: Key = ()
    condition: Expr | None = None
    window: WindowSpec = None  # type: ignore[assignment]
    left_bounds: tuple[int, int] = (0, 0)  # window_start, window_end columns of the left input
    right_bounds: tuple[int, int] = (0, 0)
    names: list[str] = field(default_factory=list)  # SEMI / ANTI: left + right names (EXPLAIN)

    def produces(self, inputs: list[Mode]) -> Mode:
        for child, mode in zip(self.inputs, inputs, strict=True):
            if mode != L.INSERT_ONLY:
                from deltaflow.processor.planner.explain import describe  # renders this node
                from deltaflow.processor.planner.traits import producer_of_updates

                node = describe(producer_of_updates(child))
                raise PlanError(
                    "StreamPhysicalWindowJoin doesn't support consuming update and delete changes "
                    f"which is produced by node {node}",
                    node=node,
                )
        return L.INSERT_ONLY


def window_join(
    inputs: list[L.LNode], cols: tuple[list[ScopeColumn], list[ScopeColumn]], join: dict
) -> WindowJoin | None:
    """A WindowJoin when the equi-keys pair both window bounds of the same window; ``join``
    holds join_type (INNER, LEFT, RIGHT, FULL; SEMI, ANTI: the left rows), left_keys,
    right_keys, condition, fields and (for SEMI / ANTI) names, the left + right column
    names for EXPLAIN."""
    found = _window_bounds(cols, join["left_keys"], join["right_keys"])
    if found is None:
        return None
    spec, starts, ends = found
    pairs = [
        p
        for p in zip(join["left_keys"], join["right_keys"], strict=True)
        if p not in (starts, ends)
    ]
    return WindowJoin(
        list(inputs),
        join["fields"],
        join_type=join["join_type"],
        left_keys=tuple(a for a, _ in pairs),
        right_keys=tuple(b for _, b in pairs),
        condition=join["condition"],
        window=spec,
        left_bounds=(starts[0], ends[0]),
        right_bounds=(starts[1], ends[1]),
        names=join.get("names", []),
    )


def _window_bounds(
    cols: tuple[list[ScopeColumn], list[ScopeColumn]], lk: Key, rk: Key
) -> tuple[WindowSpec, tuple[int, int], tuple[int, int]] | None:
    """The window and the (left, right) key pairs of its start and end, when the keys pair
    both bounds of the same window."""
    left, right = cols
    found: dict[str, tuple[int, int]] = {}
    spec = None
    for a, b in zip(lk, rk, strict=True):
        pa, pb = left[a].window_prop, right[b].window_prop
        if pa is None or pb is None or pa[0] != pb[0] or not _same(pa[1], pb[1]):
            continue
        if spec is not None and not _same(pa[1], spec):
            return None
        spec = pa[1]
        found.setdefault(pa[0], (a, b))
    if "start" not in found or "end" not in found:
        return None
    assert isinstance(spec, WindowSpec)
    return spec, found["start"], found["end"]


def _same(a: object, b: object) -> bool:
    """The same windows: kind and sizes (the time columns may be different tables')."""
    assert isinstance(a, WindowSpec) and isinstance(b, WindowSpec)
    sizes = ("kind", "size_ms", "slide_ms", "step_ms", "offset_ms")
    return all(getattr(a, n) == getattr(b, n) for n in sizes)


def describe_window_join(node: WindowJoin, render, join_names: dict[str, str], duration) -> str:  # noqa: ANN001
    names = node.names or [f.name for f in node.fields]
    width = len(node.inputs[0].fields)
    kind = {"SEMI": "LeftSemiJoin", "ANTI": "LeftAntiJoin"}.get(node.join_type)
    w = node.window
    sizes = f"size=[{duration(w.size_ms)}]"
    if w.kind == "HOP":
        sizes += f", slide=[{duration(w.slide_ms or 0)}]"
    elif w.kind == "CUMULATE":
        sizes = f"max_size=[{duration(w.size_ms)}], step=[{duration(w.step_ms or 0)}]"
    elif w.kind == "SESSION":
        sizes = f"gap=[{duration(w.size_ms)}]"

    def side(bounds: tuple[int, int], offset: int) -> str:
        s, e = (names[i + offset] for i in bounds)
        return f"{w.kind}(win_start=[{s}], win_end=[{e}], {sizes})"

    parts = [
        f"=({names[a]}, {names[b + width]})"
        for a, b in zip(node.left_keys, node.right_keys, strict=True)
    ]
    if node.condition is not None:
        parts.append(render(node.condition, names))
    where = parts[0] if len(parts) == 1 else f"AND({', '.join(parts)})" if parts else "true"
    select = ", ".join(f.name for f in node.fields)
    return (
        f"WindowJoin(leftWindow=[{side(node.left_bounds, 0)}], rightWindow=[{side(node.right_bounds, width)}], "
        f"joinType=[{kind or join_names[node.join_type]}], where=[{where}], select=[{select}])"
    )


def build_window_join(node: WindowJoin, base: dict[str, Any]) -> P.Node:
    return P.WindowJoin(
        **base,
        join_type=node.join_type,
        left_keys=node.left_keys,
        right_keys=node.right_keys,
        condition=node.condition,
        left_bounds=node.left_bounds,
        right_bounds=node.right_bounds,
    )
