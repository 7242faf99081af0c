"""Seeded, valid Debezium histories over two related tables (``orders`` and ``customers``).

A history is a list of change events, each ``{"op", "before", "after"}`` with Python values
(Decimal, naive datetime, None). Every ``u`` and ``d`` carries the exact before-image of the
row it changes, so the history is a consistent changelog: inserts of new ids, re-inserts of
deleted ids, updates that change group keys, join keys, ids and plain columns, deletes,
and NULLs in every nullable column.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

ORDERS_DDL_COLUMNS = (
    "id INT", "cust INT", "product STRING", "amt DECIMAL(10, 2)", "qty INT",
    "ts TIMESTAMP(3)", "note STRING",
)  # fmt: skip
CUSTOMERS_DDL_COLUMNS = ("cid INT", "name STRING", "region STRING", "tier INT", "credit DOUBLE")
PAYMENTS_DDL_COLUMNS = (
    "pid INT", "oid INT", "paid_at TIMESTAMP_LTZ(3)", "channel STRING", "fee DOUBLE", "pay_day DATE",
)  # fmt: skip

RATES_DDL_COLUMNS = ("cur INT", "rate INT", "ts TIMESTAMP(3)")  # a versioned table: cur is its key

PRODUCTS = ("apple", "pear", "fig", "kiwi", "plum")
NOTES = ("rush", "gift wrap", " spaced ", "Ünïcode", "")
NAMES = ("Alice", "Bob", "Carol", "Dan", "Eve", "Frank")
REGIONS = ("north", "south", "east")
BASE_TS = dt.datetime(2024, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class Event:
    op: str  # c, u, d
    before: dict | None
    after: dict | None


def _maybe_null(rng: random.Random, value, p: float = 0.12):
    return None if rng.random() < p else value


class _Table:
    """Live rows of one table by id, and the ids deleted so far (for re-inserts)."""

    def __init__(self, rng: random.Random, key: str, make_row, change_row) -> None:
        self.rng, self.key = rng, key
        self.make_row, self.change_row = make_row, change_row
        self.live: dict[int, dict] = {}
        self.deleted: list[int] = []
        self.next_id = 1

    def step(self) -> Event:
        rng = self.rng
        roll = rng.random()
        if not self.live or roll < 0.45:
            return self._insert()
        if roll < 0.8:
            return self._update()
        return self._delete()

    def _insert(self) -> Event:
        if self.deleted and self.rng.random() < 0.35:
            ident = self.deleted.pop(self.rng.randrange(len(self.deleted)))
        else:
            ident, self.next_id = self.next_id, self.next_id + 1
        row = self.make_row(ident)
        self.live[ident] = row
        return Event("c", None, dict(row))

    def _update(self) -> Event:
        ident = self.rng.choice(sorted(self.live))
        before = self.live.pop(ident)
        after = self.change_row(dict(before))
        if self.rng.random() < 0.1:  # the id itself changes (a table without a declared key)
            after[self.key] = self.next_id
            self.next_id += 1
            self.deleted.append(ident)
        self.live[after[self.key]] = after
        return Event("u", dict(before), dict(after))

    def _delete(self) -> Event:
        ident = self.rng.choice(sorted(self.live))
        before = self.live.pop(ident)
        self.deleted.append(ident)
        return Event("d", dict(before), None)


def _amount(rng: random.Random) -> Decimal:
    return Decimal(rng.randrange(0, 10_000)).scaleb(-2)


def orders_history(seed: int, n: int) -> list[Event]:
    rng = random.Random(f"orders-{seed}")
    clock = [0]

    def timestamp() -> dt.datetime:
        clock[0] += rng.randrange(0, 4000)  # ms; some events share a timestamp
        return BASE_TS + dt.timedelta(milliseconds=clock[0] + rng.choice((0, 0, 0, -1500)))

    def make(ident: int) -> dict:
        return {
            "id": ident,
            "cust": _maybe_null(rng, rng.randint(1, 4)),
            "product": _maybe_null(rng, rng.choice(PRODUCTS)),
            "amt": _maybe_null(rng, _amount(rng)),
            "qty": rng.randint(1, 5),
            "ts": timestamp(),
            "note": _maybe_null(rng, rng.choice(NOTES), 0.4),
        }

    def change(row: dict) -> dict:
        fields = rng.sample(("cust", "product", "amt", "qty", "ts", "note"), rng.randint(1, 3))
        fresh = make(row["id"])
        for name in fields:
            row[name] = fresh[name]
        return row

    return _run(_Table(rng, "id", make, change), n)


def customers_history(seed: int, n: int) -> list[Event]:
    rng = random.Random(f"customers-{seed}")

    def make(ident: int) -> dict:
        return {
            "cid": ident,
            "name": rng.choice(NAMES),
            "region": _maybe_null(rng, rng.choice(REGIONS)),
            "tier": _maybe_null(rng, rng.randint(1, 3)),
            "credit": _maybe_null(rng, rng.randrange(0, 400) / 4),
        }

    def change(row: dict) -> dict:
        fresh = make(row["cid"])
        for name in rng.sample(("name", "region", "tier", "credit"), rng.randint(1, 2)):
            row[name] = fresh[name]
        return row

    table = _Table(rng, "cid", make, change)
    table.next_id = 1
    return _run(table, n)


def payments_history(seed: int, n: int) -> list[Event]:
    rng = random.Random(f"payments-{seed}")
    clock = [0]

    def make(ident: int) -> dict:
        clock[0] += rng.randrange(0, 3_000_000)  # ms: payments span a few hours and days
        paid = BASE_TS.replace(tzinfo=dt.UTC) + dt.timedelta(milliseconds=clock[0])
        return {
            "pid": ident,
            "oid": _maybe_null(rng, rng.randint(1, 12)),
            "paid_at": paid,
            "channel": _maybe_null(rng, rng.choice(("card", "cash", "voucher"))),
            "fee": _maybe_null(rng, rng.randrange(0, 40) / 8),
            "pay_day": _maybe_null(
                rng, dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 40))
            ),
        }

    def change(row: dict) -> dict:
        fresh = make(row["pid"])
        for name in rng.sample(("oid", "channel", "fee", "pay_day"), rng.randint(1, 2)):
            row[name] = fresh[name]
        return row

    return _run(_Table(rng, "pid", make, change), n)


def rates_history(seed: int, n: int) -> list[Event]:
    """Versions of a rate per currency (1-4, orders' cust values) over the orders' time span:
    inserts, updates that move the time forward, deletes."""
    rng = random.Random(f"rates-{seed}")
    clock = [0]

    def make(ident: int) -> dict:
        clock[0] += rng.randrange(0, 6000)
        return {"cur": ident, "rate": rng.randint(1, 9),
                "ts": BASE_TS + dt.timedelta(milliseconds=clock[0])}  # fmt: skip

    def change(row: dict) -> dict:
        return make(row["cur"])

    table = _Table(rng, "cur", make, change)
    events = []
    for _ in range(n):
        if table.next_id > 4 and not table.deleted:
            events.append(table._update() if table.live else table._insert())
        else:
            events.append(table.step())
    return [e for e in events if (e.after or e.before)["cur"] <= 4]


def _run(table: _Table, n: int) -> list[Event]:
    return [table.step() for _ in range(n)]


# -- Debezium JSON -------------------------------------------------------------------------


def _json_value(value):
    if isinstance(value, Decimal):
        return float(value)  # repr of a 2-digit float is the exact decimal text
    if isinstance(value, dt.datetime):  # Flink's SQL timestamp format; TIMESTAMP_LTZ ends in Z
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        text += f".{value.microsecond // 1000:03d}" if value.microsecond else ""
        return text + ("Z" if value.tzinfo is not None else "")
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _image(row: dict | None) -> dict | None:
    return None if row is None else {k: _json_value(v) for k, v in row.items()}


def event_line(event: Event, table: str, position: int) -> str:
    envelope = {
        "before": _image(event.before),
        "after": _image(event.after),
        "source": {"connector": "postgresql", "db": "shop", "schema": "public", "table": table},
        "op": event.op,
        "ts_ms": 1704067200000 + position,
    }
    return json.dumps(envelope, ensure_ascii=False)


def write_history(path: Path, events: list[Event], table: str, plain: bool = False) -> None:
    """Debezium JSON lines, or (``plain``, for append-only sources) each insert's row."""
    if plain:
        text = "".join(json.dumps(_image(e.after), ensure_ascii=False) + "\n" for e in events)
    else:
        text = "".join(event_line(e, table, i) + "\n" for i, e in enumerate(events))
    path.write_text(text, encoding="utf-8")


def write_rows(path: Path, events: list[Event]) -> None:
    """An insert-only input for the 'json' format: the new image of every insert and
    update, in order (deletes have none)."""
    rows = [json.dumps(_image(e.after), ensure_ascii=False) + "\n" for e in events if e.after]
    path.write_text("".join(rows), encoding="utf-8")


def tied(events: list[Event], tie_ms: int) -> list[Event]:
    """The events with ``ts`` rounded down to a multiple of ``tie_ms`` (0: unchanged)."""
    if not tie_ms:
        return events
    step = dt.timedelta(milliseconds=tie_ms)

    def floor(row: dict | None) -> dict | None:
        if row is None or row.get("ts") is None:
            return row
        return {**row, "ts": BASE_TS + (row["ts"] - BASE_TS) // step * step}

    return [Event(e.op, floor(e.before), floor(e.after)) for e in events]


def history_to_json(events: list[Event]) -> list[dict]:
    """Events as plain JSON data (for regression files)."""
    return [{"op": e.op, "before": _image(e.before), "after": _image(e.after)} for e in events]


def events_from_json(items: list[dict]) -> list[Event]:
    """The inverse of history_to_json as far as the files need it (values stay JSON values)."""
    return [Event(i["op"], i["before"], i["after"]) for i in items]
