"""EXPLAIN text in Flink's shape: ``Name(attr=[...], changelogMode=[I,UB,UA,D])`` lines joined
by ``+-`` / ``:-``. Rendered from the final logical tree (after rules and traits), with what
the physical rules recorded on its physical nodes (``physical_rules``): a scan's pushed
``filter=[..]`` and ``project=[..], metadata=[..]`` inside its ``table=[[..]]`` as Flink
prints them (``fields`` then lists the columns the scan reads), and ``fusedCalc=[input]`` /
``fusedCalc=[output]`` on an operator that runs the Calc below / above it inside."""

from __future__ import annotations

from collections.abc import Callable

from deltaflow.processor import plan as P
from deltaflow.processor.exprs.nested import field_name
from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, Literal, UdfCall
from deltaflow.processor.plan import AggCall
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.changelog_ptf import ChangelogFunction, describe_changelog_function
from deltaflow.processor.planner.correlate import Correlate, describe_correlate
from deltaflow.processor.planner.delta_nodes import DeltaAggregate, DeltaJoin, UnrewrittenJoin
from deltaflow.processor.planner.delta_semi_join import DeltaSemiJoin, describe_delta_semi_join
from deltaflow.processor.planner.explain_physical import with_physical
from deltaflow.processor.planner.group_windows import GroupWindowAggregate, describe_group_window
from deltaflow.processor.planner.interval_join import IntervalJoin, describe_interval_join
from deltaflow.processor.planner.over_agg import OverAggregate, describe_over
from deltaflow.processor.planner.semi_join import SemiJoin, describe_semi_join
from deltaflow.processor.planner.temporal_join import TemporalJoin, describe_temporal_join
from deltaflow.processor.planner.window_join import WindowJoin, describe_window_join
from deltaflow.processor.planner.window_rank import WindowRank, describe_window_rank
from deltaflow.processor.planner.window_tvf import WindowTableFunction, describe_window_tvf

_KINDS = ("I", "UB", "UA", "D")
_JOIN = {
    "INNER": "InnerJoin",
    "LEFT": "LeftOuterJoin",
    "RIGHT": "RightOuterJoin",
    "FULL": "FullOuterJoin",
}


def mode_text(mode: frozenset[int]) -> str:
    return ",".join(_KINDS[k] for k in sorted(mode)) or "NONE"


# one line of an EXPLAIN text: tree prefix, node (None: a source's own normalizer), text
Line = tuple[str, "L.LNode | None", str]
Recorded = Callable[[L.LNode], "P.Node | None"]  # the physical node a logical one became


def explain_tree(node: L.LNode, recorded: Recorded | None = None) -> str:
    return finish_lines(explain_lines(node), recorded)


def explain_lines(node: L.LNode) -> list[Line]:
    """The tree's lines as its nodes are now (traits included), physical fields to come."""
    lines: list[Line] = []
    _render(node, "", "", lines)
    return lines


def finish_lines(lines: list[Line], recorded: Recorded | None = None) -> str:
    """The text, with the fields the physical rules recorded on each line's node."""
    out = []
    for first, node, text in lines:
        physical = recorded(node) if recorded is not None and node is not None else None
        if physical is not None:
            text = with_physical(node, physical, text)  # type: ignore[arg-type]
        out.append(first + text)
    return "\n".join(out)


def _render(node: L.LNode, first: str, rest: str, lines: list[Line]) -> None:
    mode = "NONE" if isinstance(node, L.Sink) else mode_text(node.mode)
    text = describe(node)
    text = (
        text[:-1] + f", changelogMode=[{mode}])"
        if text.endswith(")")
        else f"{text}(changelogMode=[{mode}])"
    )
    if isinstance(node, L.Scan) and node.normalize:
        # the source's own step (before-images from state), shown as Flink shows an upsert
        # source's normalizer
        key = ", ".join(node.fields[c].name for c in node.primary_key)
        lines.append(
            (
                first,
                None,
                f"ChangelogNormalize(key=[{key}], beforeImage=[state], changelogMode=[{mode}])",
            )
        )
        first, rest = rest + "+- ", rest + "   "
    lines.append((first, node, text))
    for i, child in enumerate(node.inputs):
        last = i == len(node.inputs) - 1
        _render(child, rest + ("+- " if last else ":- "), rest + ("   " if last else ":  "), lines)


def describe(node: L.LNode) -> str:
    """The node as Flink names it, without its changelog mode (used in error messages too)."""
    return _DESCRIBE[type(node)](node)


def _in(node: L.LNode) -> list[str]:
    return [f.name for f in node.inputs[0].fields] if node.inputs else []


