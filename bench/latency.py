"""End-to-end latency at a steady rate: W1 as a daemon (``deltaflow run``, unbounded).

A producer thread writes new PAID orders at a fixed rate, remembering when it
produced each order_id; the main thread consumes the sink topic and takes, for each
order_id, the time it was received minus the time it was produced (same clock).
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
from confluent_kafka import Consumer, Producer, TopicPartition

from bench import measure
from bench.data import _envelope, _order
from bench.jobs import kafka_job
from bench.kafka_io import create_topics

ROOT = Path(__file__).resolve().parent.parent


class Paced(threading.Thread):
    """Produces ``rate`` events per second for ``seconds``, in 1 ms steps."""

    def __init__(self, bootstrap: str, topic: str, rate: int, seconds: float, first_id: int):
        super().__init__(daemon=True)
        self.prod = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "log_level": 3})
        self.topic, self.rate, self.seconds, self.next_id = topic, rate, seconds, first_id
        self.stamps: dict[int, float] = {}
        self.rng = random.Random(11)

    def produce(self, count: int) -> None:
        for _ in range(count):
            oid = self.next_id
            self.next_id += 1
            after = dict(_order(self.rng, oid, oid % 100, oid % 50, oid), status="PAID")
            value = orjson.dumps(_envelope("orders", "c", None, after, oid))
            self.stamps[oid] = time.time()
            self.prod.produce(self.topic, value, orjson.dumps({"order_id": oid}))
        self.prod.poll(0)

    def run(self) -> None:
        start = time.perf_counter()
        sent = 0
        while (elapsed := time.perf_counter() - start) < self.seconds:
            due = int(elapsed * self.rate) - sent
            if due > 0:
                self.produce(due)
                sent += due
            time.sleep(0.001)
        self.prod.flush(30)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


VARIANTS = {
    # tansu holds a fetch for the whole fetch.wait.max.ms even when data is there (a
    # Kafka broker answers once fetch.min.bytes is reached); deltaflow's source
    # defaults it to 50 ms (librdkafka's default is 500 ms)
    "default": {},
    "fetch.wait.max.ms=500": {"properties.fetch.wait.max.ms": "500"},
    "fetch.wait.max.ms=10": {"properties.fetch.wait.max.ms": "10"},
}


def measure_latency(bootstrap: str, work: Path, rate: int, seconds: float, env=None) -> dict:
    """Each variant of the source options: p50/p99/max produce-to-sink milliseconds."""
    return {
        name: measure_variant(bootstrap, work, rate, seconds, env, options)
        for name, options in VARIANTS.items()
    }


def measure_variant(bootstrap: str, work: Path, rate: int, seconds: float, env, options) -> dict:
    tag = f"{int(time.time())}-{len(options)}"
    topics = {"orders": f"lat-orders-{tag}", "items": f"lat-items-{tag}", "out": f"lat-out-{tag}"}
    create_topics(bootstrap, [topics["orders"], topics["out"]])
    job = work / f"latency-{tag}.sql"
    job.write_text(kafka_job("W1", bootstrap, topics, False, options), encoding="utf-8")
    cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--quiet",
           "--state-dir", str(work / f"lat-state-{tag}")]  # fmt: skip
    daemon = subprocess.Popen(cmd, cwd=str(ROOT), stdin=subprocess.DEVNULL, env=env)
    sampler = measure.Sampler(daemon.pid)
    sampler.start()
    try:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-lat",
                             "fetch.wait.max.ms": 5, "log_level": 3})  # fmt: skip
        consumer.assign([TopicPartition(topics["out"], 0, 0)])
        warm = Paced(bootstrap, topics["orders"], 1000, 0.0, 1)
        warm.produce(10)
        warm.prod.flush(10)
        if not _wait_seen(consumer, set(warm.stamps), 60.0):
            return {"error": "the job produced no output within 60 s of start"}
        paced = Paced(bootstrap, topics["orders"], rate, seconds, 1_000_000)
        load = measure.load()
        paced.start()
        seen = _collect(consumer, paced, seconds + 10.0)
        consumer.close()
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
        sampler.done.set()
    lat = [(seen[k] - t) * 1000 for k, t in paced.stamps.items() if k in seen]
    if not lat:
        return {"error": "no output seen"}
    return {"rate": rate, "seconds": seconds, "produced": len(paced.stamps), "seen": len(lat),
            "p50_ms": percentile(lat, 0.50), "p99_ms": percentile(lat, 0.99),
            "max_ms": max(lat), "peak_rss_mb": sampler.peak / 2**20, "load": load}  # fmt: skip


def _wait_seen(consumer: Consumer, keys: set[int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while keys and time.monotonic() < deadline:
        for m in consumer.consume(1000, 0.2):
            if not m.error():
                keys.discard(orjson.loads(m.key())["order_id"])
    return not keys


def _collect(consumer: Consumer, paced: Paced, timeout: float) -> dict[int, float]:
    """order_id -> time first received at the sink, until all arrived or ``timeout``."""
    seen: dict[int, float] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msgs = consumer.consume(10_000, 0.05)
        now = time.time()
        for m in msgs:
            if not m.error():
                seen.setdefault(orjson.loads(m.key())["order_id"], now)
        if not paced.is_alive() and len(seen) >= len(paced.stamps):
            break
    return seen
