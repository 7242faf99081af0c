"""Throughput of the stateful operators on real LMDB state: ``python -m deltaflow.processor.runtime.bench``.

GroupAggregate (COUNT(*), SUM) and an inner join, each over 100,000 changes on
1,000 keys, in batches of 1,000 changes with one LMDB commit per 10,000.
Throughput is changes per second of this process's CPU time (best of 3), so that
other work on a shared machine does not skew it.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

from deltaflow.formats.changelog import INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.plan import AggCall, Field, GroupAggregate, Join, TableSourceScan
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.group_agg import GroupAggOperator
from deltaflow.processor.runtime.join import JoinOperator
from deltaflow.state.backend import StateBackend

ALL = frozenset({0, 1, 2, 3})
FIELDS = (
    Field("id", parse_type("BIGINT")),
    Field("k", parse_type("INT")),
    Field("v", parse_type("BIGINT")),
)


def changes(n: int, keys: int, seed: int = 7) -> Batch:
    """``n`` changes: inserts, and -U/+U pairs moving an earlier row to another value."""
    rnd = random.Random(seed)
    out = Batch()
    live: list[tuple] = []
    while len(out) < n:
        if live and rnd.random() < 0.3 and len(out) + 2 <= n:
            i = rnd.randrange(len(live))
            old = live[i]
            new = (old[0], old[1], rnd.randrange(1000))
            out.append(UPDATE_BEFORE, old)
            out.append(UPDATE_AFTER, new)
            live[i] = new
        else:
            row = (len(out), rnd.randrange(keys), rnd.randrange(1000))
            out.append(INSERT, row)
            live.append(row)
    return out


def _scan(node_id: int) -> TableSourceScan:
    return TableSourceScan(
        node_id=node_id, fields=FIELDS, changelog_mode=ALL, table="t", options={}, physical=FIELDS
    )


def _drive(
    process, data: Batch, backend: StateBackend, batch: int = 1000, commit_every: int = 10_000
) -> tuple[float, int]:
    """(changes per CPU second, number of changes the operator emitted)."""
    emitted = 0
    start = time.process_time()
    for i in range(0, len(data), batch):
        end = i + batch
        if end < len(data) and data.kinds[end - 1] == UPDATE_BEFORE:
            end += 1  # never split a -U/+U pair
        emitted += len(process(Batch(data.kinds[i:end], data.rows[i:end]), i))
        if end % commit_every < batch:
            backend.commit({"offset": end})
    backend.commit({"offset": len(data)})
    return len(data) / (time.process_time() - start), emitted


def bench_group_agg(path: Path, data: Batch) -> tuple[float, int]:
    node = GroupAggregate(
        node_id=2,
        inputs=(_scan(1),),
        fields=(FIELDS[1], Field("n", parse_type("BIGINT")), Field("s", parse_type("BIGINT"))),
        changelog_mode=ALL,
        group_keys=(1,),
        aggs=(
            AggCall("COUNT", (), parse_type("BIGINT"), "n"),
            AggCall("SUM", (2,), parse_type("BIGINT"), "s"),
        ),
    )
    with StateBackend(path) as backend:
        op = GroupAggOperator(node, backend, RuntimeContext())
        return _drive(lambda b, _: op.process(b), data, backend)


def bench_join(path: Path, data: Batch) -> tuple[float, int]:
    node = Join(
        node_id=3,
        inputs=(_scan(1), _scan(2)),
        fields=FIELDS + FIELDS,
        changelog_mode=ALL,
        join_type="INNER",
        left_keys=(1,),
        right_keys=(1,),
    )
    with StateBackend(path) as backend:
        op = JoinOperator(node, backend, RuntimeContext())
        # alternate sides batch by batch: half the changes reach each input
        return _drive(lambda b, i: op.process(b, (i // 1000) % 2), data, backend)


def main(runs: int = 3) -> int:
    """Best of ``runs`` (each into a fresh state directory): the machine may be shared."""
    data = changes(100_000, 1_000)
    join_data = changes(100_000, 10_000)
    with tempfile.TemporaryDirectory() as tmp:
        agg = max(bench_group_agg(Path(tmp) / f"agg{i}", data) for i in range(runs))
        join = max(bench_join(Path(tmp) / f"join{i}", join_data) for i in range(runs))
    print(f"GroupAggregate COUNT(*), SUM over 100k changes, 1k keys: {agg[0]:,.0f} changes/s")
    print(f"inner join over 100k changes, 10k keys:                {join[0]:,.0f} changes/s")
    print(f"  (emitted: aggregate {agg[1]:,} changes, join {join[1]:,} changes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
