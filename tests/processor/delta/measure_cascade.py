"""CPU time and state bytes of a three-way join as regular joins and as a cascade of delta
joins: ``python tests/processor/delta/measure_cascade.py [orders]``.

orders JOIN customers ON customer_id LEFT JOIN regions ON region_id, with ``orders`` order
changes, a tenth as many customer changes and a thousandth as many region changes (inserts,
updates moving rows between join keys, a tenth deletes), interleaved in batches of 1000
orders, 100 customers and 1 region, pushed through the planned graph on a fresh LMDB
directory (a commit every 50 batches). Prints events per CPU second and
``StateBackend.stats()`` per table for NONE and FORCE.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph
from deltaflow.state.backend import StateBackend

SQL = """SET 'table.optimizer.delta-join.strategy' = '{strategy}';
CREATE TABLE orders (order_id INT, customer_id INT, qty INT, PRIMARY KEY (order_id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'o', 'format' = 'debezium-json');
CREATE TABLE customers (customer_id INT, region_id INT, cname STRING,
  PRIMARY KEY (customer_id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'c', 'format' = 'debezium-json');
CREATE TABLE regions (region_id INT, rname STRING, PRIMARY KEY (region_id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'r', 'format' = 'debezium-json');
CREATE TABLE out_t (order_id INT, qty INT, cname STRING, rname STRING)
  WITH ('connector' = 'blackhole');
INSERT INTO out_t SELECT o.order_id, o.qty, c.cname, r.rname FROM orders o
JOIN customers c ON o.customer_id = c.customer_id LEFT JOIN regions r ON c.region_id = r.region_id;
"""


def history(rng: random.Random, n: int, keys: int, make) -> list[list[tuple[int, tuple]]]:
    live: dict = {}
    out = []
    for _ in range(n):
        key = rng.randrange(keys)
        new, old = make(key), live.get(key)
        if old is None:
            out.append([(INSERT, new)])
            live[key] = new
        elif rng.random() < 0.1:
            out.append([(DELETE, old)])
            del live[key]
        else:
            out.append([(UPDATE_BEFORE, old), (UPDATE_AFTER, new)])
            live[key] = new
    return out


def steps(n_orders: int) -> list[tuple[str, Batch]]:
    rng = random.Random(5)
    n_customers, n_regions = n_orders // 10, max(4, n_orders // 1000)
    tables = {
        "orders": (history(rng, n_orders, n_orders // 4,
                           lambda k: (k, rng.randrange(n_customers // 4), rng.randrange(9))), 1000),
        "customers": (history(rng, n_customers, n_customers // 4,
                              lambda k: (k, rng.randrange(n_regions // 4 + 1), f"c{rng.randrange(99)}")), 100),
        "regions": (history(rng, n_regions, n_regions // 4 + 1,
                            lambda k: (k, f"r{rng.randrange(99)}")), 1),
    }  # fmt: skip
    chunks = {name: _batches(hist, size) for name, (hist, size) in tables.items()}
    out = []
    for i in range(max(len(c) for c in chunks.values())):
        out += [(name, c[i]) for name, c in chunks.items() if i < len(c)]
    return out


def _batches(changes: list[list[tuple[int, tuple]]], size: int) -> list[Batch]:
    out = []
    for start in range(0, len(changes), size):
        batch = Batch()
        for change in changes[start : start + size]:
            for kind, row in change:
                batch.append(kind, row)
        out.append(batch)
    return out


def scans(node: P.Node, out: dict[str, int]) -> dict[str, int]:
    if isinstance(node, P.TableSourceScan):
        out[node.table.rsplit(".", 1)[-1]] = node.node_id
    for child in node.inputs:
        scans(child, out)
    return out


def measure(strategy: str, work: list[tuple[str, Batch]]) -> tuple[float, list]:
    plan = plan_job(SQL.format(strategy=strategy)).plan
    ids = scans(plan.sinks[0], {})
    with tempfile.TemporaryDirectory() as tmp, StateBackend(tmp) as backend:
        graph = Graph(plan, backend)
        start = time.process_time()
        for i, (table, batch) in enumerate(work):
            graph.push(ids[table], batch)
            if i % 50 == 0:
                backend.commit()
        backend.commit()
        return time.process_time() - start, backend.stats()


def main() -> None:
    n_orders = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    work = steps(n_orders)
    events = sum(len(b) for _, b in work)
    for strategy in ("NONE", "FORCE"):
        cpu, stats = measure(strategy, work)
        total = sum(size for _, _, size in stats)
        print(
            f"{strategy}: {events:,} changes, {events / cpu:,.0f} per CPU s, {total:,} state bytes"
        )
        for table, entries, size in stats:
            print(f"  {table}: {entries:,} entries, {size:,} bytes")


if __name__ == "__main__":
    main()
