"""Quix Streams for W1 and W2: the same upsert output as deltaflow's jobs.

Each apply returns ``{"k": key, "v": value or None}``; the serializers below write
the key as JSON and a None value as a tombstone. Changelog topics are off (deltaflow
keeps its state in local LMDB only, Quix then keeps it in local RocksDB only). The
app stops itself once every input event has passed the counting step.
"""

from __future__ import annotations

import time
import uuid

import orjson
from quixstreams import Application
from quixstreams.models.serializers import Serializer

from bench.baselines import cents, money


class KeyOut(Serializer):
    def __call__(self, value, ctx):
        return orjson.dumps(value)


class ValueOut(Serializer):
    """Writes the ``v`` of a record; None becomes a tombstone."""

    def __call__(self, value, ctx):
        return None if value["v"] is None else orjson.dumps(value["v"])


class Stopper:
    """Counts input events; stops the app after the last one."""

    def __init__(self, app: Application, events: int) -> None:
        self.app, self.events, self.seen = app, events, 0
        self.first: float | None = None

    def __call__(self, value) -> None:
        if self.first is None:
            self.first = time.perf_counter()
        self.seen += 1
        if self.seen == self.events:
            self.app.stop()


def w1(change: dict) -> dict | None:
    after, before = change["after"], change["before"]
    if after is not None and after["status"] == "PAID":
        return {"k": {"order_id": after["order_id"]}, "v": {"order_id": after["order_id"],
                "merchant_id": after["merchant_id"], "amount": money(cents(after["amount"]))}}  # fmt: skip
    if before is not None and before["status"] == "PAID":
        return {"k": {"order_id": before["order_id"]}, "v": None}
    return None


def w2(change: dict, state) -> dict:
    image = change["after"] or change["before"]
    merchant = image["merchant_id"]
    count, total = state.get("g", (0, 0))
    if change["before"] is not None:
        count, total = count - 1, total - cents(change["before"]["amount"])
    if change["after"] is not None:
        count, total = count + 1, total + cents(change["after"]["amount"])
    key = {"merchant_id": merchant}
    if count == 0:
        state.delete("g")
        return {"k": key, "v": None}
    state.set("g", (count, total))
    return {"k": key, "v": {"merchant_id": merchant, "order_count": count,
                            "total_amount": money(total)}}  # fmt: skip


def run(workload: str, bootstrap: str, topics: dict[str, str], events: int, state_dir: str) -> dict:
    app = Application(
        broker_address=bootstrap, consumer_group=f"bench-quix-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest", state_dir=state_dir or None, use_changelog_topics=False,
        loglevel="WARNING",
        # tansu finishes a group join after about half the session timeout: the default
        # 45 s gives a 23 s join, 6 s a 3 s one (same for a plain confluent-kafka group)
        consumer_extra_config={"session.timeout.ms": 6000},
    )  # fmt: skip
    source = app.topic(topics["orders"], value_deserializer="json", key_deserializer="bytes")
    sink = app.topic(topics["out"], key_serializer=KeyOut(), value_serializer=ValueOut())
    sdf = app.dataframe(source)
    stopper = Stopper(app, events)
    if workload == "W1":
        sdf = sdf.update(stopper).apply(w1).filter(lambda r: r is not None)
    elif workload == "W2":
        sdf = sdf.group_by(lambda v: (v["after"] or v["before"])["merchant_id"], name="merchant")
        sdf = sdf.update(stopper).apply(w2, stateful=True)
    else:
        raise SystemExit(f"quix runs W1 and W2, not {workload}")
    sdf.to_topic(sink, key=lambda r: r["k"])
    started = time.perf_counter()
    app.run(sdf)
    ended = time.perf_counter()
    first = stopper.first or started
    # the consumer group join is slow on tansu; its time is reported apart
    return {"events": stopper.seen, "seconds": ended - first, "join_s": first - started}
