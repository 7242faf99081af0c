"""The plan fingerprint: what names the state a job writes.

A hash of the recorded physical plan (every node's fields, the physical rules' decisions
included: the columns a scan's decoder builds decide what a delta operator's mirror
holds) together with the identity of its tables (``processor/identity.py``: topic,
format and its options, keys, columns; the bootstrap servers are left to the identity
check, which compares the ones the job really uses). Connector options outside the
identity (start mode, credentials, bad-input policies) change no state and are left
out, as is why a join stayed regular (``UnrewrittenJoin``: not a physical field).

``SCHEME`` names how the fingerprint is computed; a state directory records it, and one
written under another scheme is refused with its own message (``identity.bind_plan``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import fields, is_dataclass
from decimal import Decimal

import orjson

from deltaflow.processor.plan import JobPlan, Node
from deltaflow.processor.table_identity import table_identity

# 1: the EXPLAIN text; 2: the recorded physical plan and the tables' identity
SCHEME = 2
_SCALARS = (str, int, float, bool, Decimal, bytes, dt.date, dt.time, dt.datetime, dt.timedelta)


def plan_fingerprint(plan: JobPlan, ttl: bool) -> str:
    """16 hex digits over the plan's nodes and table identity (``ttl``: state values carry
    a write time, so TTL and non-TTL state are distinct)."""
    nodes: dict[int, object] = {}
    stack: list[Node] = list(plan.sinks)
    while stack:
        node = stack.pop()
        if node.node_id not in nodes:
            nodes[node.node_id] = _node(node)
            stack.extend(node.inputs)
    identity = table_identity(plan, None)
    for props in identity.values():
        props.pop("bootstrap servers", None)
    body = {
        "nodes": [nodes[k] for k in sorted(nodes)],
        "sinks": [s.node_id for s in plan.sinks],
        "tables": identity,
        "ttl": ttl,
    }
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def _node(node: Node) -> object:
    out: dict[str, object] = {"": type(node).__name__}
    for f in fields(node):
        value = getattr(node, f.name)
        if f.name == "inputs":
            out[f.name] = [c.node_id for c in value]
        elif f.name != "options":  # the tables' identity stands for them
            out[f.name] = canonical(value)
    return out


def canonical(value: object) -> object:
    """``value`` as JSON-able data, the same in every process (sets sorted)."""
    if isinstance(value, int) and abs(value) >= 2**63:  # beyond JSON's integers
        return f"int:{value}"
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if is_dataclass(value) and not isinstance(value, type):
        return {"": type(value).__name__} | {  # fields outside equality (a Call's SQL
            # position) are no part of what the value is
            f.name: canonical(getattr(value, f.name)) for f in fields(value) if f.compare
        }
    if isinstance(value, tuple | list):
        return [canonical(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [canonical(v) for v in value]
        return sorted(items, key=lambda v: orjson.dumps(v, option=orjson.OPT_SORT_KEYS))
    if isinstance(value, dict):
        return [[canonical(k), canonical(v)] for k, v in sorted(value.items(), key=str)]
    if isinstance(value, _SCALARS):
        return f"{type(value).__name__}:{value!s}"
    return type(value).__name__  # nothing else is planned; never an address
