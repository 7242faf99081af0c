"""Kafka and upsert-kafka sinks, bad-input policies and dead letters, on the real broker."""

from __future__ import annotations

import json

import pytest
from connector_helpers import produce, read_all, read_topic, spec

from deltaflow.connectors.base import (
    create_sink,
    create_source,
    sink_accepted_mode,
    source_changelog_mode,
)
from deltaflow.connectors.kafka_client import ensure_topics
from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.errors import ConnectorError, FormatError

INS, UB, UA, D = (int(k) for k in RowKind)


def json_source(topic: str, **options):
    opts = {"connector": "kafka", "topic": topic, "format": "json",
            "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}  # fmt: skip
    opts.update(options)
    return spec("src", "id INT, name STRING", opts)


def test_json_sink_writes_values_and_keys_and_flushes(broker, new_topic):
    topic = new_topic("out")
    ensure_topics(broker, [topic])
    table = spec("out", "id INT, name STRING", {"connector": "kafka", "topic": topic, "format": "json",
                 "key.format": "json", "key.fields": "id"})  # fmt: skip
    assert sink_accepted_mode(table) == frozenset({RowKind.INSERT})
    sink = create_sink(table, bootstrap=broker)
    sink.write(Batch([INS, INS], [(1, "Alice"), (2, None)]))
    sink.flush(10)
    sink.close()
    got = [(json.loads(k), json.loads(v)) for k, v, _ in read_topic(broker, topic)]
    assert got == [({"id": 1}, {"id": 1, "name": "Alice"}), ({"id": 2}, {"id": 2, "name": None})]


def test_debezium_json_sink_accepts_every_kind_and_reads_back(broker, new_topic):
    topic = new_topic("dbzout")
    ensure_topics(broker, [topic])
    options = {"connector": "kafka", "topic": topic, "format": "debezium-json"}
    table = spec("out", "id INT, name STRING", options)
    assert sink_accepted_mode(table) == frozenset(RowKind)
    sink = create_sink(table, bootstrap=broker)
    changes = Batch([INS, UB, UA, D], [(1, "a"), (1, "a"), (1, "b"), (1, "b")])
    sink.write(changes)
    sink.flush(10)
    back = create_source(spec("in", "id INT, name STRING", dict(options, **{
        "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"})), bootstrap=broker)  # fmt: skip
    back.open()
    got = read_all(back)
    # Flink writes -U as a delete event and +U as a create event: the kinds read back are
    # +INS, -D, +INS, -D, and the table they describe is the same (empty).
    assert got.rows == changes.rows
    assert got.kinds == [INS, D, INS, D]


def test_round_robin_partitioner_spreads_records(broker, new_topic):
    topic = new_topic("rr")
    ensure_topics(broker, [topic], partitions=3)
    sink = create_sink(spec("out", "v STRING", {"connector": "kafka", "topic": topic, "format": "raw",
                            "sink.partitioner": "round-robin"}), bootstrap=broker)  # fmt: skip
    sink.write(Batch([INS] * 6, [(f"v{i}",) for i in range(6)]))
    sink.flush(10)
    assert [len(read_topic(broker, topic, p)) for p in range(3)] == [2, 2, 2]


def test_exactly_once_requires_a_transactional_id_prefix_as_in_flink(broker, new_topic):
    table = spec("out", "v STRING", {"connector": "kafka", "topic": new_topic("eo"), "format": "raw",
                 "sink.delivery-guarantee": "exactly-once"})  # fmt: skip
    with pytest.raises(ConnectorError, match="'sink.transactional-id-prefix' is required"):
        create_sink(table, bootstrap=broker)


def test_flush_to_unreachable_broker_raises_connector_error(new_topic):
    table = spec("out", "v STRING", {"connector": "kafka", "topic": new_topic("down"), "format": "raw",
                 "properties.message.timeout.ms": "1500"})  # fmt: skip
    sink = create_sink(table, bootstrap="127.0.0.1:1")
    sink.write(Batch([INS], [("x",)]))
    with pytest.raises(ConnectorError, match="table 'out'"):
        sink.flush(5)
    sink.close()


BAD = [(None, {"id": 1, "name": "a"}), (b"k2", b"{not json"), (None, {"id": 3, "name": "c"})]


def test_decode_failure_names_topic_partition_offset(broker, new_topic):
    topic = new_topic("bad")
    produce(broker, topic, BAD)
    source = create_source(json_source(topic), bootstrap=broker)
    source.open()
    with pytest.raises(FormatError) as info:
        read_all(source)
    err = info.value
    assert (err.topic, err.partition, err.offset) == (topic, 0, 1)
    assert f"topic '{topic}' partition 0 offset 1" in str(err)


def test_ignore_parse_errors_skips_and_counts(broker, new_topic):
    topic = new_topic("skip")
    produce(broker, topic, BAD)
    source = create_source(
        json_source(topic, **{"json.ignore-parse-errors": "true"}), bootstrap=broker
    )
    source.open()
    assert read_all(source).rows == [(1, "a"), (3, "c")]
    assert source.value_decoder.skipped == 1


@pytest.mark.parametrize("with_offset", [False, True])
def test_dead_letter_topic_gets_the_raw_record_with_its_origin(broker, new_topic, with_offset):
    topic, dlq = new_topic("dl"), new_topic("dlq")
    ensure_topics(broker, [dlq])
    produce(broker, topic, BAD)
    table = json_source(topic, **{"deadletter.topic": dlq})
    if with_offset:  # rows matched to their records one by one around the bad one
        table = spec("src", "id INT, name STRING", table.options, [("off", "offset", "BIGINT")])
    source = create_source(table, bootstrap=broker)
    source.open()
    expected = [(1, "a", 0), (3, "c", 2)] if with_offset else [(1, "a"), (3, "c")]
    assert read_all(source).rows == expected
    letters = read_topic(broker, dlq)
    assert len(letters) == 1
    key, value, headers = letters[0]
    assert (key, value) == (b"k2", b"{not json")
    assert headers["deltaflow.topic"] == topic.encode()
    assert (headers["deltaflow.partition"], headers["deltaflow.offset"]) == (b"0", b"1")
    assert headers["deltaflow.reason"]


def test_upsert_kafka_round_trip_with_tombstones(broker, new_topic):
    topic = new_topic("upsert")
    ensure_topics(broker, [topic])
    options = {
        "connector": "upsert-kafka",
        "topic": topic,
        "key.format": "json",
        "value.format": "json",
    }
    table = spec("totals", "id INT, name STRING, total BIGINT", options, primary_key=["id"])
    assert sink_accepted_mode(table) == frozenset(
        {RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.DELETE}
    )
    assert source_changelog_mode(table) == frozenset({RowKind.UPDATE_AFTER, RowKind.DELETE})
    sink = create_sink(table, bootstrap=broker)
    sink.write(
        Batch(
            [INS, INS, UB, UA, D],
            [(1, "a", 10), (2, "b", 5), (1, "a", 10), (1, "a", 30), (2, "b", 5)],
        )
    )
    sink.flush(10)
    raw = read_topic(broker, topic)
    # -U is a tombstone too, as Flink's upsert-kafka serialiser writes it
    assert [(json.loads(k), v and json.loads(v)) for k, v, _ in raw] == [
        ({"id": 1}, {"id": 1, "name": "a", "total": 10}),
        ({"id": 2}, {"id": 2, "name": "b", "total": 5}),
        ({"id": 1}, None),
        ({"id": 1}, {"id": 1, "name": "a", "total": 30}),
        ({"id": 2}, None),
    ]
    bounded = spec("totals", "id INT, name STRING, total BIGINT",
                   dict(options, **{"scan.bounded.mode": "latest-offset"}), primary_key=["id"])  # fmt: skip
    source = create_source(bounded, bootstrap=broker)
    source.open()
    back = read_all(source)
    assert back.pairs() == [
        (RowKind.UPDATE_AFTER, (1, "a", 10)),
        (RowKind.UPDATE_AFTER, (2, "b", 5)),
        (RowKind.DELETE, (1, None, None)),
        (RowKind.UPDATE_AFTER, (1, "a", 30)),
        (RowKind.DELETE, (2, None, None)),
    ]


def test_upsert_kafka_needs_a_primary_key(broker, new_topic):
    table = spec("t", "id INT, v STRING", {"connector": "upsert-kafka", "topic": new_topic("u"),
                 "key.format": "json", "value.format": "json"})  # fmt: skip
    with pytest.raises(ConnectorError, match="PRIMARY KEY"):
        create_sink(table, bootstrap=broker)


def test_upsert_kafka_except_key_value_and_key_prefix(broker, new_topic):
    topic = new_topic("upk")
    ensure_topics(broker, [topic])
    options = {"connector": "upsert-kafka", "topic": topic, "key.format": "json", "value.format": "json",
               "key.fields-prefix": "k_", "value.fields-include": "EXCEPT_KEY"}  # fmt: skip
    table = spec("t", "k_id INT, v STRING", options, primary_key=["k_id"])
    sink = create_sink(table, bootstrap=broker)
    sink.write(Batch([INS, D], [(7, "x"), (7, "x")]))
    sink.flush(10)
    raw = read_topic(broker, topic)
    assert [(json.loads(k), v and json.loads(v)) for k, v, _ in raw] == [
        ({"id": 7}, {"v": "x"}),
        ({"id": 7}, None),
    ]
    source = create_source(spec("t", "k_id INT, v STRING", dict(options, **{"scan.bounded.mode": "latest-offset"}),
                                primary_key=["k_id"]), bootstrap=broker)  # fmt: skip
    source.open()
    assert read_all(source).pairs() == [
        (RowKind.UPDATE_AFTER, (7, "x")),
        (RowKind.DELETE, (7, None)),
    ]


def test_delivery_guarantee_none_does_not_wait_in_flush(new_topic):
    table = spec("out", "v STRING", {"connector": "kafka", "topic": new_topic("none"), "format": "raw",
                 "sink.delivery-guarantee": "none"})  # fmt: skip
    sink = create_sink(table, bootstrap="127.0.0.1:1")
    sink.write(Batch([INS], [("x",)]))
    sink.flush(5)  # nothing acknowledged, and no error: 'none' promises nothing
    sink.close()


def test_sink_writes_timestamp_and_headers_metadata(broker, new_topic):
    import datetime as dt

    from confluent_kafka import Consumer, TopicPartition

    topic = new_topic("tsout")
    ensure_topics(broker, [topic])
    table = spec("out", "v STRING", {"connector": "kafka", "topic": topic, "format": "raw"},
                 [("ts", "timestamp", "TIMESTAMP_LTZ(3)"), ("h", "headers", "MAP<STRING, BYTES>")])  # fmt: skip
    sink = create_sink(table, bootstrap=broker)
    stamp = dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC)
    sink.write(Batch([INS], [("x", stamp, {"trace": b"42"})]))
    sink.flush(10)
    consumer = Consumer({"bootstrap.servers": broker, "group.id": "ts-check"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    msg = consumer.poll(10)
    consumer.close()
    assert msg.timestamp()[1] == 1704164645678
    assert dict(msg.headers()) == {"trace": b"42"}


def test_undecodable_key_sends_the_whole_record_to_the_dead_letter_topic(broker, new_topic):
    topic, dlq = new_topic("badkey"), new_topic("dlqk")
    ensure_topics(broker, [dlq])
    produce(
        broker,
        topic,
        [({"id": 1}, {"name": "a"}), (b"{oops", {"name": "b"}), (None, {"name": "c"})],
    )
    table = spec("users", "id INT, name STRING", {
        "connector": "kafka", "topic": topic, "key.format": "json", "key.fields": "id",
        "value.format": "json", "value.fields-include": "EXCEPT_KEY", "deadletter.topic": dlq,
        "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"})  # fmt: skip
    source = create_source(table, bootstrap=broker)
    source.open()
    # a record without a key has NULL key columns (as in Flink); a bad key drops the record
    assert read_all(source).rows == [(1, "a"), (None, "c")]
    [(key, value, headers)] = read_topic(broker, dlq)
    assert (key, json.loads(value)) == (b"{oops", {"name": "b"})
    assert headers["deltaflow.offset"] == b"1"
    assert headers["deltaflow.reason"].startswith(b"record key: ")


def test_upsert_buffer_flush_keeps_the_last_change_per_key(broker, new_topic):
    topic = new_topic("ubuf")
    ensure_topics(broker, [topic])
    options = {"connector": "upsert-kafka", "topic": topic, "key.format": "json", "value.format": "json",
               "sink.buffer-flush.max-rows": "100", "sink.buffer-flush.interval": "1 h"}  # fmt: skip
    table = spec("t", "id INT, total BIGINT", options, primary_key=["id"])
    sink = create_sink(table, bootstrap=broker)
    sink.write(Batch([INS, UB, UA, INS, D], [(1, 1), (1, 1), (1, 2), (2, 9), (2, 9)]))
    sink.flush(10)
    raw = read_topic(broker, topic)
    assert [(json.loads(k), v and json.loads(v)) for k, v, _ in raw] == [
        ({"id": 1}, {"id": 1, "total": 2}),
        ({"id": 2}, None),
    ]
    half = dict(options)
    del half["sink.buffer-flush.interval"]
    with pytest.raises(ConnectorError, match="sink.buffer-flush.interval"):
        create_sink(spec("t", "id INT, total BIGINT", half, primary_key=["id"]), bootstrap=broker)


def test_an_oversized_record_is_a_connector_error_naming_table_and_size(broker, new_topic):
    topic = new_topic("big")
    ensure_topics(broker, [topic])
    sink = create_sink(spec("out", "v STRING", {"connector": "kafka", "topic": topic, "format": "raw"}),
                       bootstrap=broker)  # fmt: skip
    with pytest.raises(
        ConnectorError, match="table 'out': a record of 2000000 bytes .*message.max.bytes"
    ):
        sink.write(Batch([INS], [("x" * 2_000_000,)]))
    sink.close()


def test_position_stays_before_a_batch_that_failed_to_decode(broker, new_topic):
    topic = new_topic("failpos")
    produce(broker, topic, BAD)
    source = create_source(json_source(topic), bootstrap=broker)
    source.open()
    with pytest.raises(FormatError):
        for _ in range(50):
            source.poll(10, 0.2)
    assert source.position()["offsets"][topic]["0"] in (0, 1)
    source.close()


def test_a_full_producer_queue_mid_batch_loses_and_repeats_nothing(broker, new_topic):
    """The key+value fast path stops at a full queue (3 records here); the rest of the
    batch waits for room and follows, each record once, in order."""
    topic = new_topic("full")
    ensure_topics(broker, [topic])
    table = spec("out", "id INT, name STRING", {"connector": "upsert-kafka", "topic": topic,
                 "key.format": "json", "value.format": "json",
                 "properties.queue.buffering.max.messages": "3"}, primary_key=["id"])  # fmt: skip
    sink = create_sink(table, bootstrap=broker)
    rows = [(i, f"n{i}") for i in range(10)]
    sink.write(Batch([INS] * 10, rows))
    sink.flush(10)
    sink.close()
    got = [(json.loads(k)["id"], json.loads(v)["name"]) for k, v, _ in read_topic(broker, topic)]
    assert got == [(i, f"n{i}") for i in range(10)]
