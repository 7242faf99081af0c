"""Window table functions in FROM: ``TABLE(TUMBLE|HOP|CUMULATE(TABLE t, DESCRIPTOR(ts), ...))``.

Positional arguments follow Flink: TUMBLE(data, timecol, size [, offset]), HOP(data, timecol,
slide, size [, offset]), CUMULATE(data, timecol, step, size [, offset]); named arguments
(``SIZE => INTERVAL ...``) may come in any order. The relation gets window_start,
window_end and window_time; a GROUP BY over window_start and window_end makes it a
WindowAggregate.
"""

from __future__ import annotations

from sqlglot import exp

from deltaflow.formats.errors import SqlError
from deltaflow.formats.types import timestamp
from deltaflow.processor.exprs.nodes import InputRef
from deltaflow.processor.plan import WindowSpec
from deltaflow.processor.planner.bind_exprs import ScopeColumn, bind
from deltaflow.processor.sql.dialect import PARTITIONED
from deltaflow.processor.sql.errors import position

_POSITIONAL = {
    "TUMBLE": ("DATA", "TIMECOL", "SIZE", "OFFSET"),
    "HOP": ("DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"),
    "CUMULATE": ("DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"),
    "SESSION": ("DATA", "TIMECOL", "GAP"),
}


def window_arguments(call: exp.Anonymous, node: exp.Expr) -> tuple[str, dict[str, exp.Expr]]:
    """The function name and its arguments by Flink's parameter names."""
    inner = call.expressions[0] if str(call.this).upper() == "TABLE" and call.expressions else call
    kind = str(inner.this).upper()
    names = _POSITIONAL.get(kind)
    if names is None or not isinstance(inner, exp.Anonymous):
        raise SqlError(
            f"unsupported table function {kind}; use TUMBLE, HOP, CUMULATE or SESSION",
            *position(node),
        )
    args: dict[str, exp.Expr] = {}
    for i, arg in enumerate(inner.expressions):
        if isinstance(arg, exp.Kwarg):
            args[arg.this.name.upper()] = arg.expression
        elif i < len(names):
            args[names[i]] = arg
    missing = [n for n in (names if kind == "SESSION" else names[:-1]) if n not in args]
    if missing:
        raise SqlError(
            f"{kind} needs {', '.join(missing)}: write {kind}(TABLE t, DESCRIPTOR(ts), {', '.join(names[2:-1])})",
            *position(node),
        )
    return kind, args


def window_relation(binder, call: exp.Anonymous, node: exp.Expr):  # noqa: ANN001, ANN201 - FromBinder -> Rel
    from deltaflow.processor.planner.relation import Rel

    kind, args = window_arguments(call, node)
    data, keys = args["DATA"], []
    if isinstance(data, exp.Anonymous) and data.this == PARTITIONED:
        data, keys = data.expressions[0], data.expressions[1:]
    base = binder.relation(data)
    scope = base.scope(binder.functions)
    descriptor = args["TIMECOL"]
    if not isinstance(descriptor, exp.Anonymous) or not descriptor.expressions:
        raise SqlError("name the time column with DESCRIPTOR(column)", *position(descriptor))
    time_ref = scope.resolve(descriptor.expressions[0])
    time_col = base.columns[time_ref.index]
    if time_col.time_attr is None:
        raise SqlError(
            f"the window time column {time_col.name!r} is not a time attribute; declare "
            f"WATERMARK FOR {time_col.name} AS ... or use a PROCTIME() column", *position(descriptor))  # fmt: skip
    ms = {
        name: _interval_ms(bind(a, scope), a)
        for name, a in args.items()
        if name not in ("DATA", "TIMECOL")
    }
    partition = tuple(scope.resolve(k).index for k in keys)
    size = ms["GAP"] if kind == "SESSION" else ms["SIZE"]
    proctime = time_col.time_attr == "PROCTIME"
    if proctime and kind == "SESSION":
        raise SqlError("processing-time SESSION windows are not supported; use an event-time "
                       "attribute (WATERMARK FOR ...)", *position(descriptor))  # fmt: skip
    spec = WindowSpec(
        kind,
        time_ref.index,
        size,
        ms.get("SLIDE"),
        ms.get("STEP"),
        ms.get("OFFSET", 0),
        partition,
        proctime=proctime,
    )
    start_end = timestamp(3, nullable=False)
    extra = [
        ScopeColumn(None, "window_start", start_end, window_prop=("start", spec)),
        ScopeColumn(None, "window_end", start_end, window_prop=("end", spec)),
        ScopeColumn(None, "window_time", time_col.type, time_col.time_attr),
    ]
    return Rel(base.node, base.columns + extra, spec)


def _interval_ms(expr: object, node: exp.Expr) -> int:
    value = getattr(expr, "value", None)
    if not isinstance(value, int) or isinstance(value, bool):
        raise SqlError(
            "window sizes must be INTERVAL literals such as INTERVAL '10' MINUTES", *position(node)
        )
    return value


def session_keys(spec: WindowSpec, keys: list) -> tuple[int, ...]:
    """A SESSION window's PARTITION BY columns as positions among the GROUP BY keys (bound
    over the window relation), which must hold them: sessions are per group. (Without
    PARTITION BY, other GROUP BY columns group the session rows: window_tvf.)"""
    out = []
    for col in spec.partition_keys:
        at = [i for i, k in enumerate(keys) if isinstance(k, InputRef) and k.index == col]
        if not at:
            raise SqlError(
                "a SESSION window aggregate groups by its PARTITION BY columns; add them to GROUP BY",
                0, 0)  # fmt: skip
        out.append(at[0])
    return tuple(out)
