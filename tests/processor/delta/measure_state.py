"""State bytes on disk of W3 (orders JOIN items on (merchant_id, item_id)) as a regular join
and as a delta join: ``python tests/processor/delta/measure_state.py [orders] [items]``.

Pushes ``items`` item inserts and ``orders`` order inserts (then updates a tenth of the orders)
through the planned graph on a fresh LMDB directory each, commits, and prints
``StateBackend.stats()`` per table and in total.
"""

from __future__ import annotations

import datetime as dt
import random
import sys
import tempfile
from decimal import Decimal

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch
from deltaflow.processor import plan as P
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph
from deltaflow.state.backend import StateBackend

SQL = """{settings}
CREATE TABLE orders (order_id BIGINT, merchant_id INT, item_id INT, amount DECIMAL(10, 2),
  status STRING, updated_at TIMESTAMP(3), PRIMARY KEY (order_id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'o', 'format' = 'debezium-json');
CREATE TABLE items (merchant_id INT, item_id INT, item_name STRING, price DECIMAL(10, 2),
  PRIMARY KEY (merchant_id, item_id) NOT ENFORCED)
  WITH ('connector' = 'kafka', 'topic' = 'i', 'format' = 'debezium-json');
CREATE TABLE out_table (order_id BIGINT, merchant_id INT, item_id INT, amount DECIMAL(10, 2),
  item_name STRING, price DECIMAL(10, 2), PRIMARY KEY (order_id) NOT ENFORCED)
  WITH ('connector' = 'upsert-kafka', 'topic' = 'out', 'key.format' = 'json', 'value.format' = 'json');
INSERT INTO out_table SELECT o.order_id, o.merchant_id, o.item_id, o.amount, i.item_name, i.price
FROM orders AS o JOIN items AS i ON o.merchant_id = i.merchant_id AND o.item_id = i.item_id;
"""
DELTA = "SET 'table.optimizer.delta-join.strategy' = 'FORCE';"
EPOCH = dt.datetime(2026, 11, 1)
STATUSES = ("CREATED", "PAID", "SHIPPED")


def scans(node: P.Node, out: dict[str, int]) -> dict[str, int]:
    if isinstance(node, P.TableSourceScan):
        out[node.table.rsplit(".", 1)[-1]] = node.node_id
    for child in node.inputs:
        scans(child, out)
    return out


def changes(n_orders: int, n_items: int, seed: int = 7) -> tuple[list[Batch], list[Batch]]:
    """Item inserts; order inserts then -U/+U updates of a tenth of them, in batches of 1000."""
    rnd = random.Random(seed)
    per_merchant = 50
    items = [
        (m, i, f"item-{m}-{i}", Decimal(rnd.randint(100, 99_999)) / 100)
        for m in range(max(1, n_items // per_merchant))
        for i in range(per_merchant)
    ][:n_items]
    orders = []
    for oid in range(n_orders):
        m, i, _, _ = items[rnd.randrange(len(items))]
        amount = Decimal(rnd.randint(100, 999_999)) / 100
        orders.append((oid, m, i, amount, STATUSES[0], EPOCH + dt.timedelta(seconds=oid)))
    order_changes = [(INSERT, r) for r in orders]
    for r in rnd.sample(orders, n_orders // 10):
        order_changes += [(UPDATE_BEFORE, r), (UPDATE_AFTER, r[:4] + (STATUSES[1],) + r[5:])]
    order_changes += [(DELETE, r) for r in orders[: n_orders // 100]]
    return _batches([(INSERT, r) for r in items]), _batches(order_changes)


def _batches(pairs: list[tuple[int, tuple]], size: int = 1000) -> list[Batch]:
    out = []
    for start in range(0, len(pairs), size):
        chunk = pairs[start : start + size]
        out.append(Batch([k for k, _ in chunk], [r for _, r in chunk]))
    return out


def measure(settings: str, n_orders: int, n_items: int) -> list[tuple[str, int, int]]:
    plan = plan_job(SQL.format(settings=settings)).plan
    item_batches, order_batches = changes(n_orders, n_items)
    with tempfile.TemporaryDirectory() as tmp, StateBackend(tmp) as backend:
        graph = Graph(plan, backend)
        ids = scans(plan.sinks[0], {})
        for batch in item_batches:
            graph.push(ids["items"], batch)
        for batch in order_batches:
            graph.push(ids["orders"], batch)
            backend.commit()
        backend.commit()
        return backend.stats()


def main() -> None:
    n_orders = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    n_items = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    totals = {}
    for name, settings in (("regular join", ""), ("delta join", DELTA)):
        stats = measure(settings, n_orders, n_items)
        totals[name] = sum(b for _, _, b in stats)
        print(f"{name}: {totals[name]:,} bytes")
        for table, entries, size in stats:
            print(f"  {table}: {entries:,} entries, {size:,} bytes")
    ratio = totals["delta join"] / totals["regular join"]
    print(f"delta / regular = {ratio:.2f}")


if __name__ == "__main__":
    main()
