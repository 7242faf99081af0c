"""Run one TPC-H query as a deltaflow job over the Debezium topics and judge it with DuckDB.

The job reads every table from its topic (debezium-json, earliest to the end offsets at
start), writes the query's result to a kafka sink in debezium-json, and ends at the end of
its input. The sink topic folded as a multiset is the final table; DuckDB's answer on the
final snapshot is the expected one. Numbers are compared to the cent (AVG and divisions
are DOUBLE in DuckDB, DECIMAL in Flink); dates as ISO text.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from tpch_data import PRIMARY_KEYS, Dataset, encode
from tpch_queries import QUERIES, VIEWS

from deltaflow.connectors.broker import ensure_topics
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.planner.catalog import Catalog
from deltaflow.processor.planner.query import QueryBinder
from deltaflow.processor.sql import statements as S
from deltaflow.processor.sql.ddl import CreateTable
from deltaflow.processor.sql.script import parse_script


def produce(data: Dataset, broker: str, topic_of: dict[str, str]) -> None:
    ensure_topics(broker, list(topic_of.values()))
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 20})
    for table, events in data.events.items():
        for i, event in enumerate(events):
            producer.produce(topic_of[table], encode(event))
            if i % 10000 == 0:
                producer.poll(0)
    assert producer.flush(60) == 0


def source_ddl(data: Dataset, broker: str, topic_of: dict[str, str], extra: str = "") -> str:
    """The tables' CREATE TABLEs reading ``topic_of`` (``extra``: more options, such as
    ``'debezium-json.before-image' = 'message'``)."""
    out = []
    for table in PRIMARY_KEYS:
        options = (
            f"'connector' = 'kafka', 'topic' = '{topic_of[table]}', "
            f"'properties.bootstrap.servers' = '{broker}', 'scan.startup.mode' = 'earliest-offset', "
            "'scan.bounded.mode' = 'latest-offset', 'format' = 'debezium-json'"
            + (f", {extra}" if extra else "")
        )
        out.append(data.ddl(table, options))
    return "".join(out)


def job_sql(q: int, sources: str, broker: str, sink_topic: str) -> str:
    views = VIEWS[q] + ";\n" if q in VIEWS else ""
    columns = ", ".join(f"c{i} {t}" for i, t in enumerate(result_types(sources + views, q)))
    sink = (
        f"CREATE TABLE result ({columns}) WITH ('connector' = 'kafka', 'topic' = '{sink_topic}', "
        f"'properties.bootstrap.servers' = '{broker}', 'format' = 'debezium-json');\n"
    )
    return sources + views + sink + f"INSERT INTO result {QUERIES[q]};\n"


def result_types(ddl: str, q: int) -> list[str]:
    """The query's column types as deltaflow's binder derives them (the sink's columns)."""
    catalog = Catalog()
    for stmt in parse_script(ddl):
        if isinstance(stmt, CreateTable):
            catalog.add_table(stmt)
        elif isinstance(stmt, S.CreateView):
            catalog.add_view(stmt.name, stmt.query, stmt.columns, stmt.pos)
    (query,) = parse_script(QUERIES[q])
    rel = QueryBinder(catalog, {}).query(query.query)
    return [c.type.with_nullable(True).sql() for c in rel.columns]


def run_query(sql: str, broker: str, sink_topic: str, state: Path) -> tuple[Counter, float, set]:
    """The final table of the job's sink topic, the seconds the job ran, the tables it read."""
    planned = plan_job(sql)
    tables = set(re.findall(r"default_database, (\w+)\]\]", planned.explain()))
    ensure_topics(broker, [sink_topic])
    started = time.monotonic()
    Job(planned.plan, JobOptions(state_dir=state, bootstrap=broker)).run()
    return fold(broker, sink_topic), time.monotonic() - started, tables


def fold(broker: str, topic: str) -> Counter:
    """The sink topic folded as a multiset: each record's ``before`` taken out, its ``after``
    added (each distinct record decoded once, with its count)."""
    consumer = Consumer(
        {"bootstrap.servers": broker, "group.id": "tpch-fold", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    records: Counter = Counter()
    try:
        while True:
            msgs = consumer.consume(10_000, 10.0)
            assert msgs, f"no end of partition reached on {topic}"
            records.update(m.value() for m in msgs if not m.error())
            for msg in msgs:
                if msg.error():
                    assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                    return _folded(records)
    finally:
        consumer.close()


def _folded(records: Counter) -> Counter:
    table: Counter = Counter()
    for value, count in records.items():
        event = json.loads(value)
        if event.get("before") is not None:
            table[_row(event["before"])] -= count
        if event.get("after") is not None:
            table[_row(event["after"])] += count
    return +table


def _row(values: dict) -> tuple:
    return tuple(values[f"c{i}"] for i in range(len(values)))


def duckdb_answer(data: Dataset, q: int) -> list[tuple]:
    if q in VIEWS:
        data.con.execute(f"CREATE OR REPLACE TEMP {VIEWS[q].removeprefix('CREATE ')}")
    return data.con.execute(QUERIES[q]).fetchall()


def continuous_answer(rows: list[tuple], q: int) -> list[tuple]:
    """DuckDB's rows as a continuous query ends with them. A query without GROUP BY that
    aggregates no rows gives one row of NULLs in a batch query, and no row as a continuous
    query (Flink's and deltaflow's GroupAggregate emit a group's row when its first input
    row arrives, and delete it with its last): e.g. Q17 at SF 0.01."""
    grouped = "GROUP BY" in QUERIES[q].rsplit(")", 1)[-1]
    if not grouped and len(rows) == 1 and all(v is None for v in rows[0]):
        return []
    return rows


def differences(ours: Counter, expected: list[tuple]) -> list[str]:
    """What differs between our final table and DuckDB's rows (empty when they agree)."""
    mine = sorted((_norm(r) for r in ours.elements()), key=repr)
    theirs = sorted((_norm(r) for r in expected), key=repr)
    if len(mine) != len(theirs):
        return [f"{len(mine)} rows, DuckDB has {len(theirs)}", *map(repr, (mine + theirs)[:4])]
    return [f"{a!r} vs DuckDB {b!r}" for a, b in zip(mine, theirs, strict=True) if not _same(a, b)]


def _norm(row: tuple) -> tuple:
    out = []
    for v in row:
        if isinstance(v, Decimal | int | float) and not isinstance(v, bool):
            out.append(round(float(v), 2))  # the sort key; _same compares closer
        elif isinstance(v, dt.date):
            out.append(v.isoformat())
        else:
            out.append(v)
    return tuple(out)


def _same(a: tuple, b: tuple) -> bool:
    for x, y in zip(a, b, strict=True):
        if isinstance(x, float) and isinstance(y, float):
            if abs(x - y) > 0.011 + 1e-9 * abs(y):
                return False
        elif x != y:
            return False
    return True
