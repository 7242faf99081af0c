"""Before-images from state on the real broker, with the messages Debezium's PostgreSQL
connector writes under the database's default REPLICA IDENTITY: updates with a null
before-image, deletes whose before-image holds only the key (NULL and invented defaults
elsewhere), TOAST placeholders in columns an update left alone, a primary-key change as a
delete, a tombstone and a create, a re-insert, a truncate. The job restarts from its
checkpoint between the primary-key change's delete and its create.

Expected tables are PostgreSQL's: the rows the statements leave, worked out by hand.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from confluent_kafka import Producer
from tests_support import fold_upsert_topic

from deltaflow.connectors.broker import ensure_topics
from deltaflow.formats.errors import FormatError, PlanError
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job
from deltaflow.state.backend import StateBackend

P = "__debezium_unavailable_value"
SOURCE = """
CREATE TABLE orders (id INT, cust INT, amt DECIMAL(10, 2), note STRING,
  PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{bs}',
      'scan.startup.mode' = 'earliest-offset', 'format' = 'debezium-json'{extra});
"""
JOB = (
    SOURCE
    + """
CREATE TABLE rows_out (id INT, cust INT, amt DECIMAL(10, 2), note STRING,
  PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{rows}', 'properties.bootstrap.servers' = '{bs}',
      'key.format' = 'json', 'value.format' = 'json');
CREATE TABLE totals (cust INT, n BIGINT, total DECIMAL(38, 2), PRIMARY KEY (cust) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{totals}', 'properties.bootstrap.servers' = '{bs}',
      'key.format' = 'json', 'value.format' = 'json');
