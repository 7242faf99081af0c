"""Writes the two larger, seeded Debezium histories of the job cases (stdlib only).

    python tests/jobs/make_events.py

``events/shop_orders.jsonl``: 1,500 events over 120 order ids, 15 customers and 6
products: inserts, updates that change any column (customer, product, amount, NULLs),
deletes and re-inserts of deleted ids. ``events/shop_customers.jsonl``: 60 events over
the 15 customers (region and tier updates, deletes, re-inserts). ``events/nexmark.jsonl``:
300 Nexmark events as plain JSON in Nexmark's nested layout (``nexmark()``). The other event files
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


STATES = ["OR", "ID", "CA", "WA", "NY"]
CHANNELS = ["Google", "Facebook", "Baidu", "Apple"]


def nexmark(rng: random.Random, n: int) -> list[dict]:
    """Nexmark's events in its published nested layout (``event_type``, ``person``,
    ``auction``, ``bid``; the two other objects null): 1 person in 10, 1 auction in 5, the
    rest bids, their ``dateTime`` advancing 0-2 s per event (JSON timestamps as Flink's
    'SQL' standard writes them), a few fields NULL."""
    out, people, auctions = [], [1000], [2000]
    t = 1_704_103_200_000  # 2024-01-01 10:00:00 UTC
    for i in range(n):
        t += rng.randrange(0, 2000)
        stamp = f"{_utc(t)}.{t % 1000:03d}"
        kind = 0 if i % 10 == 0 else 1 if i % 5 == 1 else 2
        event: dict = {"event_type": kind, "person": None, "auction": None, "bid": None}
        if kind == 0:
            people.append(1000 + i)
            event["person"] = {"id": people[-1], "name": f"p{i}", "emailAddress": f"p{i}@x.org",
                               "creditCard": "1234", "city": rng.choice(["Boise", "Portland", None]),
                               "state": rng.choice(STATES), "dateTime": stamp, "extra": ""}  # fmt: skip
        elif kind == 1:
            auctions.append(2000 + i)
            event["auction"] = {"id": auctions[-1], "itemName": f"item{i}", "description": "d",
                                "initialBid": rng.randrange(1, 100), "reserve": 200,
                                "dateTime": stamp, "expires": stamp, "seller": rng.choice(people),
                                "category": rng.choice([10, 11, 12]), "extra": ""}  # fmt: skip
        else:
            event["bid"] = {"auction": rng.choice(auctions), "bidder": rng.choice(people),
                            "price": rng.randrange(1, 5000), "channel": rng.choice(CHANNELS),
                            "url": f"https://x.org/{i}", "dateTime": stamp,
                            "extra": None if rng.random() < 0.1 else "e"}  # fmt: skip
        out.append(event)
    return out


def _utc(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms // 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def write(name: str, events: list[dict]) -> None:
    (EVENTS / f"{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def main() -> None:
    rng = random.Random(20240301)
    write("shop_orders", history(rng, 1500, list(range(120)), order, order_change))
    write("shop_customers", history(rng, 60, CUSTOMERS, customer, customer_change))
    write("nexmark", nexmark(random.Random(20261201), 300))


if __name__ == "__main__":
    main()
