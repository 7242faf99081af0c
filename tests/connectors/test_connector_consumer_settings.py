"""The Kafka source's consumer settings: fetch defaults a user's properties.* override."""

from __future__ import annotations

from deltaflow.connectors.kafka_client import client_config, consumer_settings
from deltaflow.connectors.options import TableOptions


def settings(**props: str) -> dict:
    options = {"properties.bootstrap.servers": "b:9092"}
    options.update({f"properties.{k.replace('_', '.')}": v for k, v in props.items()})
    opts = TableOptions("t", "kafka", options, [], ["properties."])
    return consumer_settings(opts, client_config(opts, None))


def test_fetch_defaults() -> None:
    got = settings()
    # fetching resumes 10 ms after the prefetch queue had 20,000 messages (librdkafka:
    # 1000 ms after 100,000), and the broker may hold a fetch 50 ms (librdkafka: 500 ms)
    assert got["fetch.queue.backoff.ms"] == "10"
    assert got["queued.min.messages"] == "20000"
    assert got["fetch.wait.max.ms"] == "50"
    assert got["group.id"] == "deltaflow-t"


def test_properties_override_each_default_but_not_what_the_source_needs() -> None:
    got = settings(fetch_queue_backoff_ms="1000", queued_min_messages="100000",
                   fetch_wait_max_ms="500", enable_partition_eof="false")  # fmt: skip
    assert got["fetch.queue.backoff.ms"] == "1000"
    assert got["queued.min.messages"] == "100000"
    assert got["fetch.wait.max.ms"] == "500"
    assert got["enable.partition.eof"] is True  # bounded reads end on partition EOF
