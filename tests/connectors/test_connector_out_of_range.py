"""Out-of-range positions against librdkafka's mock cluster, which answers a fetch past
the end OFFSET_OUT_OF_RANGE as Apache Kafka does, and against tansu, which answers an
empty fetch (a recreated topic is found by its topic id first: that case is in
tests/processor/test_offsets_restart.py). The mock cluster has no DeleteRecords, so a
position below the log start is shown with the policy's own function."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import Producer
from connector_helpers import produce, read_all, spec

from deltaflow.connectors.base import create_source
from deltaflow.connectors.kafka_ranges import out_of_range
from deltaflow.connectors.options import TableOptions
from deltaflow.formats.errors import ConnectorError


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def mock_cluster():
    """The bootstrap address of a mock cluster, alive while its creating producer is, with
    20 records in partition 0 of topic 'm' (the mock cluster creates topics on produce)."""
    lines = _Lines()
    logger = logging.getLogger("deltaflow.test.mock")
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    keeper = Producer({"test.mock.num.brokers": 1, "debug": "mock", "logger": logger})
    keeper.poll(0.5)
    found = [x for x in lines.lines if "bootstrap.servers=" in x]
    bootstrap = found[0].split("bootstrap.servers=")[1].split()[0]
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        producer.produce("m", f"r{i}".encode(), partition=0)
    assert producer.flush(10) == 0
    yield bootstrap
    keeper.flush(1)


def table(**options):
    opts = {"connector": "kafka", "topic": "m", "format": "raw",
            "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}  # fmt: skip
    opts.update(options)
    return spec("t", "v STRING", opts)


def values(batch) -> list[str]:
    return [r[0] for r in batch.rows if r[0] is not None]


def test_a_checkpoint_past_the_end_fails_by_default(mock_cluster):
    source = create_source(table(), bootstrap=mock_cluster)
    with pytest.raises(ConnectorError) as err:
        source.open({"offsets": {"m": {"0": 25}}})
    assert "the checkpointed offset 25 of m/0 is out of the range the broker holds " \
           "(offsets 0 to 19)" in str(err.value)  # fmt: skip


def test_the_earliest_and_latest_policies_go_on_and_say_so(mock_cluster, capsys):
    source = create_source(
        table(**{"scan.offset-out-of-range": "earliest"}), bootstrap=mock_cluster
    )
    source.open({"offsets": {"m": {"0": 25}}})
    assert values(read_all(source)) == [f"r{i}" for i in range(20)]
    assert "going on from offset 0 (0 offset(s) skipped)" in capsys.readouterr().err
    source = create_source(table(**{"scan.offset-out-of-range": "latest"}), bootstrap=mock_cluster)
    source.open({"offsets": {"m": {"0": 25}}})
    assert values(read_all(source)) == []
    assert "going on from offset 20 (20 offset(s) skipped)" in capsys.readouterr().err


def test_an_explicit_start_past_the_end_is_an_error_whatever_the_policy(mock_cluster):
    opts = table(**{"scan.offset-out-of-range": "earliest"})
    source = create_source(opts, bootstrap=mock_cluster, start="offsets:m:0:21")
    with pytest.raises(ConnectorError, match="start offset 21 of m/0 lies past its end offset 20"):
        source.open()
    at_end = create_source(opts, bootstrap=mock_cluster, start="offsets:m:0:20")
    at_end.open()
    assert values(read_all(at_end)) == []


def test_a_position_below_the_log_start_counts_the_deleted_offsets(capsys):
    opts = TableOptions("t", "kafka", {}, ())
    with pytest.raises(ConnectorError, match=r"offset 3 of m/0 .* \(offsets 10 to 14\)"):
        out_of_range(opts, "fail", ("m", 0), 3, 10, 15)
    assert out_of_range(opts, "earliest", ("m", 0), 3, 10, 15) == 10
    assert "(7 offset(s) skipped)" in capsys.readouterr().err
    assert out_of_range(opts, "latest", ("m", 0), 3, 10, 15) == 15
    assert "(12 offset(s) skipped)" in capsys.readouterr().err


def test_an_unknown_policy_is_named(mock_cluster):
    with pytest.raises(ConnectorError, match="scan.offset-out-of-range"):
        create_source(table(**{"scan.offset-out-of-range": "skip"}), bootstrap=mock_cluster)


def test_a_checkpoint_past_the_end_on_tansu_is_found_from_the_fetch(broker, new_topic):
    """No topic id in the position (a cluster without ids): tansu's empty answer to the
    fetch is compared with its high watermark."""
    topic = new_topic("past")
    produce(broker, topic, [(None, f"r{i}") for i in range(8)], flush_each=3)
    opts = {"topic": topic}
    with pytest.raises(ConnectorError, match=rf"offset 12 of {topic}/0 is out of the range the "
                                             r"broker holds \(offsets 0 to 7\)"):  # fmt: skip
        create_source(table(**opts), bootstrap=broker).open({"offsets": {topic: {"0": 12}}})
    source = create_source(
        table(**opts, **{"scan.offset-out-of-range": "earliest"}), bootstrap=broker
    )
    source.open({"offsets": {topic: {"0": 12}}})
    assert values(read_all(source)) == [f"r{i}" for i in range(8)]
    inside = create_source(table(**opts), bootstrap=broker)  # the last batch's end: in range
    inside.open({"offsets": {topic: {"0": 8}}})
    assert values(read_all(inside)) == []
