"""Real Debezium output of PostgreSQL under REPLICA IDENTITY DEFAULT (tests/data/
postgres_default, see its README), produced unchanged to the broker: with before-images
from state (the default for a primary key) every table a job writes equals PostgreSQL's own
final table, and no TOAST placeholder reaches the output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from confluent_kafka import Producer
from tests_support import fold_upsert_topic

from deltaflow.connectors.broker import ensure_topics
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

DATA = Path(__file__).resolve().parents[1] / "data" / "postgres_default"
TABLES = {
    "customers": "id INT, name STRING, city STRING, vip BOOLEAN, joined DATE, note STRING",
    "orders": "id BIGINT, customer_id INT, sku STRING, amount DECIMAL(10, 2), qty INT, "
    "status STRING, placed TIMESTAMP(6), paid_at TIMESTAMP_LTZ(6), discount DECIMAL(5, 2)",
    "payments": "id INT, order_id BIGINT, amount DECIMAL(10, 2), method STRING",
}


def columns(table: str) -> list[str]:
    return [c.split()[0] for c in re.split(r",\s*(?![^()]*\))", TABLES[table])]


def job_sql(broker: str, topics: dict[str, str]) -> str:
    parts = ["SET 'table.local-time-zone' = 'UTC';"]
    for table, cols in TABLES.items():
        names = columns(table)
        parts.append(f"""
CREATE TABLE {table} ({cols}, PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'kafka', 'topic' = '{topics[table]}', 'properties.bootstrap.servers' = '{broker}',
      'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
      'format' = 'debezium-json');
CREATE TABLE {table}_out ({", ".join(f"{n} STRING" for n in names)}, PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{topics[table + "_out"]}',
      'properties.bootstrap.servers' = '{broker}', 'key.format' = 'json', 'value.format' = 'json');
INSERT INTO {table}_out SELECT {", ".join(f"CAST({n} AS STRING)" for n in names)} FROM {table};""")
    return "\n".join(parts)


def postgres_rows(table: str) -> dict[str, dict]:
    """PostgreSQL's final table in the text a CAST to STRING gives."""
    out = {}
    for line in (DATA / f"postgres.{table}.jsonl").read_text().splitlines():
        row = json.loads(line)
        for name, value in row.items():
            if value in ("True", "False"):
                row[name] = value.upper()
            elif name == "paid_at" and value is not None:
                row[name] = value.removesuffix("+00:00")
        out[f'{{"id":"{row["id"]}"}}'] = row
    return out


def test_every_table_equals_postgres(broker, new_topic, tmp_path):
    topics = {}
    for table in TABLES:
        topics[table], topics[table + "_out"] = new_topic(table), new_topic(table + "-out")
    ensure_topics(broker, list(topics.values()))
    producer = Producer({"bootstrap.servers": broker})
    for table in TABLES:
        for line in (DATA / f"dbz_string.public.{table}.jsonl").read_text().splitlines():
            record = json.loads(line)
            value = None if record["value"] is None else record["value"].encode()
            key = None if record["key"] is None else record["key"].encode()
            headers = [(k, None if v is None else v.encode()) for k, v in record["headers"]]
            producer.produce(topics[table], value, key, headers=headers)
    assert producer.flush(10) == 0
    sql = job_sql(broker, topics)
    Job(plan_job(sql).plan, JobOptions(state_dir=tmp_path / "state", bootstrap=broker)).run()
    for table in TABLES:
        got = fold_upsert_topic(broker, topics[table + "_out"])
        assert got == postgres_rows(table), table
        assert "__debezium_unavailable_value" not in json.dumps(got)
