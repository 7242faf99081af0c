"""OVER aggregates: ``agg(...) OVER (PARTITION BY .. ORDER BY time ROWS|RANGE ...)`` in SELECT,
planned as Flink's ``OverAggregate``: the input's columns, then one value per aggregate call
(``w0$o0``, ``w0$o1``, ...), and a Calc over it for the SELECT items.

As in Flink: the order is one time attribute, ascending; the frame ends at CURRENT ROW and
starts ``n PRECEDING`` (ROWS), ``INTERVAL .. PRECEDING`` (RANGE) or UNBOUNDED PRECEDING;
without a frame it is RANGE UNBOUNDED PRECEDING; every OVER of one SELECT must be the same
window; the input must be append-only, and so is the output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from deltaflow.formats.errors import PlanError, SqlError
from deltaflow.processor import plan as P
from deltaflow.processor.exprs.nodes import Expr, InputRef, Literal
from deltaflow.processor.plan import AggCall, Mode, OverWindow
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.aggregate import (
    _agg_args,
    _agg_function,
    _agg_type,
    _is_distinct,
)
from deltaflow.processor.planner.bind_exprs import Scope, ScopeColumn, bind
from deltaflow.processor.planner.relation import Rel, fields_of
from deltaflow.processor.sql.errors import position


@dataclass(eq=False)
class OverAggregate(L.LNode):
    window: OverWindow = None  # type: ignore[assignment]
    aggs: list[AggCall] = field(default_factory=list)
    time_kind: str = "ROWTIME"

    def produces(self, inputs: list[Mode]) -> Mode:
        if inputs[0] != L.INSERT_ONLY:
            from deltaflow.processor.planner.explain import describe  # explain renders this node
            from deltaflow.processor.planner.traits import producer_of_updates

            node = describe(producer_of_updates(self.inputs[0]))
            raise PlanError(
                "StreamPhysicalOverAggregate doesn't support consuming update and delete changes "
                f"which is produced by node {node}. An OVER aggregate needs an append-only input",
                node=node,
            )
        return L.INSERT_ONLY


def has_over(items: list[exp.Expr]) -> bool:
    return any(_over_calls(item) for item in items)


def _over_calls(item: exp.Expr) -> list[exp.Window]:
    return [
        w
        for w in item.find_all(exp.Window)
        if not isinstance(w.this, exp.RowNumber | exp.Identifier)
    ]


def bind_over(
    select: exp.Select, rel: Rel, items: list[exp.Expr], functions
) -> tuple[Rel, list[exp.Expr]]:  # noqa: ANN001
    """The OverAggregate over ``rel`` and the SELECT items rewritten over its output."""
    if select.args.get("group") or select.args.get("having"):
        raise SqlError(
            "OVER aggregates with GROUP BY are not supported; aggregate in a subquery first",
            *position(select.args.get("group") or select.args["having"]),
        )
    named = {w.this.name: w for w in select.args.get("windows") or []}
    scope = rel.scope(functions)
    calls = [w for item in items for w in _over_calls(item)]
    specs = [_spec_of(w, named) for w in calls]
    first = specs[0]
    for w, spec in zip(calls, specs, strict=True):
        if _spec_key(spec) != _spec_key(first):
            raise SqlError(
                "Over Agg: Unsupported use of OVER windows. All aggregates must be computed on "
                "the same window; compute each window in its own subquery", *position(w))  # fmt: skip
    window, time_kind = _window(first, scope, rel, calls[0])
    pre: list[Expr] = [InputRef(c.type, i) for i, c in enumerate(rel.columns)]
    aggs: list[AggCall] = []
    names: dict[str, str] = {}
    for w in calls:
        if w.sql() in names:
            continue
        call = w.this
        args = []
        for arg in _agg_args(call):
            ref = bind(arg, scope)
            if not isinstance(ref, InputRef):
                pre.append(ref)
                ref = InputRef(ref.type, len(pre) - 1)
            args.append(ref.index)
        name = f"w0$o{len(aggs)}"
        aggs.append(AggCall(_agg_function(call), tuple(args), _agg_type(call, pre, args), name,
                            distinct=_is_distinct(call)))  # fmt: skip
        names[w.sql()] = name
    cols = list(rel.columns) + [
        ScopeColumn(None, f"$f{i}", e.type) for i, e in enumerate(pre) if i >= len(rel.columns)
    ]
    base = rel.node
    if len(pre) > len(rel.columns):
        base = L.Calc([rel.node], fields_of(cols), projection=pre)
    out = cols + [ScopeColumn(None, a.name, a.type) for a in aggs]
    node = OverAggregate([base], fields_of(out), window=window, aggs=aggs, time_kind=time_kind)
    return Rel(node, out), [_swap(item, i, names) for i, item in enumerate(items)]


def _swap(item: exp.Expr, index: int, names: dict[str, str]) -> exp.Expr:
    """``item`` with each OVER call replaced by its aggregate column; an unaliased bare call is
    named ``EXPR$<index>`` as Flink names it."""
    bare = isinstance(item.unalias(), exp.Window) and not isinstance(item, exp.Alias)

    def swap(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Window) and n.sql() in names:
            return exp.column(names[n.sql()], quoted=True)
        return n

    out = item.copy().transform(swap)
    return exp.alias_(out, f"EXPR${index}", quoted=True) if bare else out


def _spec_of(w: exp.Window, named: dict[str, exp.Window]) -> exp.Window:
    alias = w.args.get("alias")
    if alias is not None and not w.args.get("order") and not w.args.get("partition_by"):
        if alias.name not in named:
            raise SqlError(f"window {alias.name!r} is not defined; add WINDOW {alias.name} AS (...)",
                           *position(w))  # fmt: skip
        return named[alias.name]
    return w


def _spec_key(w: exp.Window) -> str:
    parts = [w.args.get(k) for k in ("partition_by", "order", "spec")]
    return repr([p.sql() if isinstance(p, exp.Expr) else [x.sql() for x in p or []] for p in parts])


def _window(spec: exp.Window, scope: Scope, rel: Rel, at: exp.Expr) -> tuple[OverWindow, str]:
    partition = tuple(_column(p, scope) for p in spec.args.get("partition_by") or [])
    order = spec.args.get("order")
    keys = order.expressions if order else []
    if len(keys) != 1 or keys[0].args.get("desc"):
        raise SqlError(
            "an OVER window is ordered by one time attribute, ascending: ORDER BY ts",
            *position(order or at))  # fmt: skip
    col = _column(keys[0].this, scope)
    time_kind = rel.columns[col].time_attr
    if time_kind is None:
        raise SqlError(
            "OVER windows' ordering in stream mode must be defined on a time attribute; "
            f"{rel.columns[col].name!r} is not one (declare WATERMARK FOR it, or use a PROCTIME() column)",
            *position(keys[0]))  # fmt: skip
    frame = spec.args.get("spec")
    if frame is None:
        return OverWindow(partition, col, "RANGE", None), time_kind
    end = frame.args.get("end")
    if end not in (None, "CURRENT ROW") or frame.args.get("start_side") != "PRECEDING":
        raise SqlError(
            "OVER windows end at CURRENT ROW and start n PRECEDING, INTERVAL .. PRECEDING or "
            "UNBOUNDED PRECEDING; FOLLOWING is not supported (as in Flink)", *position(frame))  # fmt: skip
    kind, start = frame.args["kind"].upper(), frame.args.get("start")
    return OverWindow(partition, col, kind, _preceding(kind, start, scope, frame)), time_kind


def _preceding(kind: str, start: object, scope: Scope, frame: exp.Expr) -> int | None:
    if start == "UNBOUNDED":
        return None
    value = bind(start, scope) if isinstance(start, exp.Expr) else None
    ok = isinstance(value, Literal) and isinstance(value.value, int) and value.value >= 0
    if kind == "ROWS" and ok and value.type.root != "INTERVAL_DAY_TIME":  # type: ignore[union-attr]
        return value.value  # type: ignore[union-attr, return-value]
    if kind == "RANGE" and ok and value.type.root == "INTERVAL_DAY_TIME":  # type: ignore[union-attr]
        return value.value  # type: ignore[union-attr, return-value]
    raise SqlError(
        "ROWS frames take a row count (ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), RANGE frames "
        "an interval (RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)", *position(frame))  # fmt: skip


def _column(node: exp.Expr, scope: Scope) -> int:
    ref = bind(node, scope)
    if not isinstance(ref, InputRef) or not isinstance(node, exp.Column):
        raise SqlError(
            "PARTITION BY and ORDER BY of an OVER window take columns; compute expressions in a "
            "subquery", *position(node))  # fmt: skip
    return ref.index


def describe_over(node: OverAggregate) -> str:
    names = [f.name for f in node.inputs[0].fields]
    w = node.window
    part = (
        f"partitionBy=[{', '.join(names[c] for c in w.partition_keys)}], "
        if w.partition_keys
        else ""
    )
    if w.preceding is None:
        start = "UNBOUNDED"
    else:
        start = str(w.preceding)
    frame = f" {w.kind} BETWEEN {start} PRECEDING AND CURRENT ROW"
    aggs = ", ".join(
        f"{a.function}({'DISTINCT ' if a.distinct else ''}{', '.join(names[i] for i in a.args) or '*'}) AS {a.name}"
        for a in node.aggs
    )
    return (
        f"OverAggregate({part}orderBy=[{names[w.order_key]} ASC], window=[{frame}], "
        f"select=[{', '.join(names)}, {aggs}])"
    )


def build_over(node: OverAggregate, base: dict[str, Any]) -> P.Node:
    return P.OverAggregate(
        **base, window=node.window, aggs=tuple(node.aggs), time_kind=node.time_kind
    )
