"""librdkafka's log lines rate-limited: one per state, then how many repeats were left out.

The first tests drive the limiter with a clock of their own; the last points real
librdkafka clients at a port nobody listens on, where they log each failed connect.
"""

from __future__ import annotations

import io
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from deltaflow.connectors.broker import free_port
from deltaflow.connectors.kafka_logs import LogLimiter

REFUSED = (
    "FAIL [rdkafka#consumer-{n}] [thrd:127.0.0.1:9/bootstrap]: 127.0.0.1:9/bootstrap: Connect "
    "to ipv4#127.0.0.1:9 failed: Connection refused (after {ms}ms in state CONNECT)"
)
DOWN = "ERROR [rdkafka#consumer-1] [thrd:app]: 1/1 brokers are down"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def limiter() -> tuple[LogLimiter, io.StringIO, Clock]:
    out, clock = io.StringIO(), Clock()
    return LogLimiter(out, repeat_s=60.0, clock=clock), out, clock


def test_repeats_of_one_state_are_counted_not_printed():
    logs, out, clock = limiter()
    for i in range(40):  # consumer and producer, varying numbers: one state
        logs.log(40, REFUSED.format(n=1 + i % 2, ms=i % 3))
        clock.now += 0.05
    lines = out.getvalue().splitlines()
    assert lines == [f"deltaflow: librdkafka: {REFUSED.format(n=1, ms=0)}"]
    assert logs.suppressed == 39


def test_a_new_state_prints_the_count_of_the_last_one_first():
    logs, out, clock = limiter()
    for _ in range(5):
        logs.log(40, REFUSED.format(n=1, ms=0))
        clock.now += 1
    logs.log(40, DOWN)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[1].startswith("deltaflow: librdkafka: 4 more line(s) like 'FAIL [rdkafka#")
    assert lines[1].endswith("over 5 s, left out")
    assert lines[2] == f"deltaflow: librdkafka: {DOWN}"


def test_a_long_outage_prints_a_count_at_most_once_a_window():
    logs, out, clock = limiter()
    for _ in range(2400):  # 20 lines a second for 120 s
        logs.log(40, REFUSED.format(n=1, ms=0))
        clock.now += 0.05
    during = out.getvalue().splitlines()
    assert len(during) == 2, during  # the line, then a count after 60 s
    logs.flush()
    counts = [int(line.split()[2]) for line in out.getvalue().splitlines()[1:]]
    assert len(counts) == 2 and sum(counts) == 2399


def test_tick_and_flush_print_the_counts_due():
    logs, out, clock = limiter()
    logs.log(40, REFUSED.format(n=1, ms=0))
    logs.log(40, REFUSED.format(n=1, ms=0))
    clock.now += 30
    logs.tick()
    assert len(out.getvalue().splitlines()) == 1  # not due yet
    clock.now += 31
    logs.tick()
    assert out.getvalue().splitlines()[-1].startswith("deltaflow: librdkafka: 1 more line(s)")
    logs.flush()
    assert len(out.getvalue().splitlines()) == 2  # nothing left to count


def test_real_clients_at_a_dead_port_print_a_line_per_state():
    """librdkafka retries a refused connection every ~50 ms per client (about 80 lines in
    4 s from one consumer and one producer when they log to stderr)."""
    out = io.StringIO()
    logs = LogLimiter(out)
    servers = f"127.0.0.1:{free_port()}"
    conf = {"bootstrap.servers": servers, "log_level": 3, "logger": logs}
    consumer = Consumer({**conf, "group.id": "g"})
    producer = Producer(conf)
    consumer.assign([TopicPartition("t", 0, 0)])
    end = time.monotonic() + 4
    while time.monotonic() < end:
        consumer.poll(0.05)
        producer.poll(0)
    logs.flush()
    lines = out.getvalue().splitlines()
    assert logs.suppressed >= 30, lines
    assert len(lines) == 2, lines
    assert "Connection refused" in lines[0]
    assert lines[1].startswith(f"deltaflow: librdkafka: {logs.suppressed} more line(s) like")
    consumer.close()


def test_the_connections_of_every_client_to_one_cluster_are_one_state():
    logs, out, _ = limiter()
    for thread in (
        "GroupCoordinator]: GroupCoordinator: 127.0.0.1:9",
        "127.0.0.1:9/111]: 127.0.0.1:9/111",
    ):
        logs.log(40, f"FAIL [rdkafka#producer-2] [thrd:{thread}: Connect to ipv4#127.0.0.1:9 failed: "
                 "Connection refused (after 1ms in state CONNECT)")  # fmt: skip
    logs.log(40, REFUSED.format(n=1, ms=0))
    assert len(out.getvalue().splitlines()) == 1
    assert logs.suppressed == 2
