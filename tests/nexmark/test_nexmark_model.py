"""The Nexmark-model generator's rules, and every Nexmark query's plan in deltaflow (make test;
no Flink: the comparison with Flink is ``test_nexmark_flink.py``, run by ``make nexmark``)."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import nexmark_run as nr
import pytest

from bench import nexmark_gen as gen
from bench import nexmark_queries as nq
from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.planner.api import plan_job

CONFIG = gen.Config(seed=7, rate=500)
EVENTS = gen.events(5000, CONFIG)


def ms(stamp: str) -> int:
    return gen.parse_ms(stamp)


def body(event: dict) -> dict:
    return event[("person", "auction", "bid")[event["event_type"]]]


def test_kinds_come_in_nexmarks_proportions_and_the_other_objects_are_null():
    kinds = Counter(e["event_type"] for e in EVENTS)
    assert kinds == {0: 100, 1: 300, 2: 4600}  # 1:3:46 of 5,000
    for e in EVENTS:
        assert [e[k] is None for k in ("person", "auction", "bid")].count(False) == 1


def test_ids_are_dense_and_references_point_at_people_and_auctions_already_seen_or_near():
    people = [e["person"]["id"] for e in EVENTS if e["event_type"] == 0]
    auctions = [e["auction"]["id"] for e in EVENTS if e["event_type"] == 1]
    assert people == list(range(1000, 1100)) and auctions == list(range(1000, 1300))
    seen_people, top_auction = set(), 999
    for e in EVENTS:
        if e["event_type"] == 0:
            seen_people.add(e["person"]["id"])
        elif e["event_type"] == 1:
            top_auction = e["auction"]["id"]
            assert e["auction"]["seller"] in seen_people
            assert 10 <= e["auction"]["category"] <= 14
        else:
            assert e["bid"]["bidder"] in seen_people
            assert 1000 <= e["bid"]["auction"] <= top_auction + gen.AUCTION_LEAD


def test_time_advances_at_the_rate_out_of_order_by_less_than_the_watermark_delay():
    stamps = [ms(body(e)["dateTime"]) for e in EVENTS]
    assert stamps[-1] - stamps[0] == pytest.approx(len(EVENTS) * 1000 / CONFIG.rate, abs=2000)
    highest, early = stamps[0], 0
    for stamp in stamps:
        assert highest - stamp <= CONFIG.ooo_ms < 4000  # never behind the 4 s watermark
        early += stamp < highest
        highest = max(highest, stamp)
    assert early > len(EVENTS) // 20  # some events are out of order
    for e in EVENTS:
        if e["event_type"] == 1:
            a = e["auction"]
            assert 1000 <= ms(a["expires"]) - ms(a["dateTime"]) <= 2000 * CONFIG.auction_s
            assert a["reserve"] > a["initialBid"] >= 100


def test_channels_urls_and_prices_follow_the_model():
    bids = [e["bid"] for e in EVENTS if e["event_type"] == 2]
    named = [b for b in bids if b["channel"] in gen.CHANNELS]
    assert 0.85 < len(named) / len(bids) < 0.95
    for b in bids:
        parts = b["url"].split("/")
        assert parts[2] == "www.nexmark.com" and len(parts) == 7
        if b["channel"] not in gen.CHANNELS:
            assert b["url"].endswith(f"&channel_id={b['channel'].split('-')[1]}")
        assert 100 <= b["price"] <= 100_000_000
    assert min(b["price"] for b in bids) < 1000 and max(b["price"] for b in bids) > 10_000_000


def test_the_same_seed_gives_the_same_events_and_another_seed_others():
    assert gen.events(500, CONFIG) == EVENTS[:500]
    assert gen.events(500, gen.Config(seed=8, rate=500)) != EVENTS[:500]
    first = dt.datetime.strptime(EVENTS[0]["person"]["dateTime"], "%Y-%m-%d %H:%M:%S.%f")
    assert first == dt.datetime(2024, 1, 1, 10, 0)


SQL = {
    q: nr.deltaflow_sql(q, "localhost:9", {"datagen": "d", "side": "s"}, "out") for q in nq.NAMES
}
OPERATORS = {"q3": "Join(", "q4": "GroupAggregate(", "q5": "WindowJoin(", "q7": "Join(",
             "q8": "WindowJoin(", "q11": "SessionGroupWindow(", "q12": "time_col=[p_time]", "q13": "LookupJoin(",
             "q18": "Rank(", "q19": "Rank("}  # fmt: skip


@pytest.mark.parametrize("name", [q for q in nq.NAMES if q != "q6"])
def test_every_query_but_q6_plans(name):
    planned = plan_job(SQL[name])
    assert OPERATORS.get(name, "Sink(") in planned.explain()


def test_q6_is_refused_naming_the_line_and_column():
    with pytest.raises(DeltaflowError, match=r"SQL line \d+, column \d+"):
        plan_job(SQL["q6"])
