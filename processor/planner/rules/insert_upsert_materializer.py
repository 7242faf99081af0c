"""SinkUpsertMaterializer for a keyed sink whose primary key no upsert key of the input covers.

``table.exec.sink.upsert-materialize`` NONE | AUTO | FORCE. With
``table.exec.sink.require-on-conflict`` = true (Flink 2.3's default; deltaflow's default is
false, so jobs written for earlier Flink versions keep planning) such an INSERT needs
``ON CONFLICT DO DEDUPLICATE | ERROR | NOTHING``, and ERROR/NOTHING need watermarks.
"""

from __future__ import annotations

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
    sink.upsert_materialize = True
    if L.UB not in child.mode:
        # The materializer retracts a row by its -U (as Flink's, which asks its input for
        # [I,UB,UA,D]): infer the input's modes again, this time needing -U rows.
        derive(child)
        refine(child, True)
    return sink


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
