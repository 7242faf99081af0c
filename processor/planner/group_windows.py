"""Flink's legacy group windows: ``GROUP BY TUMBLE(ts, size)``, ``HOP(ts, slide, size)`` or
``SESSION(ts, gap)`` with ``TUMBLE_START/_END/_ROWTIME(...)`` (HOP_*, SESSION_*) in SELECT;
over a PROCTIME() attribute (TUMBLE and HOP) ``*_PROCTIME`` instead of ``*_ROWTIME``.

The query is bound as the window table function form it stands for (the time column gets
the window's start, end and rowtime, as ``w$start``, ``w$end``, ``w$rowtime``, the group
window call becomes ``w$start, w$end`` in GROUP BY, the auxiliary calls those columns) and
its WindowAggregate is printed as Flink prints the legacy plan, ``GroupWindowAggregate``.
A SESSION group window's sessions are per group (its other GROUP BY columns).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import timestamp
from deltaflow.processor.exprs.nodes import InputRef
from deltaflow.processor.plan import WindowSpec
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.bind_exprs import ScopeColumn, bind
from deltaflow.processor.planner.relation import Rel
from deltaflow.processor.sql.errors import position

_KINDS = ("TUMBLE", "HOP", "SESSION")
_AUX = {"START": "w$start", "END": "w$end", "ROWTIME": "w$rowtime", "PROCTIME": "w$proctime"}
_LEGACY_NAMES = {"TUMBLE": "TumblingGroupWindow", "HOP": "SlidingGroupWindow",
                 "SESSION": "SessionGroupWindow"}  # fmt: skip


@dataclass(eq=False)
class GroupWindowAggregate(L.WindowAggregate):
    """A WindowAggregate written with the legacy GROUP BY syntax (EXPLAIN as Flink's)."""


def group_window_call(select: exp.Select) -> exp.Anonymous | None:
    group = select.args.get("group")
    for g in group.expressions if group else []:
        if isinstance(g, exp.Anonymous) and str(g.this).upper() in _KINDS:
            return g
    return None


def bind_group_window(
    select: exp.Select, rel: Rel, call: exp.Anonymous, functions
) -> tuple[exp.Select, Rel]:  # noqa: ANN001
    """``select`` rewritten over the window columns and ``rel`` with them (a window relation)."""
    kind = str(call.this).upper()
    scope = rel.scope(functions)
    args = [bind(a, scope) for a in call.expressions]
    want = 3 if kind == "HOP" else 2
    if len(args) != want or not isinstance(args[0], InputRef):
        shape = {"TUMBLE": "TUMBLE(ts, size)", "HOP": "HOP(ts, slide, size)",
                 "SESSION": "SESSION(ts, gap)"}[kind]  # fmt: skip
        raise SqlError(f"write the group window as {shape}", *position(call))
    time_col = rel.columns[args[0].index]
    attr = time_col.time_attr
    if attr is None or (attr == "PROCTIME" and kind == "SESSION"):
        what = (
            "a time attribute"
            if attr is None
            else "an event-time attribute (processing-time SESSION windows are not supported)"
        )
        raise SqlError(
            f"the group window time column {time_col.name!r} is not {what}; "
            f"declare WATERMARK FOR {time_col.name} AS ...", *position(call))  # fmt: skip
    ms = [_interval_ms(a, n) for a, n in zip(args[1:], call.expressions[1:], strict=True)]
    group = select.args["group"].expressions
    others = [bind(g, scope) for g in group if g is not call]
    spec = _spec(kind, args[0].index, ms, others, attr == "PROCTIME")
    bound = timestamp(3, nullable=False)
    third = "w$proctime" if spec.proctime else "w$rowtime"
    extra = [ScopeColumn(None, "w$start", bound), ScopeColumn(None, "w$end", bound),
             ScopeColumn(None, third, time_col.type, attr)]  # fmt: skip
    out = select.copy()
    new_group = [g.copy() for g in group if g is not call]
    new_group += [exp.column("w$start", quoted=True), exp.column("w$end", quoted=True)]
    out.set("group", exp.Group(expressions=new_group))
    out.set("expressions", [_item(e, i, kind) for i, e in enumerate(out.expressions)])
    if out.args.get("having") is not None:
        out.set("having", _aux_swap(out.args["having"], kind))
    return out, Rel(rel.node, rel.columns + extra, spec)


def _spec(kind: str, time: int, ms: list[int], others: list, proctime: bool) -> WindowSpec:
    if kind == "HOP":
        return WindowSpec("HOP", time, ms[1], slide_ms=ms[0], proctime=proctime)
    if kind == "SESSION":
        keys = tuple(o.index for o in others if isinstance(o, InputRef))
        return WindowSpec("SESSION", time, ms[0], partition_keys=keys)
    return WindowSpec("TUMBLE", time, ms[0], proctime=proctime)


def _item(item: exp.Expr, index: int, kind: str) -> exp.Expr:
    """A SELECT item over the window columns; a bare auxiliary call keeps Flink's EXPR$<i>."""
    swapped = _aux_swap(item, kind)
    if isinstance(item, exp.Anonymous) and isinstance(swapped, exp.Column):
        return exp.alias_(swapped, f"EXPR${index}", quoted=True)
    return swapped


def _aux_swap(node: exp.Expr, kind: str) -> exp.Expr:
    def swap(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Anonymous):
            name = str(n.this).upper()
            for suffix, column in _AUX.items():
                if name == f"{kind}_{suffix}":
                    return exp.column(column, quoted=True)
        return n

    return node.transform(swap)


def legacy_node(node: L.LNode) -> L.LNode:
    """The WindowAggregate under a bound aggregate's Calc, as a GroupWindowAggregate."""
    target = node.inputs[0] if isinstance(node, L.Calc) else node
    if not isinstance(target, L.WindowAggregate):
        return node
    legacy = GroupWindowAggregate(target.inputs, target.fields, window=target.window,
                                  group_keys=target.group_keys, aggs=target.aggs)  # fmt: skip
    if target is node:
        return legacy
    node.inputs[0] = legacy
    return node


def _interval_ms(expr: object, node: exp.Expr) -> int:
    value = getattr(expr, "value", None)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise SqlError("group window sizes are INTERVAL literals such as INTERVAL '1' MINUTE",
                       *position(node))  # fmt: skip
    return value


def describe_group_window(node: GroupWindowAggregate, group: str, select: str) -> str:
    w = node.window
    names = [f.name for f in node.inputs[0].fields]
    sizes = [w.size_ms] + ([w.slide_ms] if w.kind == "HOP" else [])
    window = f"{_LEGACY_NAMES[w.kind]}('w$, {names[w.time_column]}, {', '.join(map(str, sizes))})"
    kind = "proctime" if w.proctime else "rowtime"
    props = f"start('w$) AS w$start, end('w$) AS w$end, {kind}('w$) AS w${kind}"
    return (
        f"GroupWindowAggregate({group}window=[{window}], properties=[w$start, w$end, w${kind}], "
        f"select=[{select}, {props}])"
    )
