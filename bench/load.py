"""Generate the events once: Flink's debezium-json files, the broker topics, and the
final tables each workload must produce (the check of every system's output).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import orjson

from bench.data import Shape, encoded, item_events, order_events
from bench.kafka_io import produce_all, producer

CENT = Decimal("0.01")


@dataclass
class Dataset:
    shape: Shape
    files: dict[str, str]
    orders: dict[int, dict] = field(default_factory=dict)  # live orders at the end
    items: dict[tuple[int, int], dict] = field(default_factory=dict)  # live items at the end

    def events(self, workload: str) -> int:
        return self.shape.orders + (self.shape.items if workload.startswith(("W3", "W4")) else 0)


def write_files(shape: Shape, folder: Path) -> Dataset:
    """Writes ``<folder>/orders.json`` and ``items.json`` (one Debezium value per line,
    as Flink reads them) with the message keys in ``orders.keys`` / ``items.keys``."""
    folder.mkdir(parents=True, exist_ok=True)
    data = Dataset(
        shape, {"orders": str(folder / "orders.json"), "items": str(folder / "items.json")}
    )
    for name, events in (("orders", order_events(shape)), ("items", item_events(shape))):
        live = data.orders if name == "orders" else data.items
        with (
            open(folder / f"{name}.json", "wb") as values,
            open(folder / f"{name}.keys", "wb") as keys,
        ):
            for key, value in encoded(events):
                values.write(value + b"\n")
                keys.write(key + b"\n")
                _apply(live, name, orjson.loads(value))
    return data


def _apply(live: dict, name: str, change: dict) -> None:
    image = change["after"] or change["before"]
    key = image["order_id"] if name == "orders" else (image["merchant_id"], image["item_id"])
    if change["after"] is None:
        del live[key]
    else:
        live[key] = change["after"]


def produce_files(data: Dataset, bootstrap: str, topics: dict[str, str]) -> None:
    prod = producer(bootstrap)
    for name in ("orders", "items"):
        base = Path(data.files[name])
        with open(base, "rb") as values, open(base.with_suffix(".keys"), "rb") as keys:
            chunk: list[tuple[bytes, bytes]] = []
            for key, value in zip(keys, values, strict=True):
                chunk.append((key.rstrip(b"\n"), value.rstrip(b"\n")))
                if len(chunk) == 10_000:
                    produce_all(prod, topics[name], chunk)
                    chunk = []
            produce_all(prod, topics[name], chunk)
    prod.flush(120)


def money(value) -> Decimal:
    return Decimal(str(value)).quantize(CENT)


def expected(data: Dataset, workload: str) -> dict:
    """The final upsert table of ``workload``: key tuple -> value tuple."""
    if workload == "W1":
        return {(o["order_id"],): (o["order_id"], o["merchant_id"], money(o["amount"]))
                for o in data.orders.values() if o["status"] == "PAID"}  # fmt: skip
    if workload == "W2":
        groups: dict = {}
        for o in data.orders.values():
            count, total = groups.get(o["merchant_id"], (0, Decimal("0.00")))
            groups[o["merchant_id"]] = (count + 1, total + money(o["amount"]))
        return {(m,): (m, c, t) for m, (c, t) in groups.items()}
    if workload == "W4":
        return _w4(data)
    out = {}
    for o in data.orders.values():
        item = data.items.get((o["merchant_id"], o["item_id"]))
        if item is not None:
            out[(o["order_id"],)] = (o["order_id"], o["merchant_id"], o["item_id"],
                                     money(o["amount"]), item["item_name"], money(item["price"]))  # fmt: skip
    return out


def _w4(data: Dataset) -> dict:
    out = {}
    for o in data.orders.values():
        item = data.items.get((o["merchant_id"], o["item_id"]))
        first = data.items.get((o["merchant_id"], 0))
        if item is not None and first is not None:
            out[(o["order_id"],)] = (o["order_id"], o["merchant_id"], o["item_id"],
                                     money(o["amount"]), item["item_name"], money(item["price"]),
                                     first["item_name"])  # fmt: skip
    return out


def normalise(table: dict[bytes, bytes]) -> dict:
    """A folded upsert topic (JSON key and value) in the shape of ``expected``."""
    out = {}
    for key, value in table.items():
        k = tuple(orjson.loads(key).values())
        row = json.loads(value, parse_float=Decimal)
        out[k] = tuple(money(v) if isinstance(v, Decimal) else v for v in row.values())
    return out