INSERT INTO rows_out SELECT id, cust, amt, note FROM orders;
INSERT INTO totals SELECT cust, COUNT(*), SUM(amt) FROM orders GROUP BY cust;
"""
)


def row(ident: int, cust, amt, note) -> dict:
    return {"id": ident, "cust": cust, "amt": amt, "note": note}


def key_only(ident: int) -> dict:
    """A delete's before-image under REPLICA IDENTITY DEFAULT: the key, NULL in nullable
    columns, an invented default (0) in the NOT NULL amount."""
    return {"id": ident, "cust": None, "amt": 0, "note": None}


def create(r: dict) -> dict:
    return {"before": None, "after": r, "op": "c", "source": {"table": "orders"}, "ts_ms": 1}


def update(after: dict) -> dict:
    return {"before": None, "after": after, "op": "u", "source": {"table": "orders"}, "ts_ms": 2}


def delete(ident: int) -> dict:
    return {"before": key_only(ident), "after": None, "op": "d", "source": {}, "ts_ms": 3}


TRUNCATE = {"before": None, "after": None, "op": "t", "source": {"table": "orders"}, "ts_ms": 4}

# Phase 1 ends after the delete half of UPDATE orders SET id = 3 WHERE id = 1.
PHASE_1 = [
    create(row(1, 1, 10.00, "long text")),
    create(row(2, 1, 5.00, "n2")),
    update(row(1, 2, 12.50, P)),  # UPDATE SET cust = 2, amt = 12.50: note untouched
    delete(2),
    delete(1),
    None,  # the tombstone of key 1
]
PHASE_2 = [
    create(row(3, 2, 12.50, P)),  # the create half of the key change
    create(row(2, 3, 7.00, "again")),  # a re-insert of a deleted key
    update(row(2, 3, 8.00, P)),
]
PHASE_3 = [TRUNCATE, create(row(4, 1, 1.00, "fresh"))]


def produce(broker: str, topic: str, events: list) -> None:
    producer = Producer({"bootstrap.servers": broker})
    last = None
    for event in events:
        image = None if event is None else event["after"] or event["before"]
        key = last if image is None else {"id": image["id"]}
        last = key
        value = None if event is None else json.dumps(event).encode()
        producer.produce(topic, value, json.dumps(key).encode() if key else None)
    assert producer.flush(10) == 0


def run(sql: str, broker: str, state, topic: str, records: int) -> None:
    """Runs the (unbounded) job in a thread until it has read ``records`` records of
    ``topic``, then stops it: its last checkpoint holds them."""
    stop, failed = threading.Event(), []
    job = Job(plan_job(sql).plan, JobOptions(state_dir=state, bootstrap=broker), stop=stop)

    def body() -> None:
        try:
            job.run()
        except BaseException as err:  # re-raised below
            failed.append(err)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    source = next(iter(job.inputs.sources.values()))
    while not failed and source.next.get((topic, 0), 0) < records:
        assert time.monotonic() < deadline, "the job did not read its records in time"
        time.sleep(0.02)
    stop.set()
    thread.join(60)
    assert not thread.is_alive()
    if failed:
        raise failed[0]


@pytest.fixture
def topics(broker, new_topic) -> dict[str, str]:
    names = {"src": new_topic("pg-orders"), "rows": new_topic("rows"), "totals": new_topic("tot")}
    ensure_topics(broker, list(names.values()))
    return names


def test_default_replica_identity_gives_postgres_tables_across_a_restart(broker, topics, tmp_path):
    sql = JOB.format(bs=broker, extra="", **topics)
    state = tmp_path / "state"
    src = topics["src"]
    produce(broker, src, PHASE_1)
    run(sql, broker, state, src, len(PHASE_1))
    assert fold_upsert_topic(broker, topics["rows"]) == {}
    assert fold_upsert_topic(broker, topics["totals"]) == {}
    produce(broker, src, PHASE_2)
    run(
        sql, broker, state, src, len(PHASE_1 + PHASE_2)
    )  # resumes from the checkpoint: the deleted row 1 is state
    assert fold_upsert_topic(broker, topics["rows"]) == {
        '{"id":3}': row(3, 2, 12.5, "long text"),
        '{"id":2}': row(2, 3, 8.0, "again"),
    }
    assert fold_upsert_topic(broker, topics["totals"]) == {
        '{"cust":2}': {"cust": 2, "n": 1, "total": 12.5},
        '{"cust":3}': {"cust": 3, "n": 1, "total": 8.0},
    }
    produce(broker, src, PHASE_3)
    run(sql, broker, state, src, len(PHASE_1 + PHASE_2 + PHASE_3))
    assert fold_upsert_topic(broker, topics["rows"]) == {'{"id":4}': row(4, 1, 1.0, "fresh")}
    assert fold_upsert_topic(broker, topics["totals"]) == {
        '{"cust":1}': {"cust": 1, "n": 1, "total": 1.0}
    }


def test_a_placeholder_with_no_stored_value_stops_the_job_at_its_offset(broker, topics, tmp_path):
    sql = JOB.format(bs=broker, extra="", **topics)
    produce(broker, topics["src"], [create(row(1, 1, 1.0, "a")), update(row(9, 1, 2.0, P))])
    with pytest.raises(FormatError) as info:
        run(sql, broker, tmp_path / "state", topics["src"], 2)
    err = info.value
    assert (err.topic, err.partition, err.offset) == (topics["src"], 0, 1)
    assert P in err.reason and "no earlier row of that key" in err.reason


def test_the_placeholder_is_a_table_option_and_skipping_drops_the_record(broker, topics, tmp_path):
    extra = (
        ", 'debezium-json.unavailable-value-placeholder' = '#gone#'"
        ", 'debezium-json.ignore-parse-errors' = 'true'"
    )
    sql = JOB.format(bs=broker, extra=extra, **topics)
    events = [
        create(row(1, 1, 1.0, "kept")),
        update(row(1, 1, 2.0, "#gone#")),
        update(row(5, 1, 3.0, "#gone#")),  # nothing to take it from: skipped, counted
    ]
    produce(broker, topics["src"], events)
    run(sql, broker, tmp_path / "state", topics["src"], len(events))
    assert fold_upsert_topic(broker, topics["rows"]) == {'{"id":1}': row(1, 1, 2.0, "kept")}


def test_before_images_from_messages_name_the_option_on_a_null_before(broker, topics, tmp_path):
    extra = ", 'debezium-json.before-image' = 'message'"
    sql = JOB.format(bs=broker, extra=extra, **topics)
    assert "beforeImage" not in plan_job(sql).explain()
    produce(broker, topics["src"], [create(row(1, 1, 1.0, "a")), update(row(1, 2, 1.0, "a"))])
    with pytest.raises(FormatError) as info:
        run(sql, broker, tmp_path / "state", topics["src"], 2)
    assert info.value.offset == 1
    assert str(info.value.hint).startswith("Set 'debezium-json.before-image' = 'state'")


DELTA_JOB = """
SET 'table.optimizer.delta-join.strategy' = 'FORCE';
SET 'table.optimizer.delta-agg.strategy' = 'FORCE';
CREATE TABLE customers (cid INT, name STRING, PRIMARY KEY (cid) NOT ENFORCED)
WITH ('connector' = 'kafka', 'topic' = '{cust}', 'properties.bootstrap.servers' = '{bs}',
      'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
      'format' = 'debezium-json');
CREATE TABLE orders (id INT, cust INT, amt DECIMAL(10, 2), note STRING,
  PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{bs}',
      'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
      'format' = 'debezium-json');
