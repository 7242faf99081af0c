"""Reject updates into an append-only sink, with Flink's message naming the producing node."""

from __future__ import annotations

from deltaflow.formats.errors import PlanError
from deltaflow.processor.planner import logical as L
from deltaflow.processor.planner.explain import describe
from deltaflow.processor.planner.traits import producer_of_updates


def check_sink_compatibility(sink: L.Sink, settings: dict[str, str]) -> L.Sink:
    produced = sink.inputs[0].mode
    accepted = sink.accepts()
    extra = produced - accepted
    if L.UA in accepted:  # an upsert sink takes -U rows when its input cannot leave them out
        extra -= {L.UB}
    if not extra:
        return sink
    kinds = [
        name for name, hit in (("update", extra & {L.UB, L.UA}), ("delete", extra & {L.D})) if hit
    ]
    what = " and ".join(kinds)
    node = producer_of_updates(sink.inputs[0])
    raise PlanError(
        f"Table sink '{sink.table.qualified}' doesn't support consuming {what} changes which is "
        f"produced by node {describe(node)}",
        node=describe(node),
    )
