"""DropUpdateBefore over a CDC source whose -U rows no consumer needs, as Flink: a sink that
takes only +U (an upsert sink, keyed exactly like its input, or a blackhole) over a chain of
projections (Calcs without a filter), unions and lookup joins down to sources that emit -U
gets a DropUpdateBefore right above each such source, and its input becomes ``[I,UA,D]``.

A filter keeps the chain's -U rows (FLINK-20634: it may drop the -U and keep the +U of one
update), and so does any stateful node, which asks its input for -U rows. Scans are shared
by INSERTs, so the chain above them is copied for this sink and the scans are left as they
are.
"""

from __future__ import annotations

import copy

from deltaflow.processor.planner import logical as L

_PASS_THROUGH = (L.Calc, L.Union, L.LookupJoin)


def insert_drop_update_before(sink: L.Sink, settings: dict[str, str]) -> L.Sink:
    child = sink.inputs[0]
    if L.UB not in child.mode or sink.upsert_materialize or sink.input_needs_update_before(True)[0]:
        return sink
    rewritten = _drop(child)
    if rewritten is None:
        return sink
    return L.with_inputs(sink, [rewritten])  # type: ignore[return-value]


def _drop(node: L.LNode) -> L.LNode | None:
    """``node`` rebuilt without -U rows, or None when some part of it must keep them."""
    if L.UB not in node.mode:
        return node
    if isinstance(node, L.Scan):
        drop = L.DropUpdateBefore([node], list(node.fields))
        return _derived(drop)
    if not isinstance(node, _PASS_THROUGH) or (isinstance(node, L.Calc) and node.condition):
        return None
    if isinstance(node, L.LookupJoin):
        inputs = [_drop(node.inputs[0])]
    else:
        inputs = [_drop(c) for c in node.inputs]
    if any(c is None for c in inputs):
        return None
    clone = copy.copy(node)
    clone.inputs = inputs  # type: ignore[assignment]
    return _derived(clone)


def _derived(node: L.LNode) -> L.LNode:
    node.mode = node.produces([c.mode for c in node.inputs])
    node.keys = node.upsert_keys()
    return node
