"""CPU time, state bytes and peak RSS of a three-way join as regular joins and as a cascade
of delta joins: ``python tests/processor/delta/measure_cascade.py [orders]``.

orders JOIN customers ON customer_id LEFT JOIN regions ON region_id, with ``orders`` order
changes, a tenth as many customer changes and a thousandth as many region changes (inserts,
updates moving rows between join keys, a tenth deletes), interleaved in batches of 1000
orders, 100 customers and 1 region, pushed through the planned graph on a fresh LMDB
directory (a commit every 50 batches). Prints events per CPU second, the state bytes
(``StateBackend.stats()`` per table) and the peak RSS for NONE and AUTO (the default), each
in its own process so that the RSS is its own.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
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


def one(strategy: str, n_orders: int) -> None:
    work = steps(n_orders)
    cpu, stats = measure(strategy, work)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    events = sum(len(b) for _, b in work)
    print(json.dumps({"events": events, "cpu": cpu, "stats": stats, "rss_mb": rss_mb}))


def main() -> None:
    if sys.argv[1:2] == ["--one"]:
        one(sys.argv[2], int(sys.argv[3]))
        return
    n_orders = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    for strategy in ("NONE", "AUTO"):
        cmd = [sys.executable, __file__, "--one", strategy, str(n_orders)]
        got = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        total = sum(size for _, _, size in got["stats"])
        print(
            f"{strategy}: {got['events']:,} changes, {got['events'] / got['cpu']:,.0f} per CPU s, "
            f"{total:,} state bytes, peak RSS {got['rss_mb']:.0f} MB"
        )
        for table, entries, size in got["stats"]:
            print(f"  {table}: {entries:,} entries, {size:,} bytes")


if __name__ == "__main__":
    main()
