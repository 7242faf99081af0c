"""docker/jobs/inventory.sql run by `deltaflow run` on the embedded broker.

The input is what the stack's Debezium connector writes for the example database:
schemaless Debezium JSON for the rows of quay.io/debezium/example-postgres's
inventory.sql (snapshot reads), then the changes docs/DOCKER.md walks through. The
expected tables are computed by hand from that data and are the ones DOCKER.md shows.

Two edits adapt the file to a test: each run gets its own topic names (the session
broker is shared), and the sources are bounded at the latest offset so the run ends.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from datetime import date

from confluent_kafka import Consumer, Producer, TopicPartition
from stack_files import JOB_FILE

from deltaflow.connectors.broker import ensure_topics

CUSTOMERS = [
    (1001, "Sally", "Thomas", "sally.thomas@acme.com"),
    (1002, "George", "Bailey", "gbailey@foobar.com"),
    (1003, "Edward", "Walker", "ed@walker.com"),
    (1004, "Anne", "Kretchmar", "annek@noanswer.org"),
]
PRODUCTS = [
    (101, "scooter", "Small 2-wheel scooter", 3.14),
    (102, "car battery", "12V car battery", 8.1),
    (103, "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3", 0.8),
    (104, "hammer", "12oz carpenter's hammer", 0.75),
    (105, "hammer", "14oz carpenter's hammer", 0.875),
    (106, "hammer", "16oz carpenter's hammer", 1.0),
    (107, "rocks", "box of assorted rocks", 5.3),
    (108, "jacket", "water resistent black wind breaker", 0.1),
    (109, "spare tire", "24 inch spare tire", 22.2),
]
ORDERS = [
    (10001, date(2016, 1, 16), 1001, 1, 102),
    (10002, date(2016, 1, 17), 1002, 2, 105),
    (10003, date(2016, 2, 19), 1002, 2, 106),
    (10004, date(2016, 2, 21), 1003, 1, 107),
]
COLUMNS = {
    "customers": ("id", "first_name", "last_name", "email"),
    "products": ("id", "name", "description", "weight"),
    "orders": ("id", "order_date", "purchaser", "quantity", "product_id"),
}


def row(table: str, values: tuple) -> dict:
    # Debezium's JSON converter writes a DATE as days since 1970-01-01.
    plain = [
        v.toordinal() - date(1970, 1, 1).toordinal() if isinstance(v, date) else v for v in values
    ]
    return dict(zip(COLUMNS[table], plain, strict=True))


def event(table: str, op: str, before: tuple | None, after: tuple | None) -> tuple[str, dict, dict]:
    """(table, key, value) of one change event as the connector writes it (schemas.enable=false)."""
    source = {
        "connector": "postgresql",
        "name": "dbserver1",
        "db": "postgres",
        "schema": "inventory",
    }
    value = {
        "before": row(table, before) if before else None,
        "after": row(table, after) if after else None,
        "source": {**source, "table": table, "snapshot": "true" if op == "r" else "false"},
        "op": op,
        "ts_ms": 1_700_000_000_000,
        "transaction": None,
    }
    return table, {"id": (after or before)[0]}, value


SNAPSHOT = [
    *(event("customers", "r", None, c) for c in CUSTOMERS),
    *(event("products", "r", None, p) for p in PRODUCTS),
    *(event("orders", "r", None, o) for o in ORDERS),
]
ANNE_MARIE = (1004, "Anne Marie", "Kretchmar", "annek@noanswer.org")
# The statements of docs/DOCKER.md, as the change events Postgres' log yields for them.
WALKTHROUGH = [
    event("orders", "c", None, (10005, date(2026, 1, 1), 1004, 3, 109)),
    event("products", "u", PRODUCTS[1], (102, "car battery", "12V car battery", 9.0)),
    event("customers", "u", CUSTOMERS[3], ANNE_MARIE),
    event("orders", "d", ORDERS[0], None),
]


def run_job(broker: str, tmp_path, events: list) -> dict[int, dict]:
    """Loads the events, runs the job to the end of its input, returns the output table by key."""
    prefix, sink = f"dbserver1-{uuid.uuid4().hex[:8]}", f"shipments-{uuid.uuid4().hex[:8]}"
    ensure_topics(broker, [f"{prefix}.inventory.{t}" for t in COLUMNS] + [sink])
    producer = Producer({"bootstrap.servers": broker})
    for table, key, value in events:
        producer.produce(
            f"{prefix}.inventory.{table}", key=json.dumps(key), value=json.dumps(value)
        )
    assert producer.flush(30) == 0
    text = JOB_FILE.read_text()
    bounded = "'scan.startup.mode' = 'earliest-offset',\n  'scan.bounded.mode' = 'latest-offset',"
    assert text.count("'scan.startup.mode' = 'earliest-offset',") == 3
    text = text.replace("'scan.startup.mode' = 'earliest-offset',", bounded)
    text = text.replace("'dbserver1.", f"'{prefix}.").replace(
        "'inventory.customer_shipments'", f"'{sink}'"
    )
    job = tmp_path / "inventory.sql"
    job.write_text(text)
    command = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--quiet"]
    command += ["--bootstrap-servers", broker, "--state-dir", str(tmp_path / "state")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return read_upserts(broker, sink)


def read_upserts(broker: str, topic: str) -> dict[int, dict]:
    consumer = Consumer(
        {"bootstrap.servers": broker, "group.id": topic, "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    table: dict[int, dict] = {}
    while (msg := consumer.poll(10.0)) is not None and not msg.error():
        key = json.loads(msg.key())["customer_id"]
        if msg.value() is None:
            table.pop(key, None)
        else:
            table[key] = json.loads(msg.value())
    consumer.close()
    assert msg is not None, "no end of the output topic within 10 s"
    return table


def shipment(customer: tuple, orders: int, quantity: int, weight: float) -> dict:
    """One output row: the customer's columns, then order_count, total_quantity, total_weight."""
    customer_id, first_name, last_name, email = customer
    return {
        "customer_id": customer_id,
        "first_name": first_name,
        "last_name": last_name,
        "email": email,
        "order_count": orders,
        "total_quantity": quantity,
        "total_weight": weight,
    }


def test_snapshot_gives_the_table_docker_md_shows(broker, tmp_path):
    table = run_job(broker, tmp_path, SNAPSHOT)
    assert table == {
        1001: shipment(CUSTOMERS[0], 1, 1, 8.1),  # 1 car battery
        1002: shipment(CUSTOMERS[1], 2, 4, 3.75),  # 2 x 0.875 + 2 x 1.0
        1003: shipment(CUSTOMERS[2], 1, 1, 5.3),  # 1 box of rocks
    }


def test_inserts_and_updates_flow_to_the_output(broker, tmp_path):
    table = run_job(broker, tmp_path, SNAPSHOT + WALKTHROUGH[:3])
    assert table == {
        1001: shipment(CUSTOMERS[0], 1, 1, 9.0),  # the battery now weighs 9.0
        1002: shipment(CUSTOMERS[1], 2, 4, 3.75),
        1003: shipment(CUSTOMERS[2], 1, 1, 5.3),
        1004: shipment(ANNE_MARIE, 1, 3, 66.6),  # 3 spare tires of 22.2, under her new name
    }


def test_deleting_a_customers_last_order_deletes_the_row(broker, tmp_path):
    table = run_job(broker, tmp_path, SNAPSHOT + WALKTHROUGH)
    assert sorted(table) == [1002, 1003, 1004]
    assert table[1004] == shipment(ANNE_MARIE, 1, 3, 66.6)
