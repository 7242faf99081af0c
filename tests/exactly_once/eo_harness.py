"""The exactly-once job, its input history and the checks on its committed output.

The job joins Debezium ``orders`` with ``customers`` and keeps COUNT and SUM per
region twice: in a retract (debezium-json) topic and in an upsert topic, both with
``sink.delivery-guarantee`` = ``exactly-once``. The expected table is computed here
from the events: the final orders whose customer exists, grouped by region. With
``unknown_keys='policy'`` both sources also check that every delete and update is of
a key they saw (the events have none other), so a key set that a crash left out of
step with the state stops the job (exit status 2).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

from committed_log import committed_records
from confluent_kafka import Producer

JOB = """
SET 'execution.checkpointing.interval' = '{interval}';
SET 'deltaflow.unknown-key-delete' = '{unknown_keys}';
CREATE TABLE orders (id INT, customer INT, amount BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = '{orders}', 'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'debezium-json');
CREATE TABLE customers (id INT, region STRING, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'kafka', 'topic' = '{customers}', 'properties.bootstrap.servers' = '{bootstrap}',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'debezium-json');
CREATE TABLE by_region_log (region STRING, orders BIGINT, total BIGINT) WITH (
  'connector' = 'kafka', 'topic' = '{log}', 'properties.bootstrap.servers' = '{bootstrap}',
  'format' = 'debezium-json', 'sink.delivery-guarantee' = '{guarantee}',
  'sink.transactional-id-prefix' = '{prefix}');
CREATE TABLE by_region (region STRING, orders BIGINT, total BIGINT,
  PRIMARY KEY (region) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{upsert}', 'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'json', 'value.format' = 'json', 'sink.delivery-guarantee' = '{guarantee}',
  'sink.transactional-id-prefix' = '{prefix}');
EXECUTE STATEMENT SET BEGIN
INSERT INTO by_region_log SELECT c.region, COUNT(*), SUM(o.amount)
  FROM orders o JOIN customers c ON o.customer = c.id GROUP BY c.region;
INSERT INTO by_region SELECT c.region, COUNT(*), SUM(o.amount)
  FROM orders o JOIN customers c ON o.customer = c.id GROUP BY c.region;
END;
"""

REGIONS = ["north", "south", "east", "west", "centre"]


def write_job(path: Path, **names: str) -> Path:
    names.setdefault("interval", "200 ms")
    names.setdefault("guarantee", "exactly-once")
    names.setdefault("unknown_keys", "ignore")
    path.write_text(JOB.format(**names))
    return path


def history(seed: int, n: int) -> list[tuple[str, dict]]:
    """Random valid Debezium events: (table, event) over 300 orders and 25 customers."""
    rng = random.Random(seed)
    live: dict[str, dict[int, dict]] = {"orders": {}, "customers": {}}
    out = []
    for _ in range(n):
        table = "customers" if rng.random() < 0.2 else "orders"
        rows = live[table]
        key = rng.randrange(25 if table == "customers" else 300)
        if table == "customers":
            after = {"id": key, "region": rng.choice(REGIONS)}
        else:
            after = {"id": key, "customer": rng.randrange(25), "amount": rng.randrange(1, 1000)}
        if key not in rows:
            event = {"before": None, "after": after, "op": "c"}
            rows[key] = after
        elif rng.random() < 0.15:
            event = {"before": rows.pop(key), "after": None, "op": "d"}
        else:
            event = {"before": rows[key], "after": after, "op": "u"}
            rows[key] = after
        out.append((table, event))
    return out


def expected_table(events: list[tuple[str, dict]]) -> dict[str, tuple[int, int]]:
    live: dict[str, dict[int, dict]] = {"orders": {}, "customers": {}}
    for table, e in events:
        if e["op"] == "d":
            del live[table][e["before"]["id"]]
        else:
            live[table][e["after"]["id"]] = e["after"]
    out: dict[str, tuple[int, int]] = {}
    for order in live["orders"].values():
        customer = live["customers"].get(order["customer"])
        if customer is not None:
            cnt, total = out.get(customer["region"], (0, 0))
            out[customer["region"]] = (cnt + 1, total + order["amount"])
    return out


def produce(bootstrap: str, topics: dict[str, str], events, chunk: int, pause: float) -> None:
    """Each event keyed by its row id (so a row's changes stay in order in one partition)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "log_level": 0})
    for i, (table, event) in enumerate(events):
        row = event["after"] or event["before"]
        key = json.dumps({"id": row["id"]}).encode()
        producer.produce(topics[table], value=json.dumps(event).encode(), key=key)
        if pause and i % chunk == chunk - 1:
            producer.flush(10)
            time.sleep(pause)
    producer.flush(30)


def apply_retract_log(bootstrap: str, topic: str) -> tuple[dict, dict[str, list]]:
    """The committed debezium-json log applied strictly, in order.

    Flink writes -U and -D as ``d`` (before) and +I and +U as ``c`` (after). A ``c``
    for a region already present or a ``d`` of a row that is not the current one means
    a change was duplicated or lost; it raises AssertionError with the offset.
    Returns the final table and, per region, the sequence of after-images.
    """
    table: dict[str, tuple[int, int]] = {}
    afters: dict[str, list] = {}
    for offset, _key, value, _headers in committed_records(bootstrap, topic):
        event = json.loads(value)
        if event["op"] == "d":
            row = event["before"]
            current = table.pop(row["region"], None)
            assert current == (row["orders"], row["total"]), (
                f"offset {offset}: retraction of {row} but the table holds {current}"
            )
        else:
            row = event["after"]
            assert row["region"] not in table, f"offset {offset}: {row} added twice"
            table[row["region"]] = (row["orders"], row["total"])
            afters.setdefault(row["region"], []).append(table[row["region"]])
    return table, afters


def read_upsert_log(bootstrap: str, topic: str) -> tuple[dict, dict[str, list]]:
    """The committed upsert topic: its final table and, per key, the sequence of values."""
    table: dict[str, tuple[int, int]] = {}
    values: dict[str, list] = {}
    for _offset, key, value, _headers in committed_records(bootstrap, topic):
        region = json.loads(key)["region"]
        if value is None:
            table.pop(region, None)
            continue
        row = json.loads(value)
        table[region] = (row["orders"], row["total"])
        values.setdefault(region, []).append(table[region])
    return table, values


def start(job: Path, state: Path, crash_at: str = "") -> subprocess.Popen:
    """The job as a process; its stderr goes to a file next to the state directory (a
    pipe nobody drains fills with librdkafka's logs and blocks the job), read back with
    ``job_process.stderr_of``."""
    import itertools
    import os

    env = dict(os.environ)
    env.pop("DELTAFLOW_CRASH_AT", None)
    if crash_at:
        env["DELTAFLOW_CRASH_AT"] = crash_at
    cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--state-dir", str(state)]
    log_path = next(
        p for i in itertools.count() if not (p := state.parent / f"stderr-run{i}.log").exists()
    )
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [*cmd, "--quiet"], stderr=log, stdout=subprocess.DEVNULL, text=True, env=env
        )
    proc.log_path = log_path
    return proc
