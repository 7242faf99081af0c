"""`deltaflow run` on a state directory whose job now reads or writes something else.

A checkpoint holds offsets and counts that are true of the topics, cluster and
decoding they came from. The job counts orders per merchant; each test runs it once,
changes one thing a user could change (the source topic, the brokers' address, a
format option, a column type, the sink topic) and runs it again on the same
directory: the start is refused with exit status 2 and one line naming table,
property, old and new value, and the result topic is left as the first run wrote it
(before, a re-pointed source was read from its own offsets and its rows were
counted on top of the old ones).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer
from tests_support import fold_upsert_topic

from deltaflow.connectors.broker import ensure_topics
from deltaflow.state.backend import StateBackend
from deltaflow.state.checkpoint import IDENTITY_KEY

JOB = """
CREATE TABLE orders (id INT, merchant INT, amount {amount}, PRIMARY KEY (id) NOT ENFORCED)
WITH (
  'connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{servers}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'debezium-json'{extra});
CREATE TABLE totals (merchant INT, cnt BIGINT, PRIMARY KEY (merchant) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{dst}', 'properties.bootstrap.servers' = '{servers}',
  'key.format' = 'json', 'value.format' = 'json');
INSERT INTO totals SELECT merchant, COUNT(*) FROM orders GROUP BY merchant;
"""
ORDERS = [(1, 7), (2, 7), (3, 8)]
SOURCE = "source table 'default_catalog.default_database.orders'"
SINK = "sink table 'default_catalog.default_database.totals'"


def run(job: Path, state: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--state-dir", str(state)]
    return subprocess.run([*cmd, "--quiet", *extra], capture_output=True, text=True, timeout=90)


def produce(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for oid, merchant in ORDERS:
        after = {"id": oid, "merchant": merchant, "amount": 10}
        producer.produce(topic, json.dumps({"before": None, "after": after, "op": "c"}).encode())
    producer.flush(10)


@pytest.fixture
def topics(broker, new_topic):
    """Two source topics holding the same three orders, and an empty result topic."""
    names = {
        "src": new_topic("orders"),
        "other": new_topic("orders-copy"),
        "dst": new_topic("totals"),
    }
    ensure_topics(broker, list(names.values()))
    produce(broker, names["src"])
    produce(broker, names["other"])
    return names


def write(tmp_path: Path, broker: str, topics: dict, **change) -> Path:
    fields = {"amount": "INT", "src": topics["src"], "dst": topics["dst"], "servers": broker}
    fields["extra"] = ""
    fields.update(change)
    path = tmp_path / "job.sql"
    path.write_text(JOB.format(**fields))
    return path


def counts(broker: str, topic: str) -> dict[int, int]:
    return {
        json.loads(k)["merchant"]: v["cnt"] for k, v in fold_upsert_topic(broker, topic).items()
    }


def refused(done: subprocess.CompletedProcess) -> str:
    """The one error line of a refused start."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("deltaflow: error")]
    assert len(errors) == 1, done.stderr
    assert re.search(
        r"\(deltaflow run /\S+/job\.sql --state-dir NEW_DIR --from earliest\)", errors[0]
    )
    return errors[0]


def first_run(tmp_path: Path, broker: str, topics: dict) -> Path:
    state = tmp_path / "state"
    done = run(write(tmp_path, broker, topics), state)
    assert done.returncode == 0, done.stderr
    assert counts(broker, topics["dst"]) == {7: 2, 8: 1}
    return state


def test_a_source_re_pointed_at_another_topic_is_refused(broker, topics, tmp_path):
    state = first_run(tmp_path, broker, topics)
    moved = write(tmp_path, broker, topics, src=topics["other"])
    line = refused(run(moved, state))
    assert f"{SOURCE}: 'topic' was '{topics['src']}', now '{topics['other']}'" in line
    assert counts(broker, topics["dst"]) == {7: 2, 8: 1}  # not counted twice
    # the advice works: a replay into a fresh directory reads the new topic
    replay = run(moved, tmp_path / "fresh", "--from", "earliest")
    assert replay.returncode == 0, replay.stderr


def test_other_bootstrap_servers_are_refused(broker, topics, tmp_path):
    state = first_run(tmp_path, broker, topics)
    port = broker.rsplit(":", 1)[1]
    line = refused(run(write(tmp_path, f"localhost:{port}", topics), state))
    assert f"{SOURCE}: bootstrap servers was '{broker}', now 'localhost:{port}'" in line
    assert f"{SINK}: bootstrap servers was '{broker}', now 'localhost:{port}'" in line
    # --bootstrap-servers counts as what the job uses, not the option it overrides
    line = refused(
        run(write(tmp_path, broker, topics), state, "--bootstrap-servers", f"localhost:{port}")
    )
    assert f"bootstrap servers was '{broker}', now 'localhost:{port}'" in line


def test_a_decoding_option_is_refused_and_an_error_policy_is_not(broker, topics, tmp_path):
    state = first_run(tmp_path, broker, topics)
    schema = ",\n  'debezium-json.schema-include' = 'true'"
    line = refused(run(write(tmp_path, broker, topics, extra=schema), state))
    assert f"{SOURCE}: 'debezium-json.schema-include' was not set, now 'true'" in line
    # skipping unreadable records is how a user gets past a poison message: allowed
    skip = ",\n  'debezium-json.ignore-parse-errors' = 'true'"
    done = run(write(tmp_path, broker, topics, extra=skip), state)
    assert done.returncode == 0, done.stderr
    assert counts(broker, topics["dst"]) == {7: 2, 8: 1}


def test_a_changed_column_type_and_a_re_pointed_sink_are_refused(
    broker, topics, new_topic, tmp_path
):
    state = first_run(tmp_path, broker, topics)
    line = refused(run(write(tmp_path, broker, topics, amount="BIGINT"), state))
    assert f"{SOURCE}: columns was '" in line
    assert "amount INT" in line and "now 'id INT NOT NULL, merchant INT, amount BIGINT'" in line
    elsewhere = new_topic("totals-elsewhere")
    line = refused(run(write(tmp_path, broker, topics, dst=elsewhere), state))
    assert f"{SINK}: 'topic' was '{topics['dst']}', now '{elsewhere}'" in line


def test_a_job_that_never_checkpointed_may_be_fixed_and_started_again(broker, topics, tmp_path):
    state = tmp_path / "state"
    typo = run(write(tmp_path, broker, topics, src=topics["src"] + "-typo"), state)
    assert typo.returncode == 2 and "does not exist" in typo.stderr
    done = run(write(tmp_path, broker, topics), state)
    assert done.returncode == 0, done.stderr
    assert counts(broker, topics["dst"]) == {7: 2, 8: 1}


def forget_identity(state: Path) -> None:
    """The directory as a deltaflow before the identity wrote it: no identity entry."""
    with StateBackend(state) as backend:
        backend.commit({IDENTITY_KEY: None})


def test_a_directory_of_the_previous_version_is_checked_against_its_offsets(
    broker, topics, tmp_path
):
    state = first_run(tmp_path, broker, topics)
    forget_identity(state)
    moved = write(tmp_path, broker, topics, src=topics["other"])
    line = refused(run(moved, state))
    assert f"{SOURCE}: the checkpoint holds offsets of topic(s) '{topics['src']}'" in line
    # the same job is accepted, with one line, and its identity recorded from now on
    done = run(write(tmp_path, broker, topics), state)
    assert done.returncode == 0, done.stderr
    assert "written by an earlier deltaflow" in done.stderr
    assert "brokers and formats could not be checked" in done.stderr
    again = run(write(tmp_path, broker, topics), state)
    assert again.returncode == 0 and "earlier deltaflow" not in again.stderr
    port = broker.rsplit(":", 1)[1]
    refused(run(write(tmp_path, f"localhost:{port}", topics), state))


def test_credentials_and_error_policies_are_not_identity_and_never_stored():
    """The identity is planned from the job alone; a registry's credentials rotate (and
    must never reach the state directory or a message), the registry's address counts."""
    from deltaflow.processor.planner.api import plan_job
    from deltaflow.processor.table_identity import table_identity

    secret = "alice:hunter2-do-not-store"
    planned = plan_job(
        """CREATE TABLE src (id INT, v STRING) WITH ('connector' = 'kafka', 'topic' = 'a;b',
          'properties.bootstrap.servers' = 'k2:9092, k1:9092',
          'format' = 'avro-confluent', 'avro-confluent.url' = 'http://registry:8081',
          'avro-confluent.basic-auth.credentials-source' = 'USER_INFO',
          """
        f"'avro-confluent.basic-auth.user-info' = '{secret}');"
        """
        CREATE TABLE out1 (id INT, v STRING) WITH ('connector' = 'print');
        INSERT INTO out1 SELECT id, v FROM src;"""
    )
    identity = table_identity(planned.plan, None)
    source = identity["source table 'default_catalog.default_database.src'"]
    assert source == {
        "connector": "kafka",
        "topic": "a;b",
        "bootstrap servers": "k1:9092,k2:9092",  # a list: its order is no change
        "format": "avro-confluent",
        "avro-confluent.url": "http://registry:8081",
        "columns": "id INT, v STRING",
    }
    assert secret not in json.dumps(identity)
    sink = identity["sink table 'default_catalog.default_database.out1'"]
    assert sink == {"connector": "print", "columns": "id INT, v STRING"}