def _out(node: L.LNode) -> str:
    return ", ".join(f.name for f in node.fields)


def _sink(node: L.Sink) -> str:
    extra = ", upsertMaterialize=[true]" if node.upsert_materialize else ""
    if node.on_conflict and node.upsert_materialize:
        extra += f", conflictStrategy=[{node.on_conflict}]"
    return f"Sink(table=[{node.table.qualified}], fields=[{_out(node)}]{extra})"


def _scan(node: L.Scan) -> str:
    return f"TableSourceScan(table=[[default_catalog, default_database, {node.table.name}]], fields=[{_out(node)}])"


def _calc(node: L.Calc) -> str:
    names = _in(node)
    select = ", ".join(
        _named(render(e, names), f.name) for e, f in zip(node.projection, node.fields, strict=True)
    )
    where = f", where=[{render(node.condition, names)}]" if node.condition is not None else ""
    return f"Calc(select=[{select}]{where})"


def _aggregate(node: L.Aggregate) -> str:
    retract = node.inputs[0].mode != L.INSERT_ONLY
    return f"GroupAggregate({_group(node)}select=[{_agg_select(node, retract)}])"


def _window_aggregate(node: L.WindowAggregate) -> str:
    w, names = node.window, _in(node)
    sizes = {
        "TUMBLE": f"size=[{_duration(w.size_ms)}]",
        "HOP": f"size=[{_duration(w.size_ms)}], slide=[{_duration(w.slide_ms or 0)}]",
        "CUMULATE": f"max_size=[{_duration(w.size_ms)}], step=[{_duration(w.step_ms or 0)}]",
        "SESSION": f"gap=[{_duration(w.size_ms)}]",
    }[w.kind]
    if w.partition_keys:
        sizes += f", partition keys=[{', '.join(names[k] for k in w.partition_keys)}]"
    if w.offset_ms:
        sizes += f", offset=[{_duration(w.offset_ms)}]"
    window = f"{w.kind}(time_col=[{names[w.time_column]}], {sizes})"
    if w.start_column is not None:  # over an earlier window aggregate's window bounds
        bounds = f"win_start=[{names[w.start_column]}], win_end=[{names[w.end_column or 0]}]"
        window = f"{w.kind}({bounds}, {sizes})"
    kind = "proctime" if w.proctime else "rowtime"
    times = f"start('w$) AS window_start, end('w$) AS window_end, {kind}('w$) AS window_time"
    retract = node.inputs[0].mode != L.INSERT_ONLY
    return f"WindowAggregate({_group(node)}window=[{window}], select=[{_agg_select(node, retract)}, {times}])"


def _join(node: L.Join) -> str:
    names = [f.name for f in node.fields]  # left then right, repeated names suffixed
    width = len(node.inputs[0].fields)
    equal = [
        f"=({names[a]}, {names[b + width]})"
        for a, b in zip(node.left_keys, node.right_keys, strict=True)
    ]
    if node.condition is not None:
        equal.append(render(node.condition, names))
    cond = equal[0] if len(equal) == 1 else f"AND({', '.join(equal)})" if equal else "true"
    return (
        f"Join(joinType=[{_JOIN[node.join_type]}], where=[{cond}], select=[{_out(node)}], "
        f"leftInputSpec=[{node.input_spec(0)}], rightInputSpec=[{node.input_spec(1)}])"
    )


def _delta_join(node: DeltaJoin) -> str:
    where = _join(node).split("where=[", 1)[1].split("], select=[", 1)[0]
    left, right = (", ".join(names) for names in node.index_names)
    eventual = ", eventual=[true]" if node.eventual else ""
    return (
        f"DeltaJoin(joinType=[{_JOIN[node.join_type]}], where=[{where}], leftIndex=[{left}], "
        f"rightIndex=[{right}], select=[{_out(node)}]{eventual})"
    )


def _delta_aggregate(node: DeltaAggregate) -> str:
    index = ", ".join(node.index_names)
    return f"DeltaAggregate({_group(node)}index=[{index}], select=[{_agg_select(node, True)}])"


def _rank(node: L.Rank) -> str:
    names = _in(node)
    time = "ROWTIME " if node.time_order == "ROWTIME" else ""
    order = ", ".join(
        f"{time}{names[c]} {'ASC' if asc else 'DESC'}" for c, asc, _ in node.order_keys
    )
    if node.sort_limit:
        return (
            f"SortLimit(orderBy=[{order}], offset=[{node.rank_start - 1}], "
            f"fetch=[{node.rank_end - node.rank_start + 1}], strategy=[{node.strategy()}])"
        )
    partition = ", ".join(names[c] for c in node.partition_keys)
    return (
        f"Rank(strategy=[{node.strategy()}], rankType=[ROW_NUMBER], rankRange=[rankStart={node.rank_start}, "
        f"rankEnd={node.rank_end}], partitionBy=[{partition}], orderBy=[{order}], select=[{_out(node)}])"
    )


