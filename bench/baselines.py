"""The floor (W0, W0b) and the hand-written confluent-kafka + msgspec loops (W1-W3).

What a careful engineer writes without a framework: typed partial decoding with
msgspec, dicts for state, the Debezium before-image for retractions, one output
record per changed key per consumed batch, orjson for output. Amounts are kept as
integer cents, so sums are exact.
"""

from __future__ import annotations

import msgspec
import orjson

from bench.kafka_io import produce_all, producer, read_values

PAID = "PAID"


class Order(msgspec.Struct, array_like=False):
    order_id: int
    merchant_id: int
    item_id: int
    amount: float
    status: str
    updated_at: str


class OrderChange(msgspec.Struct):
    op: str
    before: Order | None = None
    after: Order | None = None


class Item(msgspec.Struct):
    merchant_id: int
    item_id: int
    item_name: str
    price: float


class ItemChange(msgspec.Struct):
    op: str
    before: Item | None = None
    after: Item | None = None


ORDERS = msgspec.json.Decoder(OrderChange)
ITEMS = msgspec.json.Decoder(ItemChange)


def cents(value: float) -> int:
    return round(value * 100)


def money(c: int) -> orjson.Fragment:
    sign = "-" if c < 0 else ""
    return orjson.Fragment(f"{sign}{abs(c) // 100}.{abs(c) % 100:02d}".encode())


def w0(bootstrap: str, topics: dict[str, str], produce: bool) -> int:
    """Consume and decode every order change; with ``produce`` also write each after-image."""
    decode, encode = ORDERS.decode, msgspec.json.encode
    prod = producer(bootstrap) if produce else None
    n = 0
    for msgs in read_values(bootstrap, topics["orders"]):
        changes = [decode(m.value()) for m in msgs]
        n += len(changes)
        if prod is not None:
            out = [
                (m.key(), encode(c.after) if c.after else None)
                for m, c in zip(msgs, changes, strict=True)
            ]
            produce_all(prod, topics["out"], out)
    if prod is not None:
        prod.flush(60)
    return n


def w1(bootstrap: str, topics: dict[str, str]) -> int:
    """Live orders with status PAID, keyed by order_id; a row leaving the filter is deleted."""
    decode, dumps = ORDERS.decode, orjson.dumps
    prod = producer(bootstrap)
    n = 0
    for msgs in read_values(bootstrap, topics["orders"]):
        out: dict[int, bytes | None] = {}
        for m in msgs:
            c = decode(m.value())
            a, b = c.after, c.before
            if a is not None and a.status == PAID:
                out[a.order_id] = dumps({"order_id": a.order_id, "merchant_id": a.merchant_id,
                                         "amount": money(cents(a.amount))})  # fmt: skip
            elif b is not None and b.status == PAID:
                out[b.order_id] = None
        n += len(msgs)
        produce_all(prod, topics["out"], [(dumps({"order_id": k}), v) for k, v in out.items()])
    prod.flush(60)
    return n


def w2(bootstrap: str, topics: dict[str, str]) -> int:
    """COUNT(*) and SUM(amount) per merchant, retracting each before-image."""
    decode, dumps = ORDERS.decode, orjson.dumps
    prod = producer(bootstrap)
    groups: dict[int, list[int]] = {}
    n = 0
    for msgs in read_values(bootstrap, topics["orders"]):
        dirty: set[int] = set()
        for m in msgs:
            c = decode(m.value())
            if c.before is not None:
                g = groups[c.before.merchant_id]
                g[0] -= 1
                g[1] -= cents(c.before.amount)
                dirty.add(c.before.merchant_id)
            if c.after is not None:
                g = groups.setdefault(c.after.merchant_id, [0, 0])
                g[0] += 1
                g[1] += cents(c.after.amount)
                dirty.add(c.after.merchant_id)
        n += len(msgs)
        out = []
        for merchant in dirty:
            count, total = groups[merchant]
            key = dumps({"merchant_id": merchant})
            if count == 0:
                del groups[merchant]
                out.append((key, None))
            else:
                out.append((key, dumps({"merchant_id": merchant, "order_count": count,
                                        "total_amount": money(total)})))  # fmt: skip
        produce_all(prod, topics["out"], out)
    prod.flush(60)
    return n


class JoinState:
    """Orders JOIN items on (merchant_id, item_id), upserted by order_id.

    Invariant: an order is in the sink exactly when its item exists now.
    """

    def __init__(self) -> None:
        self.items: dict[tuple[int, int], tuple[str, int]] = {}
        self.by_item: dict[tuple[int, int], dict[int, int]] = {}
        self.out: dict[int, bytes | None] = {}

    def row(self, oid: int, key: tuple[int, int], amount: int) -> bytes:
        name, price = self.items[key]
        return orjson.dumps({"order_id": oid, "merchant_id": key[0], "item_id": key[1],
                             "amount": money(amount), "item_name": name,
                             "price": money(price)})  # fmt: skip

    def order(self, c: OrderChange) -> None:
        b, a = c.before, c.after
        was = False
        if b is not None:
            bkey = (b.merchant_id, b.item_id)
            orders = self.by_item[bkey]
            del orders[b.order_id]
            if not orders:
                del self.by_item[bkey]
            was = bkey in self.items
        if a is not None:
            akey, amount = (a.merchant_id, a.item_id), cents(a.amount)
            self.by_item.setdefault(akey, {})[a.order_id] = amount
            if akey in self.items:
                self.out[a.order_id] = self.row(a.order_id, akey, amount)
                return
        if was:
            self.out[(b or a).order_id] = None

    def item(self, c: ItemChange) -> None:
        image = c.after or c.before
        key = (image.merchant_id, image.item_id)
        orders = self.by_item.get(key, {})
        if c.after is None:
            del self.items[key]
            for oid in orders:
                self.out[oid] = None
            return
        self.items[key] = (c.after.item_name, cents(c.after.price))
        for oid, amount in orders.items():
            self.out[oid] = self.row(oid, key, amount)


def w3(bootstrap: str, topics: dict[str, str]) -> int:
    decode_order, decode_item, dumps = ORDERS.decode, ITEMS.decode, orjson.dumps
    prod = producer(bootstrap)
    state = JoinState()
    orders_topic = topics["orders"]
    n = 0
    for msgs in read_values(bootstrap, orders_topic, topics["items"]):
        for m in msgs:
            if m.topic() == orders_topic:
                state.order(decode_order(m.value()))
            else:
                state.item(decode_item(m.value()))
        n += len(msgs)
        out, state.out = state.out, {}
        produce_all(prod, topics["out"], [(dumps({"order_id": k}), v) for k, v in out.items()])
    prod.flush(60)
    return n


RUN = {"W0": lambda b, t: w0(b, t, False), "W0b": lambda b, t: w0(b, t, True),
       "W1": w1, "W2": w2, "W3": w3, "W3S": w3}  # fmt: skip
