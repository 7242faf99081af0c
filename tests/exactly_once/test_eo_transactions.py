"""``connectors/transactions.py`` on the real broker: epoch markers, aborts, fencing."""

from __future__ import annotations

import pytest
from committed_log import committed_records

from deltaflow.connectors.base import create_sink
from deltaflow.connectors.broker import ensure_topics
from deltaflow.connectors.options import TableOptions
from deltaflow.connectors.transactions import (
    EpochTransactions,
    TransactionRequest,
    open_transactions,
)
from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.errors import ConnectorError
from deltaflow.formats.types import parse_type

INS = int(RowKind.INSERT)


def request(bootstrap: str, topic: str, prefix: str) -> TransactionRequest:
    opts = TableOptions("out", "kafka", {}, [])
    conf = {"bootstrap.servers": bootstrap, "log_level": "0"}
    return TransactionRequest(opts, conf, prefix, topic)


def test_the_marker_holds_the_last_committed_epoch_and_aborts_leave_it(broker, new_topic):
    topic = new_topic("out")
    ensure_topics(broker, [topic])
    txn = EpochTransactions(request(broker, topic, new_topic("p")), timeout_s=10)
    txn.start()
    assert txn.committed_epoch() is None
    txn.begin()
    txn.producer.produce(topic, b"epoch 1")
    txn.commit(1)
    assert txn.committed_epoch() == 1
    txn.begin()
    txn.producer.produce(topic, b"epoch 2, never committed")
    txn.producer.flush(5)
    txn.close()  # aborts the open transaction
    again = EpochTransactions(txn.request, timeout_s=10)
    again.start()
    assert again.committed_epoch() == 1
    again.close()
    assert [r[2] for r in committed_records(broker, topic)] == [b"epoch 1"]


def test_a_restarted_job_fences_the_old_producer(broker, new_topic):
    topic = new_topic("out")
    ensure_topics(broker, [topic])
    req = request(broker, topic, new_topic("p"))
    old = EpochTransactions(req, timeout_s=3)
    old.start()
    old.begin()
    old.producer.produce(topic, b"zombie")
    old.producer.flush(5)
    new = EpochTransactions(req, timeout_s=10)
    new.start()  # aborts the old producer's open transaction
    with pytest.raises(ConnectorError, match="could not .*epoch 5.*fences"):
        old.commit(5)
    assert new.committed_epoch() is None
    assert committed_records(broker, topic) == []
    new.close()


def test_exactly_once_sinks_on_two_clusters_are_refused(broker, new_topic):
    first = request(broker, new_topic("a"), "p")
    second = request("127.0.0.1:1", new_topic("b"), "p")
    with pytest.raises(ConnectorError, match="one Kafka cluster"):
        open_transactions([first, second], 5)
    assert open_transactions([], 5) is None


def test_an_exactly_once_sink_writes_only_inside_the_job_transaction(broker, new_topic):
    from deltaflow.connectors.base import TableSpec

    topic = new_topic("out")
    ensure_topics(broker, [topic])
    options = {"connector": "kafka", "topic": topic, "format": "raw",
               "sink.delivery-guarantee": "exactly-once",
               "sink.transactional-id-prefix": new_topic("p")}  # fmt: skip
    sink = create_sink(TableSpec("out", options, [("v", parse_type("STRING"))]), bootstrap=broker)
    txn = open_transactions([sink.transaction_request()], 10)
    txn.start()
    sink.join_transaction(txn.producer)
    txn.begin()
    sink.write(Batch([INS, INS], [("a",), ("b",)]))
    sink.flush(10)
    assert committed_records(broker, topic) == []  # sent, not yet committed
    txn.commit(1)
    assert [r[2] for r in committed_records(broker, topic)] == [b"a", b"b"]
    sink.close()
    txn.close()


def test_two_state_directories_with_one_prefix_keep_separate_markers(broker, new_topic):
    """A replay into a fresh state directory reuses the job's prefix: its token keeps the
    old run's marker (epoch 1 committed) from answering for its own pending epoch 1."""
    topic = new_topic("out")
    ensure_topics(broker, [topic])
    req = request(broker, topic, new_topic("p"))
    old = EpochTransactions(req, timeout_s=10, token="aaaa")
    old.start()
    old.begin()
    old.producer.produce(topic, b"old run")
    old.commit(1)
    old.close()
    replay = EpochTransactions(req, timeout_s=10, token="bbbb")
    replay.start()
    assert replay.committed_epoch() is None
    again = EpochTransactions(req, timeout_s=10, token="aaaa")
    assert again.committed_epoch() == 1
    again.close()
    replay.close()
