"""Seeded Debezium JSON change events for the ``orders`` and ``items`` tables.

orders: order_id BIGINT (PK), merchant_id INT, item_id INT, amount DECIMAL(10, 2),
status STRING, updated_at TIMESTAMP(3).  items: (merchant_id, item_id) PK,
item_name STRING, price DECIMAL(10, 2).

An order change is an insert of a new order (about 25%), an update of a live order
(about 70%: status, amount and time change; 2% of updates also move the order to
another item of its merchant) or a delete (5%). Item changes are about half
inserts, 45% price/name updates, 5% deletes. With ``Shape.skew`` (workload W3S), 30%
of new orders go to one of 50 hot items chosen by a Pareto law (shape 1.16, the 80/20
rule): the hot item of rank r (from 0) is taken with probability P(r <= X - 1 < r + 1),
X ~ Pareto(1.16), the ranks past 49 folded onto 49, so the hottest item gets about 16%
of all new orders. The other draws are the uniform stream's (a separate generator
decides the skew). Every envelope carries a Debezium
``source`` block, so an order update weighs about 450 bytes, as from a real
PostgreSQL connector without schemas.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from dataclasses import dataclass

import orjson

STATUSES = ("CREATED", "PAID", "SHIPPED", "DELIVERED", "CANCELLED")
EPOCH = dt.datetime(2026, 11, 1, 8, 0, 0)


@dataclass(frozen=True)
class Shape:
    orders: int  # order changes
    items: int  # item changes
    seed: int = 7
    skew: bool = False  # hot items (module docstring)

    @property
    def item_keys(self) -> int:
        return max(1, self.items // 2)

    @property
    def merchants(self) -> int:
        return max(1, self.item_keys // 50)


def _source(table: str, seq: int, ts_ms: int) -> dict:
    return {
        "version": "2.7.3.Final", "connector": "postgresql", "name": "shop",
        "ts_ms": ts_ms, "snapshot": "false", "db": "shop",
        "schema": "public", "table": table,
        "txId": 7000 + seq, "lsn": seq * 8 + 8, "xmin": None,
    }  # fmt: skip


def _stamp(ms: int) -> str:
    """``yyyy-MM-dd HH:mm:ss.SSS``, Debezium's text for a TIMESTAMP(3) in SQL format."""
    moment = EPOCH + dt.timedelta(milliseconds=ms)
    return f"{moment.isoformat(' ', 'milliseconds')}"


def _envelope(table: str, op: str, before, after, seq: int) -> dict:
    ts_ms = 1_795_000_000_000 + seq * 3
    return {"before": before, "after": after, "source": _source(table, seq, ts_ms), "op": op,
            "ts_ms": ts_ms + 5}  # fmt: skip


class Live:
    """Live rows by key, with O(1) random choice and removal (swap with the last)."""

    def __init__(self) -> None:
        self.rows: dict = {}
        self.keys: list = []
        self.where: dict = {}

    def __len__(self) -> int:
        return len(self.keys)

    def put(self, key, row: dict) -> None:
        if key not in self.where:
            self.where[key] = len(self.keys)
            self.keys.append(key)
        self.rows[key] = row

    def pop(self, key) -> dict:
        at, last = self.where.pop(key), self.keys.pop()
        if last != key:
            self.keys[at] = last
            self.where[last] = at
        return self.rows.pop(key)

    def choice(self, rng: random.Random):
        return self.keys[rng.randrange(len(self.keys))]


def item_events(shape: Shape) -> Iterator[tuple[dict, dict]]:
    """(key, envelope) pairs for ``shape.items`` item changes."""
    rng = random.Random(shape.seed * 1000 + 1)
    live = Live()
    per_merchant = max(1, shape.item_keys // shape.merchants)
    free = [(m, i) for m in range(shape.merchants) for i in range(per_merchant)]
    rng.shuffle(free)
    for seq in range(shape.items):
        roll = rng.random()
        if live and (roll < 0.05 or not free):
            key = live.choice(rng)
            free.append(key)
            yield _key(key), _envelope("items", "d", live.pop(key), None, seq)
        elif free and (roll < 0.55 or not live):
            key = free.pop()
            after = _item(rng, key)
            live.put(key, after)
            yield _key(key), _envelope("items", "c", None, after, seq)
        else:
            key = live.choice(rng)
            before, after = live.rows[key], _item(rng, key)
            live.put(key, after)
            yield _key(key), _envelope("items", "u", before, after, seq)


def _key(key: tuple[int, int]) -> dict:
    return {"merchant_id": key[0], "item_id": key[1]}


def _item(rng: random.Random, key: tuple[int, int]) -> dict:
    return {"merchant_id": key[0], "item_id": key[1],
            "item_name": f"item {key[1]} of merchant {key[0]} v{rng.randrange(100)}",
            "price": rng.randrange(100, 100_000) / 100}  # fmt: skip


def order_events(shape: Shape) -> Iterator[tuple[dict, dict]]:
    """(key, envelope) pairs for ``shape.orders`` order changes."""
    rng = random.Random(shape.seed * 1000 + 2)
    live = Live()
    per_merchant = max(1, shape.item_keys // shape.merchants)
    hot = _Hot(shape, per_merchant) if shape.skew else None
    for seq in range(shape.orders):
        roll = rng.random()
        if not live or roll < 0.25:
            oid = seq + 1
            merchant, item = rng.randrange(shape.merchants), rng.randrange(per_merchant)
            if hot is not None:
                merchant, item = hot.pick(merchant, item)
            after = _order(rng, oid, merchant, item, seq)
            live.put(oid, after)
            yield {"order_id": oid}, _envelope("orders", "c", None, after, seq)
        elif roll < 0.30:
            oid = live.choice(rng)
            yield {"order_id": oid}, _envelope("orders", "d", live.pop(oid), None, seq)
        else:
            oid = live.choice(rng)
            before = live.rows[oid]
            item = rng.randrange(per_merchant) if rng.random() < 0.02 else before["item_id"]
            after = _order(rng, oid, before["merchant_id"], item, seq)
            live.put(oid, after)
            yield {"order_id": oid}, _envelope("orders", "u", before, after, seq)


class _Hot:
    """The hot items of a skewed run and its own generator (module docstring)."""

    COUNT, SHARE, ALPHA = 50, 0.30, 1.16

    def __init__(self, shape: Shape, per_merchant: int) -> None:
        self.rng = random.Random(shape.seed * 1000 + 3)
        self.items = [
            (self.rng.randrange(shape.merchants), self.rng.randrange(per_merchant))
            for _ in range(self.COUNT)
        ]

    def pick(self, merchant: int, item: int) -> tuple[int, int]:
        if self.rng.random() >= self.SHARE:
            return merchant, item
        rank = min(int(self.rng.paretovariate(self.ALPHA)) - 1, self.COUNT - 1)
        return self.items[rank]


def _order(rng: random.Random, oid: int, merchant: int, item: int, seq: int) -> dict:
    return {"order_id": oid, "merchant_id": merchant, "item_id": item,
            "amount": rng.randrange(100, 1_000_000) / 100, "status": rng.choice(STATUSES),
            "updated_at": _stamp(seq * 7)}  # fmt: skip


def encoded(events: Iterator[tuple[dict, dict]]) -> Iterator[tuple[bytes, bytes]]:
    for key, value in events:
        yield orjson.dumps(key), orjson.dumps(value)
