"""A delete or update of a primary key the job never saw, under 'deltaflow.unknown-key-delete'.

The orders topic holds: +I order 1 (merchant 7), then a delete of order 2 (merchant 7)
that was never inserted (offset 1), then +I order 3 (merchant 7). Flink applies the
delete to merchant 7's existing group: its count ends at 1 (before-images from the
messages). With before-images from state (the default with a primary key) the delete
retracts nothing: 2. With 'policy' the table's bad-input policy decides; refused, the
record leaves merchant 7 at 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from committed_log import committed_records
from confluent_kafka import Producer

from deltaflow.connectors.broker import ensure_topics

JOB = """
SET 'deltaflow.unknown-key-delete' = '{mode}';
CREATE TABLE orders (id INT, merchant INT{columns}, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = '{startup}', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json'{extra});
CREATE TABLE totals (merchant INT, cnt BIGINT, PRIMARY KEY (merchant) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{dst}', 'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'json', 'value.format' = 'json');
INSERT INTO totals SELECT merchant, COUNT(*) FROM orders GROUP BY merchant;
"""
EVENTS = [
    {"before": None, "after": {"id": 1, "merchant": 7}, "op": "c"},
    {"before": {"id": 2, "merchant": 7}, "after": None, "op": "d"},
    {"before": None, "after": {"id": 3, "merchant": 7}, "op": "c"},
]


@pytest.fixture
def topics(broker, new_topic):
    names = {"src": new_topic("orders"), "dst": new_topic("totals"), "dlq": new_topic("dlq")}
    ensure_topics(broker, list(names.values()))
    producer = Producer({"bootstrap.servers": broker})
    for event in EVENTS:
        producer.produce(
            names["src"],
            json.dumps(event).encode(),
            b"k%d" % (event["after"] or event["before"])["id"],
        )
    assert producer.flush(10) == 0
    return dict(names, bootstrap=broker)


def run(
    tmp_path: Path,
    topics: dict,
    mode: str,
    extra: str = "",
    startup: str = "earliest-offset",
    columns: str = "",
):
    job = tmp_path / "job.sql"
    job.write_text(JOB.format(mode=mode, extra=extra, startup=startup, columns=columns, **topics))
    cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--quiet"]
    return subprocess.run(
        [*cmd, "--state-dir", str(tmp_path / "state")], capture_output=True, text=True, timeout=90
    )


def totals(topics: dict) -> dict[int, int]:
    table = {}
    for _, key, value, _ in committed_records(topics["bootstrap"], topics["dst"]):
        merchant = json.loads(key)["merchant"]
        if value is None:  # the group's count went to 0: Flink deletes it
            table.pop(merchant, None)
        else:
            table[merchant] = json.loads(value)["cnt"]
    return table


def test_fail_stops_at_the_record_naming_topic_partition_offset_and_key(topics, tmp_path):
    done = run(tmp_path, topics, "policy")
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("deltaflow: error")]
    assert len(lines) == 1, done.stderr
    assert f"topic '{topics['src']}' partition 0 offset 1" in lines[0]
    assert "primary key (2,)" in lines[0] and "never saw" in lines[0]
    assert "Traceback" not in done.stderr
    again = run(tmp_path, topics, "policy")  # the checkpoint never passed the record
    assert again.returncode == 2 and "offset 1" in again.stderr


def test_skip_drops_and_counts_the_record(topics, tmp_path):
    extra = ",\n  'debezium-json.ignore-parse-errors' = 'true'"
    done = run(tmp_path, topics, "policy", extra)
    assert done.returncode == 0, done.stderr
    assert (
        "orders': 1 delete(s) or update(s) of primary keys never seen so far (skipped)"
        in done.stderr
    )
    assert totals(topics) == {7: 2}


@pytest.mark.parametrize("columns", ["", ", off BIGINT METADATA FROM 'offset' VIRTUAL"])
def test_dead_letter_sends_the_raw_record_and_drops_it(topics, tmp_path, columns):
    """Also with a metadata column: the source then matches rows to records, decoding a
    batch again record by record when rows were dropped; the record still counts once."""
    extra = f",\n  'deadletter.topic' = '{topics['dlq']}'"
    done = run(tmp_path, topics, "policy", extra, columns=columns)
    assert done.returncode == 0, done.stderr
    assert totals(topics) == {7: 2}
    letters = committed_records(topics["bootstrap"], topics["dlq"])
    assert [(key, json.loads(value)) for _, key, value, _ in letters] == [(b"k2", EVENTS[1])]
    headers = dict(letters[0][3])
    assert headers["deltaflow.offset"] == b"1"
    assert b"never saw" in headers["deltaflow.reason"]


# Flink's behaviour: before-images from the messages, the delete passed on.
MESSAGE = ",\n  'debezium-json.before-image' = 'message'"


def test_count_passes_the_record_on_as_flink_does_and_reports_it(topics, tmp_path):
    done = run(tmp_path, topics, "count", MESSAGE)
    assert done.returncode == 0, done.stderr
    assert "1 delete(s) or update(s) of primary keys never seen so far (passed on" in done.stderr
    assert totals(topics) == {7: 1}


def test_count_with_before_images_from_state_retracts_nothing(topics, tmp_path):
    """The default for a primary key: the normalizer holds no row of order 2, so the delete
    retracts nothing and merchant 7 keeps orders 1 and 3, as the database does."""
    done = run(tmp_path, topics, "count")
    assert done.returncode == 0, done.stderr
    assert "1 delete(s) or update(s) of primary keys never seen so far (an update" in done.stderr
    assert totals(topics) == {7: 2}


@pytest.mark.parametrize(("extra", "count"), [(MESSAGE, 1), ("", 2)])
def test_a_source_not_read_from_the_beginning_only_counts(topics, tmp_path, extra, count):
    """From a timestamp (here: 0, every record) the job may not have seen every row."""
    done = run(
        tmp_path,
        topics,
        "policy",
        extra,
        startup="timestamp', 'scan.startup.timestamp-millis' = '0",
    )
    assert done.returncode == 0, done.stderr
    assert "counted, not refused" in done.stderr
    assert totals(topics) == {7: count}


@pytest.mark.parametrize(("extra", "count"), [(MESSAGE, 1), ("", 2)])
def test_ignore_is_flinks_behaviour_without_a_word(topics, tmp_path, extra, count):
    done = run(tmp_path, topics, "ignore", extra)
    assert done.returncode == 0, done.stderr
    assert "never seen" not in done.stderr
    assert totals(topics) == {7: count}
