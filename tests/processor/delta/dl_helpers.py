"""Valid CDC histories of small primary-key tables, and planned jobs run on real LMDB, for
comparing delta operators with the regular ones on the same input."""

from __future__ import annotations

import random
import tempfile
from collections import Counter

from hypothesis import strategies as st

from deltaflow.formats.changelog import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Batch,
    apply_changelog,
)
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph
from deltaflow.state.backend import StateBackend

# a (id PK, k, v) and b (rid PK, k, w): k is the join / group column, NULL now and then.
TABLES = """CREATE TABLE a (id INT, k INT, v INT, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'a', 'format' = 'debezium-json');
CREATE TABLE b (rid INT, k INT, w INT, PRIMARY KEY (rid) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'b', 'format' = 'debezium-json');
"""
FORCE_JOIN = "SET 'table.optimizer.delta-join.strategy' = 'FORCE';\n"
REGULAR_JOIN = "SET 'table.optimizer.delta-join.strategy' = 'NONE';\n"


def baseline(sql: str) -> str:
    """``sql`` with regular joins unless it SETs a delta-join strategy: the reference the
    delta runs are compared with (AUTO, the default, plans delta joins)."""
    return sql if "delta-join.strategy" in sql else REGULAR_JOIN + sql
FORCE_AGG = "SET 'table.optimizer.delta-agg.strategy' = 'FORCE';\n"

# One op: (table 0/1, primary key, delete?, k, value). An op on an absent key inserts it,
# on a present key updates it (-U old, +U new) or deletes it (-D old).
op_st = st.tuples(
    st.integers(0, 1),
    st.integers(0, 5),
    st.booleans(),
    st.one_of(st.none(), st.integers(0, 3)),
    st.integers(0, 6),
)
history_st = st.lists(op_st, min_size=1, max_size=40)


def batches(ops: list[tuple], size: int, tables: tuple[str, ...] = ("a", "b")) -> list[tuple]:
    """The ops as (table, Batch) in order: consecutive changes of one table, at most ``size``
    ops per batch, an update's -U/+U never split."""
    live: list[dict[int, tuple]] = [{}, {}]
    out: list[tuple[str, Batch]] = []
    for side, pk, delete, k, value in ops:
        side = min(side, len(tables) - 1)
        rows = live[side]
        old = rows.get(pk)
        new = (pk, k, value)
        if old is None:
            changes = [(INSERT, new)]
        elif delete:
            changes = [(DELETE, old)]
        else:
            changes = [(UPDATE_BEFORE, old), (UPDATE_AFTER, new)]
        if changes[-1][0] == DELETE:
            del rows[pk]
        else:
            rows[pk] = new
        if not out or out[-1][0] != tables[side] or out[-1][2] >= size:
            out.append((tables[side], Batch(), 0))
        table, batch, n = out[-1]
        for kind, row in changes:
            batch.append(kind, row)
        out[-1] = (table, batch, n + 1)
    return [(table, batch) for table, batch, _ in out]


def scan_ids(node: P.Node, out: dict[str, int]) -> dict[str, int]:
    if isinstance(node, P.TableSourceScan):
        out[node.table.rsplit(".", 1)[-1]] = node.node_id
    for child in node.inputs:
        scan_ids(child, out)
    return out


def run(sql: str, steps: list[tuple[str, Batch]]) -> list[list[tuple[int, tuple]]]:
    """Each step's batch pushed through the planned job on a fresh LMDB directory; the one
    sink's changes per step. Joins are regular unless ``sql`` SETs a strategy."""
    plan = plan_job(baseline(sql)).plan
    (sink,) = plan.sinks
    ids = scan_ids(sink, {})
    out = []
    with tempfile.TemporaryDirectory() as tmp, StateBackend(tmp) as backend:
        graph = Graph(plan, backend)
        for table, batch in steps:
            got = graph.push(ids[table], Batch(list(batch.kinds), list(batch.rows)))
            result = got.get(sink.node_id, Batch())
            out.append(list(zip(result.kinds, result.rows, strict=True)))
            backend.commit()
    return out


def final(outputs: list[list[tuple[int, tuple]]]) -> Counter:
    changes = [c for step in outputs for c in step]
    table = apply_changelog([k for k, _ in changes], [r for _, r in changes])
    return Counter(table)


def find(sql: str, cls: type) -> P.Node | None:
    """The first node of type ``cls`` below the job's first sink, or None (joins regular
    unless ``sql`` SETs a strategy)."""
    todo = [plan_job(baseline(sql)).plan.sinks[0]]
    while todo:
        node = todo.pop()
        if type(node) is cls:
            return node
        todo.extend(node.inputs)
    return None


def debezium_history(
    rng: random.Random, keys, make, n: int, deletes: float
) -> tuple[list[dict], dict]:
    """Debezium events (c/u/d) of ``n`` random changes to ``keys`` (``make(key)`` gives a
    new row; a change of a live key is a delete with probability ``deletes``), and the
    table they leave."""
    live: dict = {}
    events = []
    for _ in range(n):
        key = rng.choice(keys)
        after = make(key)
        if key not in live:
            events.append({"op": "c", "before": None, "after": after})
            live[key] = after
        elif rng.random() < deletes:
            events.append({"op": "d", "before": live.pop(key), "after": None})
        else:
            events.append({"op": "u", "before": live[key], "after": after})
            live[key] = after
    return events, live
