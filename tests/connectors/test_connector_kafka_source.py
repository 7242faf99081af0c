"""The Kafka source on the real embedded broker: formats, bounds, startup modes, resume."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from connector_helpers import produce, read_all, spec

from deltaflow.connectors.base import create_source, source_changelog_mode
from deltaflow.connectors.kafka_client import ensure_topics
from deltaflow.formats.changelog import RowKind
from deltaflow.formats.errors import ConnectorError
from deltaflow.formats.printing import row_printer

DATA = Path(__file__).parent.parent / "data" / "debezium"
PRODUCTS = "id BIGINT, name STRING, description STRING, weight DECIMAL(10, 2)"


def raw_table(topic: str, **options) -> object:
    opts = {"connector": "kafka", "topic": topic, "format": "raw",
            "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}  # fmt: skip
    opts.update(options)
    return spec("t", "v STRING", opts)


def values(batch) -> list[str]:
    return [r[0] for r in batch.rows]


def _records(n: int, base_ts: int = 1000):
    return [(None, f"r{i}", base_ts + i) for i in range(n)]


def test_bounded_read_over_several_record_batches_returns_every_record(broker, new_topic):
    topic = new_topic("batches")
    ensure_topics(broker, [topic], partitions=2)
    produce(broker, topic, _records(15), partition=0, flush_each=5)
    produce(broker, topic, [(None, f"p1-{i}") for i in range(7)], partition=1, flush_each=3)
    source = create_source(raw_table(topic), bootstrap=broker)
    source.open()
    batch = read_all(source, max_records=4)
    assert sorted(values(batch)) == sorted(
        [f"r{i}" for i in range(15)] + [f"p1-{i}" for i in range(7)]
    )
    assert [v for v in values(batch) if v.startswith("r")] == [f"r{i}" for i in range(15)]
    assert source.progress() == (22, 22)
    position = source.position()
    assert position["offsets"] == {topic: {"0": 15, "1": 7}}
    assert position["ends"] == {topic: {"0": 15, "1": 7}}
    source.close()


def test_bounded_read_of_empty_topic_finishes_at_once(broker, new_topic):
    topic = new_topic("empty")
    ensure_topics(broker, [topic])
    source = create_source(raw_table(topic), bootstrap=broker)
    source.open()
    assert source.finished()
    assert len(source.poll(10, 0.1)) == 0


def test_debezium_json_matches_flink_changelog(broker, new_topic):
    topic = new_topic("dbz")
    lines = (DATA / "debezium-data-schema-exclude.txt").read_bytes().splitlines()
    produce(broker, topic, [(None, line) for line in lines], flush_each=4)
    table = spec("products", PRODUCTS, {"connector": "kafka", "topic": topic, "format": "debezium-json",
                 "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"})  # fmt: skip
    assert source_changelog_mode(table) == frozenset(RowKind)
    source = create_source(table, bootstrap=broker)
    assert source.changelog_mode == frozenset(RowKind)
    source.open()
    batch = read_all(source, max_records=5)
    show = row_printer([t for _, t in table.physical])
    got = [show(k, r) for k, r in zip(batch.kinds, batch.rows, strict=True)]
    expected = (DATA / "debezium-data-schema-exclude.txt.changelog.txt").read_text().splitlines()
    assert got == expected


def test_format_and_record_metadata_columns(broker, new_topic):
    topic = new_topic("meta")
    lines = (DATA / "debezium-data-schema-exclude.txt").read_bytes().splitlines()
    produce(broker, topic, [(b"k", line, 5000 + i, [("h", b"x")]) for i, line in enumerate(lines)])
    meta = [("origin_ts", "value.source.timestamp", "TIMESTAMP_LTZ(3)"),
            ("off", "offset", "BIGINT"), ("event_time", "value.ingestion-timestamp", "TIMESTAMP_LTZ(3)"),
            ("origin_database", "value.source.database", "STRING"), ("tp", "topic", "STRING"),
            ("part", "partition", "INT"), ("ts", "timestamp", "TIMESTAMP_LTZ(3)"),
            ("hdr", "headers", "MAP<STRING, BYTES>")]  # fmt: skip
    table = spec("products", PRODUCTS, {"connector": "kafka", "topic": topic, "format": "debezium-json",
                 "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}, meta)  # fmt: skip
    source = create_source(table, bootstrap=broker)
    source.open()
    batch = read_all(source)
    expected = (
        (DATA / "debezium-data-schema-exclude.txt.metadata.changelog.txt").read_text().splitlines()
    )
    show = row_printer([t for _, t in table.physical] + [table.metadata[i][2] for i in (0, 2, 3)])
    got = [show(k, r[:5] + (r[6], r[7])) for k, r in zip(batch.kinds, batch.rows, strict=True)]
    flink = [line.rsplit(", ", 2)[0] + "]" for line in expected]  # drop origin_schema, origin_table
    assert got == flink
    # line 11 of the file is the first update: its -U and +U share offset 10
    offsets = [r[5] for r in batch.rows]
    assert offsets == sorted(offsets) and offsets.count(10) == 2
    first = batch.rows[0]
    assert first[8:11] == (topic, 0, dt.datetime(1970, 1, 1, 0, 0, 5, tzinfo=dt.UTC))
    assert first[11] == {"h": b"x"}


def test_startup_specific_offsets_and_bounded_specific_offsets(broker, new_topic):
    topic = new_topic("spec")
    produce(broker, topic, _records(12), flush_each=5)
    table = raw_table(topic, **{"scan.startup.mode": "specific-offsets",
                                "scan.startup.specific-offsets": "partition:0,offset:3",
                                "scan.bounded.mode": "specific-offsets",
                                "scan.bounded.specific-offsets": "partition:0,offset:9"})  # fmt: skip
    source = create_source(table, bootstrap=broker)
    source.open()
    assert values(read_all(source)) == [f"r{i}" for i in range(3, 9)]


def test_startup_timestamp_and_bounded_timestamp(broker, new_topic):
    topic = new_topic("ts")
    produce(broker, topic, _records(15), flush_each=5)
    table = raw_table(topic, **{"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "1007",
                                "scan.bounded.mode": "timestamp",
                                "scan.bounded.timestamp-millis": "1012"})  # fmt: skip
    source = create_source(table, bootstrap=broker)
    source.open()
    assert values(read_all(source)) == [f"r{i}" for i in range(7, 12)]
    again = create_source(raw_table(topic), bootstrap=broker, start="timestamp:1013")
    again.open()
    assert values(read_all(again)) == ["r13", "r14"]


def test_latest_offset_startup_reads_only_new_records(broker, new_topic):
    topic = new_topic("latest")
    produce(broker, topic, _records(9), flush_each=4)
    table = raw_table(
        topic, **{"scan.startup.mode": "latest-offset", "scan.bounded.mode": "unbounded"}
    )
    source = create_source(table, bootstrap=broker)
    source.open()
    assert source.position()["offsets"] == {topic: {"0": 9}}
    produce(broker, topic, [(None, "new1"), (None, "new2")])
    got = []
    for _ in range(50):
        got += values(source.poll(100, 0.2))
        if len(got) >= 2:
            break
    assert got == ["new1", "new2"]
    assert not source.finished()
    source.close()


def test_resume_from_position_continues_without_gaps_or_duplicates(broker, new_topic):
    topic = new_topic("resume")
    ensure_topics(broker, [topic], partitions=2)
    produce(broker, topic, _records(10), partition=0, flush_each=3)
    produce(broker, topic, [(None, f"b{i}") for i in range(6)], partition=1, flush_each=2)
    first = create_source(raw_table(topic), bootstrap=broker)
    first.open()
    seen = []
    while len(seen) < 5:
        seen += values(first.poll(3, 0.2))
    saved = first.position()
    first.close()
    produce(broker, topic, [(None, "later")], partition=None)  # after the end the read began with
    second = create_source(raw_table(topic), bootstrap=broker)
    second.open(saved)
    rest = values(read_all(second))
    assert sorted(seen + rest) == sorted([f"r{i}" for i in range(10)] + [f"b{i}" for i in range(6)])


def test_group_offsets_start_from_committed_position(broker, new_topic):
    topic = new_topic("group")
    group = new_topic("grp")
    produce(broker, topic, _records(6))
    table = raw_table(topic, **{"properties.group.id": group})
    first = create_source(table, bootstrap=broker)
    first.open()
    got = []
    while not first.finished():
        got += values(first.poll(100, 0.2))
    assert len(got) == 6
    first.position()  # a checkpoint commits the position to the group
    first.close()
    produce(broker, topic, [(None, "after")])
    committed = raw_table(
        topic, **{"properties.group.id": group, "scan.startup.mode": "group-offsets"}
    )
    second = create_source(committed, bootstrap=broker)
    second.open()
    assert values(read_all(second)) == ["after"]
    third = create_source(raw_table(topic, **{"properties.group.id": group}), bootstrap=broker,
                          start="committed")  # fmt: skip
    third.open()
    assert values(read_all(third)) == ["after"]


def test_group_offsets_without_commit_or_reset_is_a_clear_error(broker, new_topic):
    topic = new_topic("nogroup")
    produce(broker, topic, _records(2))
    table = raw_table(
        topic, **{"properties.group.id": new_topic("g"), "scan.startup.mode": "group-offsets"}
    )
    source = create_source(table, bootstrap=broker)
    with pytest.raises(ConnectorError, match="auto.offset.reset"):
        source.open()
    reset = raw_table(topic, **{"properties.group.id": new_topic("g"), "scan.startup.mode": "group-offsets",
                                "properties.auto.offset.reset": "earliest"})  # fmt: skip
    ok = create_source(reset, bootstrap=broker)
    ok.open()
    assert values(read_all(ok)) == ["r0", "r1"]


def test_offsets_override_and_bad_override(broker, new_topic):
    topic = new_topic("ovr")
    produce(broker, topic, _records(5))
    source = create_source(raw_table(topic), bootstrap=broker, start=f"offsets:{topic}:0:3")
    source.open()
    assert values(read_all(source)) == ["r3", "r4"]
    with pytest.raises(ConnectorError, match="timestamp:MS"):
        create_source(raw_table(topic), bootstrap=broker, start="yesterday")


def test_topic_pattern_reads_matching_topics(broker, new_topic):
    prefix = new_topic("pat")
    produce(broker, f"{prefix}-a", [(None, "a")])
    produce(broker, f"{prefix}-b", [(None, "b")])
    table = raw_table("", **{"topic-pattern": f"{prefix}-.*"})
    del table.options["topic"]
    source = create_source(table, bootstrap=broker)
    source.open()
    assert sorted(values(read_all(source))) == ["a", "b"]


def test_key_fields_except_key_take_columns_from_the_key(broker, new_topic):
    topic = new_topic("keyed")
    produce(broker, topic, [({"id": 1}, {"name": "Alice"}), ({"id": 2}, {"name": "Bob"})])
    table = spec("users", "id INT, name STRING", {
        "connector": "kafka", "topic": topic, "key.format": "json", "key.fields": "id",
        "value.format": "json", "value.fields-include": "EXCEPT_KEY",
        "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"})  # fmt: skip
    source = create_source(table, bootstrap=broker)
    source.open()
    assert read_all(source).rows == [(1, "Alice"), (2, "Bob")]


def test_unknown_option_and_librdkafka_property_errors(broker, new_topic):
    with pytest.raises(ConnectorError) as info:
        create_source(raw_table("x", **{"scan.startup.mod": "earliest-offset"}), bootstrap=broker)
    assert "'scan.startup.mod'" in str(info.value) and "scan.startup.mode" in str(info.value)
    bad = create_source(raw_table(new_topic("p"), **{"properties.no.such.thing": "secret-value"}),
                        bootstrap=broker)  # fmt: skip
    with pytest.raises(ConnectorError) as info:
        bad.open()
    assert "no.such.thing" in str(info.value) and "secret-value" not in str(info.value)
    with pytest.raises(ConnectorError, match="scan.startup.mode"):
        create_source(raw_table("x", **{"scan.startup.mode": "earliest"}), bootstrap=broker)
    no_servers = raw_table("x")
    with pytest.raises(ConnectorError, match="properties.bootstrap.servers"):
        create_source(no_servers)


def test_partition_discovery_picks_up_new_pattern_topics_from_their_start(broker, new_topic):
    prefix = new_topic("disc")
    produce(broker, f"{prefix}-a", [(None, "a0")])
    table = raw_table("", **{"topic-pattern": f"{prefix}-.*", "scan.bounded.mode": "unbounded",
                             "scan.topic-partition-discovery.interval": "100 ms"})  # fmt: skip
    del table.options["topic"]
    source = create_source(table, bootstrap=broker)
    source.open()
    produce(broker, f"{prefix}-b", [(None, "b0"), (None, "b1")])
    got = []
    for _ in range(50):
        got += values(source.poll(100, 0.1))
        if len(got) >= 3:
            break
    source.close()
    assert sorted(got) == ["a0", "b0", "b1"]
    assert source.position()["offsets"][f"{prefix}-b"] == {"0": 2}


def test_bad_discovery_interval_is_named():
    table = raw_table("x", **{"scan.topic-partition-discovery.interval": "soon",
                              "properties.bootstrap.servers": "127.0.0.1:1"})  # fmt: skip
    with pytest.raises(ConnectorError, match="scan.topic-partition-discovery.interval"):
        create_source(table)


def test_startup_timestamp_zero_reads_everything(broker, new_topic):
    topic = new_topic("ts0")
    produce(broker, topic, _records(3))
    table = raw_table(
        topic, **{"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "0"}
    )
    source = create_source(table, bootstrap=broker)
    source.open()
    assert values(read_all(source)) == ["r0", "r1", "r2"]
    with pytest.raises(ConnectorError, match="'scan.startup.timestamp-millis' is required"):
        create_source(raw_table(topic, **{"scan.startup.mode": "timestamp"}), bootstrap=broker)


def test_missing_topic_is_named(broker, new_topic):
    missing = new_topic("missing")
    source = create_source(raw_table(missing), bootstrap=broker)
    with pytest.raises(ConnectorError, match=f"topic '{missing}' does not exist"):
        source.open()
    source.close()


def test_update_pairs_are_never_split_across_polls(broker, new_topic):
    topic = new_topic("pairs")
    lines = (DATA / "debezium-data-schema-exclude.txt").read_bytes().splitlines()
    produce(broker, topic, [(None, line) for line in lines])
    table = spec("products", PRODUCTS, {"connector": "kafka", "topic": topic, "format": "debezium-json",
                 "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"})  # fmt: skip
    source = create_source(table, bootstrap=broker)
    source.open()
    batches = []
    while not source.finished():
        batch = source.poll(1, 0.2)
        if batch:
            batches.append(batch.kinds)
    source.close()
    assert [RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER] in batches
    assert all(kinds[-1] != RowKind.UPDATE_BEFORE for kinds in batches)
    assert sum(len(k) for k in batches) == 20


def test_records_fetched_together_with_partition_eof_are_all_returned(broker, new_topic):
    import time

    topic = new_topic("eof")
    produce(broker, topic, _records(10), flush_each=3)
    source = create_source(raw_table(topic), bootstrap=broker)
    source.open()
    time.sleep(1.0)  # the client prefetches every record and the end-of-partition event
    assert values(read_all(source)) == [f"r{i}" for i in range(10)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bounded_multi_partition_read_returns_each_record_once_for_any_poll_sizes(
    broker, new_topic, seed
):
    import random
    import time

    rng = random.Random(seed)
    topic = new_topic("multi")
    ensure_topics(broker, [topic], partitions=3)
    expected = []
    for part in range(3):
        records = [(None, f"p{part}-{i}") for i in range(rng.randint(0, 40))]
        expected += [v for _, v in records]
        produce(broker, topic, records, partition=part, flush_each=rng.randint(1, 9))
    source = create_source(raw_table(topic), bootstrap=broker)
    source.open()
    time.sleep(rng.choice([0, 0.3]))
    got = []
    for _ in range(500):
        if source.finished():
            break
        got += values(source.poll(rng.randint(1, 50), 0.1))
    source.close()
    assert sorted(got) == sorted(expected)
    for part in range(3):  # each partition in offset order
        mine = [v for v in got if v.startswith(f"p{part}-")]
        assert mine == [f"p{part}-{i}" for i in range(len(mine))]


def test_offsets_of_a_transactional_topic_skip_the_commit_markers(broker, new_topic):
    # Each committed transaction ends with a control record that takes an offset but is
    # never delivered, so the records of two transactions of 3 and 2 are at offsets
    # 0-2 and 4-5 (Kafka's transaction markers); the 'offset' metadata column shows them.
    from confluent_kafka import Producer

    topic = new_topic("txn")
    ensure_topics(broker, [topic])
    producer = Producer({"bootstrap.servers": broker, "transactional.id": f"h18-{topic}"})
    producer.init_transactions(30)
    for batch in (["a", "b", "c"], ["d", "e"]):
        producer.begin_transaction()
        for value in batch:
            producer.produce(topic, value.encode(), partition=0)
        producer.commit_transaction(30)
    table = raw_table(topic)
    table = spec("t", "v STRING", table.options, [("off", "offset", "BIGINT")])
    source = create_source(table, bootstrap=broker)
    source.open()
    rows = read_all(source).rows
    assert rows == [("a", 0), ("b", 1), ("c", 2), ("d", 4), ("e", 5)]
