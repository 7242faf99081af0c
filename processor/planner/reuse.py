"""Sub-plan reuse: identical physical subtrees of a job run once, feeding every consumer.

Flink's ``table.optimizer.reuse-sub-plan-enabled`` (default true): when two branches of
a job compute the same thing from the same input (Nexmark q5's two HOP counts per
auction), the exec graph keeps one of them and fans its output out. Here two nodes are
the same when their type and every field but ``node_id`` are equal (``fingerprint.
canonical``) and their inputs are already the same node; the one with the lowest
``node_id`` stays, so its state keeps its name, and the graph (``runtime/graph.py``)
runs one operator for it whose output goes to every consumer.

Left unshared: sinks and their materializers (each INSERT writes on its own), source
scans (the planner shares those already), nodes fused with a Calc (their fields name
other nodes by id) and nodes holding a non-deterministic function or UDF, whose two
copies give different values. EXPLAIN prints the physical plan before reuse, as
Flink's "Optimized Physical Plan" does; the fingerprint is taken after it, so state
written with reuse is not read without it, or the other way round.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

import orjson

from deltaflow.processor import plan as p
from deltaflow.processor.exprs.functions import is_deterministic
from deltaflow.processor.exprs.nodes import Call, UdfCall
from deltaflow.processor.planner.fingerprint import canonical

SETTING = "table.optimizer.reuse-sub-plan-enabled"
_NEVER = (p.Sink, p.SinkUpsertMaterializer, p.TableSourceScan)


def reuse_enabled(settings: dict[str, str]) -> bool:
    return settings.get(SETTING, "true").strip().lower() != "false"


def share_identical(sinks: tuple[p.Sink, ...]) -> tuple[p.Sink, ...]:
    """``sinks`` with each set of identical subtrees made one node (the lowest node_id's)."""
    done: dict[int, p.Node] = {}  # node_id -> the node that now stands for it
    seen: dict[bytes, p.Node] = {}  # a shareable node's content -> its first node
    for sink in sinks:
        _visit(sink, done, seen)
    return tuple(done[s.node_id] for s in sinks)  # type: ignore[misc]


def _visit(node: p.Node, done: dict[int, p.Node], seen: dict[bytes, p.Node]) -> p.Node:
    nid = node.node_id
    if nid in done:
        return done[nid]
    inputs = tuple(_visit(c, done, seen) for c in node.inputs)
    if any(a is not b for a, b in zip(inputs, node.inputs, strict=True)):
        node = replace(node, inputs=inputs)
    if _shareable(node):
        key = _content(node)
        node = seen.setdefault(key, node)
    done[nid] = node
    return node


def _content(node: p.Node) -> bytes:
    body: dict[str, object] = {"": type(node).__name__}
    for f in fields(node):
        if f.name == "inputs":
            body[f.name] = [c.node_id for c in node.inputs]
        elif f.name != "node_id":
            body[f.name] = canonical(getattr(node, f.name))
    return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)


def _shareable(node: p.Node) -> bool:
    if isinstance(node, _NEVER) or not node.inputs:
        return False
    if getattr(node, "fused_calc", None) is not None or getattr(node, "fused_into", None):
        return False
    return all(_deterministic(getattr(node, f.name)) for f in fields(node) if f.name != "inputs")


def _deterministic(value: object) -> bool:
    if isinstance(value, Call) and not is_deterministic(value.op):
        return False
    if isinstance(value, UdfCall) and not value.deterministic:
        return False
    if isinstance(value, p.Node):
        return True  # another node: judged on its own
    if is_dataclass(value) and not isinstance(value, type):
        return all(_deterministic(getattr(value, f.name)) for f in fields(value))
    if isinstance(value, tuple | list | set | frozenset):
        return all(_deterministic(v) for v in value)
    if isinstance(value, dict):
        return all(_deterministic(v) for v in value.values())
    return True
