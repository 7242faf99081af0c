"""An at-least-once RecordWriter whose brokers do not answer (a port nobody listens on):
its flush and its wait for room in a full queue end with the job's patience - after a
stop with "asked to stop", after the broker timeout naming the setting - as a
ConnectorError naming the table, and never after librdkafka's own timeouts."""

from __future__ import annotations

import threading
import time

import pytest

from deltaflow.connectors import patience as patience_module
from deltaflow.connectors.broker import free_port
from deltaflow.connectors.kafka_sink import RecordWriter
from deltaflow.connectors.options import TableOptions
from deltaflow.connectors.patience import Patience
from deltaflow.formats.errors import ConnectorError


def writer(**properties) -> RecordWriter:
    conf = {"bootstrap.servers": f"127.0.0.1:{free_port()}", "log_level": 0, **properties}
    opts = TableOptions("out", "kafka", {"topic": "t"}, ["topic"], ["properties."])
    return RecordWriter(opts, conf, "t", "at-least-once", "default")


def bound(made: RecordWriter, stop: threading.Event, timeout_s: float = 600) -> RecordWriter:
    made.bind_patience(lambda servers: Patience(timeout_s, stop))
    return made


def test_a_stop_ends_a_flush_that_waits_for_unreachable_brokers(monkeypatch):
    monkeypatch.setattr(patience_module, "STOP_GRACE_S", 0.5)
    stop = threading.Event()
    out = bound(writer(), stop)
    out.produce([b"k"], [b"v"])
    threading.Timer(0.5, stop.set).start()
    began = time.monotonic()
    with pytest.raises(ConnectorError, match=r"'out': the job was asked to stop while waiting "
                       r"to have the records to topic 't' acknowledged \(1 record"):  # fmt: skip
        out.flush(600)
    assert time.monotonic() - began < 3
    began = time.monotonic()
    out.close()  # the wait was given up: the queue is dropped, not flushed for 10 s
    assert time.monotonic() - began < 1


def test_the_broker_timeout_ends_a_flush_naming_the_setting():
    out = bound(writer(), threading.Event())
    out.produce([b"k"], [b"v"])
    began = time.monotonic()
    with pytest.raises(ConnectorError, match=r"within 'deltaflow.broker.timeout' = 1 s"):
        out.flush(1)
    assert time.monotonic() - began < 3
    out.close()


def test_a_stop_ends_the_wait_for_room_in_a_full_queue(monkeypatch):
    monkeypatch.setattr(patience_module, "STOP_GRACE_S", 0.5)
    stop = threading.Event()
    out = bound(writer(**{"queue.buffering.max.messages": 2}), stop)
    threading.Timer(0.5, stop.set).start()
    began = time.monotonic()
    with pytest.raises(ConnectorError, match="asked to stop while waiting to find room"):
        out.produce([b"k"] * 3, [b"v"] * 3)
    assert time.monotonic() - began < 3
    out.close()


def test_an_empty_queue_needs_no_broker_even_when_stopped():
    stop = threading.Event()
    stop.set()
    out = bound(writer(), stop)
    began = time.monotonic()
    out.flush(600)
    assert time.monotonic() - began < 0.5
    out.close()
