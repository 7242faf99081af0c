"""EXPLAIN text in Flink's shape: ``Name(attr=[...], changelogMode=[I,UB,UA,D])`` lines joined
by ``+-`` / ``:-``. Rendered from the final logical tree (after rules and traits)."""

from __future__ import annotations

from deltaflow.processor.exprs.nodes import Call, Expr, InputRef, Literal, UdfCall
from deltaflow.processor.plan import AggCall
from deltaflow.processor.planner import logical as L

_KINDS = ("I", "UB", "UA", "D")
_JOIN = {
    "INNER": "InnerJoin",
    "LEFT": "LeftOuterJoin",
    "RIGHT": "RightOuterJoin",
    "FULL": "FullOuterJoin",
}


def mode_text(mode: frozenset[int]) -> str:
    return ",".join(_KINDS[k] for k in sorted(mode)) or "NONE"


def explain_tree(node: L.LNode) -> str:
    lines: list[str] = []
    _render(node, "", "", lines)
    return "\n".join(lines)


def _render(node: L.LNode, first: str, rest: str, lines: list[str]) -> None:
    mode = "NONE" if isinstance(node, L.Sink) else mode_text(node.mode)
    text = describe(node)
    text = (
        text[:-1] + f", changelogMode=[{mode}])"
        if text.endswith(")")
        else text + f"(changelogMode=[{mode}])"
    )
    lines.append(first + text)
    for i, child in enumerate(node.inputs):
        last = i == len(node.inputs) - 1
        _render(child, rest + ("+- " if last else ":- "), rest + ("   " if last else ":  "), lines)


def describe(node: L.LNode) -> str:  # noqa: C901 - one spelling per node class
    names = [f.name for f in node.inputs[0].fields] if node.inputs else []
    out = [f.name for f in node.fields]
    if isinstance(node, L.Sink):
        extra = ", upsertMaterialize=[true]" if node.upsert_materialize else ""
        extra += (
            f", conflictStrategy=[{node.on_conflict}]"
            if node.on_conflict and node.upsert_materialize
            else ""
        )
        return f"Sink(table=[{node.table.qualified}], fields=[{', '.join(out)}]{extra})"
    if isinstance(node, L.Scan):
        return f"TableSourceScan(table=[[default_catalog, default_database, {node.table.name}]], fields=[{', '.join(out)}])"
    if isinstance(node, L.Calc):
        select = ", ".join(
            _named(render(e, names), n) for e, n in zip(node.projection, out, strict=True)
        )
        where = f", where=[{render(node.condition, names)}]" if node.condition is not None else ""
        return f"Calc(select=[{select}]{where})"
    if isinstance(node, L.Aggregate):
        retract = node.inputs[0].mode != L.INSERT_ONLY
        return f"GroupAggregate({_group(node.group_keys, out)}select=[{_agg_select(node.group_keys, node.aggs, names, retract)}])"
    if isinstance(node, L.WindowAggregate):
        w = node.window
        window = f"{w.kind}(time_col=[{names[w.time_column]}], size=[{_duration(w.size_ms)}])"
        return f"WindowAggregate({_group(node.group_keys, out)}window=[{window}], select=[{_agg_select(node.group_keys, node.aggs, names, False)}])"
    if isinstance(node, L.Join):
        all_names = [f.name for c in node.inputs for f in c.fields]
        cond = " AND ".join(
            [
                f"=({all_names[a]}, {all_names[b + len(node.inputs[0].fields)]})"
                for a, b in zip(node.left_keys, node.right_keys, strict=True)
            ]
        )
        if node.condition is not None:
            cond = (
                f"AND({cond}, {render(node.condition, all_names)})"
                if cond
                else render(node.condition, all_names)
            )
        return (
            f"Join(joinType=[{_JOIN[node.join_type]}], where=[{cond}], select=[{', '.join(out)}], "
            f"leftInputSpec=[{node.input_spec(0)}], rightInputSpec=[{node.input_spec(1)}])"
        )
    if isinstance(node, L.Rank):
        order = ", ".join(
            ("ROWTIME " if node.rowtime_order else "") + f"{names[c]} {'ASC' if asc else 'DESC'}"
            for c, asc, _ in node.order_keys
        )
        end = node.rank_end if node.rank_end is not None else "unbounded"
        return (
            f"Rank(strategy=[{node.strategy()}], rankType=[ROW_NUMBER], rankRange=[rankStart={node.rank_start}, rankEnd={end}], "
            f"partitionBy=[{', '.join(names[c] for c in node.partition_keys)}], orderBy=[{order}], select=[{', '.join(out)}])"
        )
    if isinstance(node, L.Deduplicate):
        keep = "LastRow" if node.keep_last_row else "FirstRow"
        return f"Deduplicate(keep=[{keep}], key=[{', '.join(names[c] for c in node.keys_)}], order=[PROCTIME])"
    if isinstance(node, L.Union):
        return f"Union(all=[true], union=[{', '.join(out)}])"
    if isinstance(node, L.ChangelogNormalize):
        return f"ChangelogNormalize(key=[{', '.join(names[c] for c in node.key)}])"
    if isinstance(node, L.DropUpdateBefore):
        return "DropUpdateBefore"
    if isinstance(node, L.LookupJoin):
        tcols = [c.name for c in node.table.physical]
        lookup = ", ".join(
            f"{tcols[b]}={names[a]}" for a, b in zip(node.probe_keys, node.lookup_keys, strict=True)
        )
        return (
            f"LookupJoin(table=[default_catalog.default_database.{node.table.name}], joinType=[{_JOIN[node.join_type]}], "
            f"lookup=[{lookup}], select=[{', '.join(out)}])"
        )
    return type(node).__name__


def _group(keys: tuple[int, ...], out: list[str]) -> str:
    return f"groupBy=[{', '.join(out[i] for i in range(len(keys)))}], " if keys else ""


def _agg_select(keys: tuple[int, ...], aggs: list[AggCall], names: list[str], retract: bool) -> str:
    parts = [names[k] for k in keys]
    for a in aggs:
        fn = a.function + ("_RETRACT" if retract else "")
        args = ", ".join(names[i] for i in a.args) or "*"
        parts.append(f"{fn}({'DISTINCT ' if a.distinct else ''}{args}) AS {a.name}")
    return ", ".join(parts)


def _duration(ms: int) -> str:
    for unit, size in (("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def _named(text: str, name: str) -> str:
    return text if text == name else f"{text} AS {name}"


def render(expr: Expr | None, names: list[str]) -> str:
    if expr is None:
        return ""
    if isinstance(expr, InputRef):
        return names[expr.index] if expr.index < len(names) else f"${expr.index}"
    if isinstance(expr, Literal):
        return (
            "null"
            if expr.value is None
            else repr(expr.value)
            if isinstance(expr.value, str)
            else str(expr.value)
        )
    if isinstance(expr, Call):
        if expr.op in ("CAST", "TRY_CAST"):
            return f"{expr.op}({render(expr.operands[0], names)} AS {expr.type.sql()})"
        return f"{expr.op}({', '.join(render(o, names) for o in expr.operands)})"
    if isinstance(expr, UdfCall):
        return f"{expr.name}({', '.join(render(o, names) for o in expr.operands)})"
    return "?"