def _lookup_join(node: L.LookupJoin) -> str:
    names, table_cols = _in(node), [c.name for c in node.table.physical]
    lookup = ", ".join(
        f"{table_cols[b]}={names[a]}"
        for a, b in zip(node.probe_keys, node.lookup_keys, strict=True)
    )
    return (
        f"LookupJoin(table=[{node.table.qualified}], joinType=[{_JOIN[node.join_type]}], "
        f"lookup=[{lookup}], select=[{_out(node)}])"
    )


_DESCRIBE: dict[type, Callable] = {
    L.Sink: _sink,
    L.Scan: _scan,
    L.Calc: _calc,
    L.Aggregate: _aggregate,
    L.WindowAggregate: _window_aggregate,
    L.Join: _join,
    L.Rank: _rank,
    L.LookupJoin: _lookup_join,
    L.Union: lambda n: f"Union(all=[true], union=[{_out(n)}])",
    L.ChangelogNormalize: lambda n: (
        f"ChangelogNormalize(key=[{', '.join(_in(n)[c] for c in n.key)}])"
    ),
    L.DropUpdateBefore: lambda n: "DropUpdateBefore",
    DeltaJoin: _delta_join,
    DeltaAggregate: _delta_aggregate,
    ChangelogFunction: describe_changelog_function,
    Correlate: lambda n: describe_correlate(n, render),
    UnrewrittenJoin: lambda n: f"{_join(n)[:-1]}, deltaJoin=[not rewritten: {n.reason}])",
    IntervalJoin: lambda n: describe_interval_join(n, render, _JOIN),
    OverAggregate: describe_over,
    WindowJoin: lambda n: describe_window_join(n, render, _JOIN, _duration),
    TemporalJoin: lambda n: describe_temporal_join(n, render, _JOIN),
    WindowRank: lambda n: describe_window_rank(n, _duration),
    WindowTableFunction: lambda n: describe_window_tvf(n, _duration),
    GroupWindowAggregate: lambda n: describe_group_window(n, _group(n), _agg_select(n, False)),
    SemiJoin: lambda n: describe_semi_join(n, render),
    DeltaSemiJoin: lambda n: describe_delta_semi_join(n, render),
}


def _group(node: L.Aggregate | L.WindowAggregate) -> str:
    names = _in(node)
    return f"groupBy=[{', '.join(names[i] for i in node.group_keys)}], " if node.group_keys else ""


def _agg_select(node: L.Aggregate | L.WindowAggregate, retract: bool) -> str:
    names = _in(node)
    parts = [names[k] for k in node.group_keys]
    parts += [_agg_call(a, names, retract) for a in node.aggs]
    return ", ".join(parts)


def _agg_call(agg: AggCall, names: list[str], retract: bool) -> str:
    fn = agg.function + (
        "_RETRACT" if retract and agg.function not in ("FIRST_VALUE", "LAST_VALUE") else ""
    )
    args = ", ".join(names[i] for i in agg.args) or "*"
    where = f" FILTER {names[agg.filter_arg]}" if agg.filter_arg is not None else ""
    return f"{fn}({'DISTINCT ' if agg.distinct else ''}{args}){where} AS {agg.name}"


def _duration(ms: int) -> str:
    for unit, size in (("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def _named(text: str, name: str) -> str:
    return text if text == name else f"{text} AS {name}"


def render(expr: Expr | None, names: list[str]) -> str:
    """An expression in Flink's digest style: ``>(amount, 10)``, ``CAST(id AS STRING)``."""
    if expr is None:
        return ""
    if isinstance(expr, InputRef):
        return names[expr.index] if expr.index < len(names) else f"${expr.index}"
    if isinstance(expr, Literal):
        if expr.value is None:
            return "null"
        return repr(expr.value) if isinstance(expr.value, str) else str(expr.value)
    if isinstance(expr, Call) and expr.op == "FIELD":
        return f"{render(expr.operands[0], names)}.{field_name(expr)}"
    if isinstance(expr, Call) and expr.op in ("CAST", "TRY_CAST"):
        return f"{expr.op}({render(expr.operands[0], names)} AS {expr.type.sql()})"
    if isinstance(expr, Call | UdfCall):
        name = expr.op if isinstance(expr, Call) else expr.name
        return f"{name}({', '.join(render(o, names) for o in expr.operands)})"
    return type(expr).__name__
