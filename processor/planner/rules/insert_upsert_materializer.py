"""SinkUpsertMaterializer for a keyed sink whose primary key no upsert key of the input covers.

``table.exec.sink.upsert-materialize`` NONE | AUTO | FORCE. With
``table.exec.sink.require-on-conflict`` = true (Flink 2.3's default; deltaflow's default is
false, so jobs written for earlier Flink versions keep planning) such an INSERT needs
``ON CONFLICT DO DEDUPLICATE | ERROR | NOTHING``, and ERROR/NOTHING need watermarks.
"""

from __future__ import annotations

import copy

from deltaflow.formats.errors import PlanError
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.traits import derive, refine


def insert_upsert_materializer(sink: L.Sink, settings: dict[str, str]) -> L.Sink:
    strategy = settings.get("table.exec.sink.upsert-materialize", "AUTO").upper()
    child = sink.inputs[0]
    if not sink.primary_key or strategy == "NONE" or child.mode == L.INSERT_ONLY:
        return sink
    covered = any(set(k) <= set(sink.primary_key) for k in child.keys)
    if covered and strategy != "FORCE":
        return sink
    require = settings.get("table.exec.sink.require-on-conflict", "false").lower() == "true"
    if sink.on_conflict is None and require and strategy != "FORCE":
        raise PlanError(_message(sink, child))
    if sink.on_conflict in ("ERROR", "NOTHING"):
        _check_watermarks(sink)
    if L.UB not in child.mode:
        # The materializer retracts a row by its -U (as Flink's, which asks its input for
        # [I,UB,UA,D]): infer the input's modes again, this time needing -U rows.
        child = _reinferred(child)
    # a copy (dataclasses.replace would reset the traits, which are no init fields)
    marked = copy.copy(sink)
    marked.inputs, marked.upsert_materialize = [child], True
    return marked


def _reinferred(node: L.LNode) -> L.LNode:
    """``node``'s tree with its traits inferred again for a consumer needing -U rows,
    rule-copy style: the inference runs over a copy of the tree, then a node whose traits
    and inputs stayed the same is kept as it is (the shared scans) and the others are
    copies carrying the new traits."""
    copies: dict[int, L.LNode] = {}

    def mirror(n: L.LNode) -> L.LNode:
        if id(n) not in copies:
            clone = copy.copy(n)
            clone.inputs = [mirror(c) for c in n.inputs]
            copies[id(n)] = clone
        return copies[id(n)]

    inferred = mirror(node)
    derive(inferred)
    refine(inferred, True)
    rebuilt: dict[int, L.LNode] = {}

    def rebuild(n: L.LNode) -> L.LNode:
        if id(n) not in rebuilt:
            done, inputs = copies[id(n)], [rebuild(c) for c in n.inputs]
            same = (done.mode, done.keys) == (n.mode, n.keys)
            out = L.with_inputs(n, inputs)
            if not same:
                out = out if out is not n else copy.copy(n)
                out.mode, out.keys = done.mode, done.keys
            rebuilt[id(n)] = out
        return rebuilt[id(n)]

    return rebuild(node)


def _message(sink: L.Sink, child: L.LNode) -> str:
    names = [f.name for f in sink.fields]
    pk = ", ".join(names[i] for i in sink.primary_key)
    upsert = ", ".join(f"[{', '.join(names[i] for i in k)}]" for k in child.keys)
    return (
        f"The query has an upsert key that differs from the primary key of the sink table "
        f"'{sink.table.qualified}'. Primary key: [{pk}], upsert key: {upsert}. This can lead to "
        "non-deterministic results when multiple records with different upsert keys map to the same "
        "primary key. Please specify an ON CONFLICT clause to define how conflicts should be handled: "
        "ON CONFLICT DO DEDUPLICATE (update to the latest record, state intensive, since we need to "
        "keep the entire history), or ON CONFLICT DO ERROR (fail on conflict), or ON CONFLICT DO "
        "NOTHING (keep first record)."
    )


def _check_watermarks(sink: L.Sink) -> None:
    missing = sorted({s.table.qualified for s in _scans(sink) if s.table.watermark is None})
    if missing:
        raise PlanError(
            f"ON CONFLICT DO {sink.on_conflict} requires all source tables to define watermarks, but the "
            f"following source(s) do not: {', '.join(missing)}. Please add a WATERMARK declaration to these tables."
        )


def _scans(node: L.LNode) -> list[L.Scan]:
    found = [node] if isinstance(node, L.Scan) else []
    for child in node.inputs:
        found += _scans(child)
    return found
