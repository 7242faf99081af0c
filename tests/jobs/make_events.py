"""Writes the two larger, seeded Debezium histories of the job cases (stdlib only).

    python tests/jobs/make_events.py

``events/shop_orders.jsonl``: 1,500 events over 120 order ids, 15 customers and 6
products: inserts, updates that change any column (customer, product, amount, NULLs),
deletes and re-inserts of deleted ids. ``events/shop_customers.jsonl``: 60 events over
the 15 customers (region and tier updates, deletes, re-inserts). The other event files
are written by hand. After a change here, record Flink again (``record_flink.py``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

EVENTS = Path(__file__).resolve().parent / "events"
CUSTOMERS = [f"c{i:02d}" for i in range(15)]
PRODUCTS = ["apple", "pear", "kiwi", "plum", "fig", "lime"]
REGIONS = ["EU", "US", "APAC", None]


def history(rng: random.Random, n: int, keys: list, new_row, change) -> list[dict]:
    live: dict = {}
    out = []
    for _ in range(n):
        key = rng.choice(keys)
        if key not in live:
            live[key] = new_row(rng, key)
            out.append({"before": None, "after": live[key], "op": "c"})
        elif rng.random() < 0.2:
            out.append({"before": live.pop(key), "after": None, "op": "d"})
        else:
            after = {**live[key], **change(rng)}
            out.append({"before": live[key], "after": after, "op": "u"})
            live[key] = after
    return out


def order(rng: random.Random, key: int) -> dict:
    return {"id": key, "customer": rng.choice(CUSTOMERS), "product": rng.choice(PRODUCTS),
            "amount": amount(rng), "qty": rng.randrange(1, 6)}  # fmt: skip


def amount(rng: random.Random) -> float | None:
    return None if rng.random() < 0.05 else rng.randrange(1, 100000) / 100


def order_change(rng: random.Random) -> dict:
    field = rng.choice(["customer", "product", "amount", "qty"])
    value = {"customer": rng.choice(CUSTOMERS), "product": rng.choice(PRODUCTS),
             "amount": amount(rng), "qty": rng.randrange(1, 6)}[field]  # fmt: skip
    return {field: value}


def customer(rng: random.Random, key: str) -> dict:
    return {"name": key, "region": rng.choice(REGIONS), "tier": rng.randrange(1, 4)}


def customer_change(rng: random.Random) -> dict:
    return rng.choice([{"region": rng.choice(REGIONS)}, {"tier": rng.randrange(1, 4)}])


def write(name: str, events: list[dict]) -> None:
    (EVENTS / f"{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def main() -> None:
    rng = random.Random(20240301)
    write("shop_orders", history(rng, 1500, list(range(120)), order, order_change))
    write("shop_customers", history(rng, 60, CUSTOMERS, customer, customer_change))


if __name__ == "__main__":
    main()