CREATE TABLE joined (id INT, name STRING, note STRING, PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{rows}', 'properties.bootstrap.servers' = '{bs}',
      'key.format' = 'json', 'value.format' = 'json');
CREATE TABLE totals (cust INT, n BIGINT, total DECIMAL(38, 2), PRIMARY KEY (cust) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{totals}', 'properties.bootstrap.servers' = '{bs}',
      'key.format' = 'json', 'value.format' = 'json');
INSERT INTO joined SELECT o.id, c.name, o.note FROM orders o JOIN customers c ON o.cust = c.cid;
INSERT INTO totals SELECT cust, COUNT(*), SUM(amt) FROM orders GROUP BY cust;
"""


def test_delta_join_and_aggregate_share_the_mirror_as_the_normalizer(
    broker, topics, new_topic, tmp_path
):
    """The delta operators' mirror of a table is its normalizer's state: stored once, and
    the joins and aggregates see exact changes (PostgreSQL: the rows left at the end)."""
    cust = new_topic("pg-customers")
    ensure_topics(broker, [cust])
    produce_rows(broker, cust, [
        {"before": None, "after": {"cid": 1, "name": "Ann"}, "op": "r"},
        {"before": None, "after": {"cid": 2, "name": "Bo"}, "op": "r"},
        {"before": None, "after": {"cid": 2, "name": "Bob"}, "op": "u"},
        {"before": {"cid": 1, "name": None}, "after": None, "op": "d"},
    ])  # fmt: skip
    events = PHASE_1 + PHASE_2  # the orders of the first test
    produce(broker, topics["src"], events)
    sql = DELTA_JOB.format(bs=broker, cust=cust, **topics)
    planned = plan_job(sql)
    assert "DeltaJoin" in planned.explain() and "DeltaAggregate" in planned.explain()
    state = tmp_path / "state"
    Job(planned.plan, JobOptions(state_dir=state, bootstrap=broker)).run()
    assert fold_upsert_topic(broker, topics["rows"]) == {
        '{"id":3}': {"id": 3, "name": "Bob", "note": "long text"}
    }
    assert fold_upsert_topic(broker, topics["totals"]) == {
        '{"cust":2}': {"cust": 2, "n": 1, "total": 12.5},
        '{"cust":3}': {"cust": 3, "n": 1, "total": 8.0},
    }
    with StateBackend(state) as backend:
        names = backend.table_names()
    assert any(":Mirror:" in n for n in names)
    assert not [n for n in names if "ChangelogNormalize:last" in n], names


def produce_rows(broker: str, topic: str, events: list[dict]) -> None:
    producer = Producer({"bootstrap.servers": broker})
    for event in events:
        producer.produce(topic, json.dumps(event).encode())
    assert producer.flush(10) == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (", 'debezium-json.before-image' = 'mesage'", "is not one of 'state'"),
        (", 'debezium-json.before-image' = 'state'", None),
    ],
)
def test_the_option_is_checked_when_planning(options, message):
    sql = JOB.format(bs="b:1", extra=options, src="s", rows="r", totals="t")
    if message is None:
        assert "beforeImage=[state]" in plan_job(sql).explain()
        keyless = sql.replace("PRIMARY KEY (id) NOT ENFORCED)\nWITH ('connector' = 'kafka'",
                              ")\nWITH ('connector' = 'kafka'", 1)  # fmt: skip
        with pytest.raises(PlanError, match="no PRIMARY KEY"):
            plan_job(keyless)
        return
    with pytest.raises(PlanError, match=message):
        plan_job(sql)


def test_a_key_change_in_a_topic_of_several_partitions_is_not_filled_from_a_neighbour(
    broker, new_topic, tmp_path
):
    """With two partitions the delete right before a create need not be the key change's
    own (the old and new keys may hash apart): its placeholder is bad input, not a guess."""
    topics = {"src": new_topic("pg-two"), "rows": new_topic("rows2"), "totals": new_topic("t2")}
    ensure_topics(broker, [topics["src"]], partitions=2)
    ensure_topics(broker, [topics["rows"], topics["totals"]])
    producer = Producer({"bootstrap.servers": broker})
    for event in [create(row(1, 1, 1.0, "long")), delete(1), create(row(3, 1, 1.0, P))]:
        producer.produce(topics["src"], json.dumps(event).encode(), partition=0)
    assert producer.flush(10) == 0
    sql = JOB.format(bs=broker, extra="", **topics)
    with pytest.raises(FormatError) as info:
        run(sql, broker, tmp_path / "state", topics["src"], 3)
    assert info.value.offset == 2 and "no earlier row" in info.value.reason
