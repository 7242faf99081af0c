"""Nexmark-model events of our own, deterministic from a seed, as JSON in Nexmark's nested layout.

    python -m bench.nexmark_gen EVENTS OUT.jsonl [--seed N] [--rate EVENTS_PER_S]

The model follows the published Nexmark generator's rules, in code written here:

- Event ``n`` (from 0) is a person, an auction or a bid by its place in a cycle of 50: the
  first of each 50 is a person, the next 3 auctions, the other 46 bids (1:3:46).
- Ids are dense: person ids from 1000 and auction ids from 1000, each the number of earlier
  events of its kind plus 1000, so an id is known from the event number alone.
- An auction's seller is a "hot" person (the latest id rounded down to a multiple of 100)
  3 times in 4, else one of the last 1,000 people; its category is 10 to 14.
- A bid's auction is a hot one (the latest auction id rounded down to a multiple of 100)
  1 time in 2, else one of the last 100 auctions or up to 10 ahead of the latest (bids on
  auctions not yet seen, as in Nexmark); its bidder is hot 3 times in 4 like sellers.
- Prices are ``round(100 * 10**(6 u))`` for uniform u: 100 to 100,000,000, log-uniform.
- A bid's channel is one of Google, Facebook, Baidu, Apple 9 times in 10, with a URL of
  three random path segments; else ``channel-<k>`` with ``&channel_id=<k>`` in its URL.
- ``dateTime`` advances ``1000 / rate`` ms per event from 2024-01-01 10:00:00 UTC; one event
  in ``ooo_every`` is stamped up to ``ooo_ms`` earlier than its place (out of order, but by
  less than the 4 s of Nexmark's watermark delay, so no event is late). An auction
  expires 1 to ``2 * auction_s`` seconds after its ``dateTime``.

Timestamps are written as Flink's JSON format reads TIMESTAMP(3) by default
(``2024-01-01 10:00:00.000``). The two objects an event is not are null.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import sys
from dataclasses import dataclass

PERSON_PROPORTION, AUCTION_PROPORTION, BID_PROPORTION = 1, 3, 46
CYCLE = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION
FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID, CATEGORIES = 10, 5
HOT_BLOCK = 100  # hot ids are multiples of this (relative to the first id)
ACTIVE_PEOPLE, IN_FLIGHT_AUCTIONS, AUCTION_LEAD = 1000, 100, 10
CHANNELS = ["Google", "Facebook", "Baidu", "Apple"]
FIRST_NAMES = ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah",
               "Deiter", "Walter"]  # fmt: skip
LAST_NAMES = ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones",
              "Noris"]  # fmt: skip
CITIES = ["Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond",
          "Seattle", "Kent", "Cheyenne"]  # fmt: skip
STATES = ["AZ", "CA", "ID", "OR", "WA", "WY"]
START_MS = 1_704_103_200_000  # 2024-01-01 10:00:00 UTC


@dataclass(frozen=True)
class Config:
    seed: int = 1
    rate: float = 1000.0  # events per second of event time
    ooo_every: int = 7  # one event in this many is stamped early
    ooo_ms: int = 1500  # by at most this much (< the 4 s watermark delay)
    auction_s: float = 10.0  # mean auction length
    hot_auction_ratio: int = 2
    hot_person_ratio: int = 4


def kind_of(n: int) -> int:
    """0 person, 1 auction, 2 bid for event number ``n``."""
    offset = n % CYCLE
    return 0 if offset < PERSON_PROPORTION else 1 if offset < CYCLE - BID_PROPORTION else 2


def last_person(n: int) -> int:
    """The id of the latest person at or before event ``n``."""
    epoch, offset = divmod(n, CYCLE)
    return FIRST_PERSON_ID + epoch * PERSON_PROPORTION + min(offset, PERSON_PROPORTION - 1)


def last_auction(n: int) -> int:
    """The id of the latest auction at or before event ``n`` (the first one before any)."""
    epoch, offset = divmod(n, CYCLE)
    within = min(max(offset - PERSON_PROPORTION, 0), AUCTION_PROPORTION - 1)
    if offset < PERSON_PROPORTION and epoch > 0:  # before this epoch's first auction
        epoch, within = epoch - 1, AUCTION_PROPORTION - 1
    return FIRST_AUCTION_ID + epoch * AUCTION_PROPORTION + within


def _hot(latest: int, first: int) -> int:
    return first + (latest - first) // HOT_BLOCK * HOT_BLOCK


class Generator:
    def __init__(self, config: Config) -> None:
        self.c = config
        self.rng = random.Random(config.seed)

    def stamp(self, n: int) -> str:
        ms = START_MS + int(n * 1000 / self.c.rate)
        if n % self.c.ooo_every == self.c.ooo_every - 1:
            ms -= self.rng.randrange(0, self.c.ooo_ms + 1)
        return format_ms(ms)

    def text(self, length: int) -> str:
        return "".join(self.rng.choices("abcdefghijklmnopqrstuvwxyz", k=length))

    def person_id(self, n: int) -> int:
        latest = last_person(n)
        if self.rng.randrange(self.c.hot_person_ratio) > 0:
            return _hot(latest, FIRST_PERSON_ID)
        return max(FIRST_PERSON_ID, latest - self.rng.randrange(ACTIVE_PEOPLE))

    def price(self) -> int:
        return round(100 * 10 ** (6 * self.rng.random()))

    def person(self, n: int, stamp: str) -> dict:
        r = self.rng
        card = " ".join(f"{r.randrange(10000):04d}" for _ in range(4))
        return {"id": last_person(n), "name": f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)}",
                "emailAddress": f"{self.text(7)}@{self.text(5)}.com", "creditCard": card,
                "city": r.choice(CITIES), "state": r.choice(STATES), "dateTime": stamp,
                "extra": self.text(r.randrange(0, 12))}  # fmt: skip

    def auction(self, n: int, stamp: str, ms: int) -> dict:
        r = self.rng
        initial = self.price()
        length = r.randrange(1000, int(2000 * self.c.auction_s) + 1)
        return {"id": last_auction(n), "itemName": self.text(r.randrange(5, 21)),
                "description": self.text(r.randrange(10, 40)), "initialBid": initial,
                "reserve": initial + self.price(), "dateTime": stamp,
                "expires": format_ms(ms + length), "seller": self.person_id(n),
                "category": FIRST_CATEGORY_ID + r.randrange(CATEGORIES),
                "extra": self.text(r.randrange(0, 12))}  # fmt: skip

    def bid(self, n: int, stamp: str) -> dict:
        r = self.rng
        latest = last_auction(n)
        if r.randrange(self.c.hot_auction_ratio) > 0:
            auction = _hot(latest, FIRST_AUCTION_ID)
        else:
            low = max(FIRST_AUCTION_ID, latest - IN_FLIGHT_AUCTIONS)
            auction = low + r.randrange(latest - low + 1 + AUCTION_LEAD)
        path = f"https://www.nexmark.com/{self.text(5)}/{self.text(5)}/{self.text(5)}/item.htm"
        if r.randrange(10) > 0:
            channel, url = r.choice(CHANNELS), f"{path}?query=1"
        else:
            k = r.randrange(10000)
            channel, url = f"channel-{k}", f"{path}?query=1&channel_id={k}"
        return {"auction": auction, "bidder": self.person_id(n), "price": self.price(),
                "channel": channel, "url": url, "dateTime": stamp,
                "extra": self.text(r.randrange(0, 12))}  # fmt: skip

    def event(self, n: int) -> dict:
        stamp = self.stamp(n)
        kind = kind_of(n)
        event: dict = {"event_type": kind, "person": None, "auction": None, "bid": None}
        if kind == 0:
            event["person"] = self.person(n, stamp)
        elif kind == 1:
            event["auction"] = self.auction(n, stamp, parse_ms(stamp))
        else:
            event["bid"] = self.bid(n, stamp)
        return event


def events(count: int, config: Config | None = None) -> list[dict]:
    gen = Generator(config or Config())
    return [gen.event(n) for n in range(count)]


def format_ms(ms: int) -> str:
    seconds = dt.datetime.fromtimestamp(ms // 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"{seconds}.{ms % 1000:03d}"


def parse_ms(stamp: str) -> int:
    when = dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def write(path: str, count: int, config: Config | None = None) -> None:
    gen = Generator(config or Config())
    with open(path, "w", encoding="utf-8") as out:
        for n in range(count):
            out.write(json.dumps(gen.event(n), separators=(",", ":")) + "\n")


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.nexmark_gen")
    parser.add_argument("events", type=int)
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate", type=float, default=1000.0)
    args = parser.parse_args(argv)
    write(args.out, args.events, Config(seed=args.seed, rate=args.rate))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
