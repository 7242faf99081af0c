"""Debezium's logical types end to end on the broker: exact values through a job, its
LMDB state and a JSON sink.

The records are shaped as Kafka Connect's JsonConverter writes them by default
(``{"schema": .., "payload": ..}``) and the source is declared without
``'debezium-json.schema-include'``, as the README declares it. The expected values
follow from the types' definitions (epoch days, milliseconds, microseconds and
nanoseconds, the unscaled bytes of a decimal), computed by hand:

- 2024-02-29 is day 19782 (2024-01-01 is day 19723, plus 31 + 28);
- 2024-02-29 12:34:56 UTC is 1709210096 s; 23:59:59 that day is 1709251199 s;
- 14:23:07.36672 is 51787 s and 366720 us of the day;
- -2704.67 at scale 2 is the unscaled -270467: bytes fb df 7d, base64 "+999";
- -31259.64123 at scale 5 is -3125964123: base64 "/0WtkqU=".
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from deltaflow.connectors.broker import ensure_topics
from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job


def logical(kind: str, name: str | None = None, **params: str) -> dict:
    field: dict = {"type": kind, "optional": True}
    if name:
        field.update(name=name, version=1)
    if params:
        field["parameters"] = params
    return field


T = "io.debezium.time."
COLUMNS = {  # column -> (Flink type, Connect field schema)
    "id": ("INT", {"type": "int32", "optional": False}),
    "d": ("DATE", logical("int32", T + "Date")),
    "t3": ("TIME(3)", logical("int32", T + "Time")),
    "t6": ("TIME(6)", logical("int64", T + "MicroTime")),
    "tn": ("TIME(6)", logical("int64", T + "NanoTime")),
    "tz": ("TIME(6)", logical("string", T + "ZonedTime")),
    "ts3": ("TIMESTAMP(3)", logical("int64", T + "Timestamp")),
    "ts6": ("TIMESTAMP(6)", logical("int64", T + "MicroTimestamp")),
    "ts9": ("TIMESTAMP(9)", logical("int64", T + "NanoTimestamp")),
    "zts": ("TIMESTAMP_LTZ(9)", logical("string", T + "ZonedTimestamp")),
    "zts6": ("TIMESTAMP_LTZ(6)", logical("string", T + "ZonedTimestamp")),
    "amount": (
        "DECIMAL(10, 2)",
        logical("bytes", "org.apache.kafka.connect.data.Decimal", scale="2"),
    ),
    "vsd": ("DECIMAL(20, 4)", logical("struct", "io.debezium.data.VariableScaleDecimal")),
    "f": ("FLOAT", logical("float")),
    "fmax": ("FLOAT", logical("float")),
}
ROW = {
    "id": 1,
    "d": 19782,
    "t3": 51787366,
    "t6": 51787366720,
    "tn": 86399999999999,
    "tz": "16:23:07.36672+02:00",
    "ts3": 1709210096789,
    "ts6": 1709210096789012,
    "ts9": 1709251199999999999,
    "zts": "2024-03-01T01:59:59.123456789+02:00",
    "zts6": "2024-02-29T23:59:59.123456Z",
    "amount": "+999",
    "vsd": {"scale": 5, "value": "/0WtkqU="},
    "f": 0.1,
    "fmax": 3.4028235e38,
}
EXPECTED = {  # the sink's JSON text of each column
    "id": "1",
    "d": '"2024-02-29"',
    "t3": '"14:23:07.366"',
    "t6": '"14:23:07.36672"',
    "tn": '"23:59:59.999999"',
    "tz": '"14:23:07.36672"',
    "ts3": '"2024-02-29 12:34:56.789"',
    "ts6": '"2024-02-29 12:34:56.789012"',
    "ts9": '"2024-02-29 23:59:59.999999999"',
    "zts": '"2024-02-29 23:59:59.123456789Z"',
    "zts6": '"2024-02-29 23:59:59.123456Z"',
    "amount": "-2704.67",
    "vsd": "-31259.6412",
    "f": "0.1",
    "fmax": "3.4028235E38",
}


def envelope(op: str, before: dict | None, after: dict | None) -> bytes:
    """One change as the JsonConverter writes it with schemas.enable=true."""
    fields = [{**schema, "field": name} for name, (_, schema) in COLUMNS.items()]
    image = {"type": "struct", "optional": True, "name": "pg.public.v.Value", "fields": fields}
    schema = {
        "type": "struct",
        "name": "pg.public.v.Envelope",
        "fields": [
            {**image, "field": "before"},
            {**image, "field": "after"},
            {"type": "string", "optional": False, "field": "op"},
        ],
    }
    payload = {"before": before, "after": after, "op": op, "ts_ms": 1709251200000}
    return json.dumps({"schema": schema, "payload": payload}).encode()


LOGICAL_MESSAGE = json.dumps(
    {
        "schema": {"type": "struct", "name": "io.debezium.connector.common.Message"},
        "payload": {"op": "m", "ts_ms": 1, "message": {"prefix": "p", "content": "eA=="}},
    }
).encode()

SOURCE = """
CREATE TABLE v ({columns}, PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{bs}',
      'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
      'format' = 'debezium-json'{extra});
"""


def produce(broker: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": broker})
    for value in values:
        producer.produce(topic, value)
    producer.flush(30)


def run(broker: str, sql: str, tmp_path) -> Job:
    job = Job(plan_job(sql).plan, JobOptions(state_dir=tmp_path / "state", bootstrap=broker))
    job.run()
    return job


def last_values(broker: str, topic: str) -> dict[bytes, bytes]:
    """The raw text of the last record of each key (none of these sinks deletes)."""
    consumer = Consumer(
        {"bootstrap.servers": broker, "group.id": "values", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    out: dict[bytes, bytes] = {}
    try:
        while (msg := consumer.poll(10.0)) is not None:
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                return out
            out[msg.key()] = msg.value()
    finally:
        consumer.close()
    raise AssertionError(f"no end of partition reached on {topic}")


def test_logical_types_give_exact_values_in_the_sink(broker, new_topic, tmp_path) -> None:
    src, dst = new_topic("v"), new_topic("out")
    ensure_topics(broker, [src, dst])
    second = {**ROW, "id": 2, "ts9": ROW["ts9"] - 1}
    changed = {**ROW, "ts9": ROW["ts9"] - 2}
    produce(
        broker,
        src,
        [
            envelope("r", None, ROW),
            LOGICAL_MESSAGE,
            envelope("c", None, second),
            envelope("u", ROW, changed),
            envelope("u", changed, ROW),
        ],
    )
    columns = ", ".join(f"{name} {kind}" for name, (kind, _) in COLUMNS.items())
    sql = (
        SOURCE.format(columns=columns, src=src, bs=broker, extra="")
        + f"""
CREATE TABLE out ({columns}, PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{dst}', 'properties.bootstrap.servers' = '{broker}',
      'key.format' = 'json', 'value.format' = 'json');
INSERT INTO out SELECT * FROM v;
"""
    )
    job = run(broker, sql, tmp_path)
    values = last_values(broker, dst)
    text = "{" + ",".join(f'"{name}":{EXPECTED[name]}' for name in COLUMNS) + "}"
    assert values[b'{"id":1}'].decode() == text
    other = text.replace('"id":1', '"id":2').replace(".999999999", ".999999998", 1)
    assert values[b'{"id":2}'].decode() == other
    assert job.stats.messages == {"default_catalog.default_database.v": 1}


def test_nanoseconds_in_group_keys_and_aggregate_state(broker, new_topic, tmp_path) -> None:
    """Two timestamps one nanosecond apart are two groups and two distinct values; the
    largest keeps its nanoseconds through the aggregate's state."""
    src, dst = new_topic("v"), new_topic("agg")
    ensure_topics(broker, [src, dst])
    rows = [
        {**ROW, "id": 1},
        {**ROW, "id": 2, "ts9": ROW["ts9"] - 1},
        {**ROW, "id": 3},
        {**ROW, "id": 4, "d": 19783, "ts9": ROW["ts9"] - 1},
    ]
    changes = [envelope("c", None, row) for row in rows]
    changes.append(envelope("d", rows[2], None))  # one of the two at .999999999 leaves
    produce(broker, src, changes)
    columns = "id INT, d DATE, ts9 TIMESTAMP(9)"
    sql = (
        SOURCE.format(columns=columns, src=src, bs=broker, extra="")
        + f"""
CREATE TABLE agg (ts9 TIMESTAMP(9), n BIGINT, days BIGINT, PRIMARY KEY (ts9) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{dst}', 'properties.bootstrap.servers' = '{broker}',
      'key.format' = 'json', 'value.format' = 'json');
INSERT INTO agg SELECT ts9, COUNT(*), COUNT(DISTINCT d) FROM v GROUP BY ts9;
"""
    )
    run(broker, sql, tmp_path)
    got = {json.loads(k)["ts9"]: json.loads(v) for k, v in last_values(broker, dst).items()}
    assert got == {
        "2024-02-29 23:59:59.999999999": {
            "ts9": "2024-02-29 23:59:59.999999999",
            "n": 1,
            "days": 1,
        },
        "2024-02-29 23:59:59.999999998": {
            "ts9": "2024-02-29 23:59:59.999999998",
            "n": 2,
            "days": 2,
        },
    }


def plain_change(amount: object) -> bytes:
    return json.dumps({"before": None, "after": {"id": 1, "amount": amount}, "op": "c"}).encode()


def test_payload_only_base64_decimals_with_the_option(broker, new_topic, tmp_path) -> None:
    src, dst = new_topic("v"), new_topic("out")
    ensure_topics(broker, [src, dst])
    produce(broker, src, [plain_change("+999")])
    extra = ", 'debezium-json.decimal-encoding' = 'base64'"
    sql = SOURCE.format(columns="id INT, amount DECIMAL(10, 2)", src=src, bs=broker, extra=extra)
    sql += f"""
CREATE TABLE out (id INT, amount DECIMAL(10, 2), PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{dst}', 'properties.bootstrap.servers' = '{broker}',
      'key.format' = 'json', 'value.format' = 'json');
INSERT INTO out SELECT * FROM v;
"""
    run(broker, sql, tmp_path)
    assert last_values(broker, dst) == {b'{"id":1}': b'{"id":1,"amount":-2704.67}'}


def test_a_decimal_not_in_the_declared_encoding_stops_the_job(broker, new_topic, tmp_path) -> None:
    src, dst = new_topic("v"), new_topic("out")
    ensure_topics(broker, [src, dst])
    produce(broker, src, [plain_change("12.50"), plain_change("AA==")])
    sql = SOURCE.format(columns="id INT, amount DECIMAL(10, 2)", src=src, bs=broker, extra="")
    sql += f"""
CREATE TABLE out (id INT, amount DECIMAL(10, 2), PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{dst}', 'properties.bootstrap.servers' = '{broker}',
      'key.format' = 'json', 'value.format' = 'json');
INSERT INTO out SELECT * FROM v;
"""
    with pytest.raises(DeltaflowError) as info:
        run(broker, sql, tmp_path)
    text = str(info.value)
    assert f"topic '{src}' partition 0 offset 1" in text
    assert "'debezium-json.decimal-encoding' = 'string'" in text
    assert "'base64' (precise)" in text


REAL = Path(__file__).resolve().parents[1] / "data" / "debezium" / "pg15-dbz363"
ORDERS = (
    "id BIGINT, customer_id INT, sku VARCHAR(20), amount DECIMAL(10, 2), qty INT, "
    "status VARCHAR(20), placed TIMESTAMP(6), paid_at TIMESTAMP_LTZ(6), discount DECIMAL(5, 2)"
)


def _typed(column: str, text: str | None) -> object:
    """A value of PostgreSQL's text (or of the sink's JSON text) as a comparable value."""
    if text is None:
        return None
    if column in ("placed", "paid_at"):
        return dt.datetime.fromisoformat(text)
    if column in ("amount", "discount"):
        return Decimal(text)
    return int(text) if column in ("id", "customer_id", "qty") else text


@pytest.mark.parametrize(
    ("combo", "extra"),
    [
        ("full-precise-schemas", ""),  # Debezium's and Kafka Connect's defaults, as is
        ("full-precise-noschemas", ", 'debezium-json.decimal-encoding' = 'base64'"),
    ],
)
def test_real_debezium_records_give_postgres_table(broker, new_topic, tmp_path, combo, extra):
    """Records of a real Debezium 3.6.3 PostgreSQL connector, produced unchanged (keys,
    values, tombstones, headers), read as the README declares the source."""
    src, dst = new_topic("orders"), new_topic("out")
    ensure_topics(broker, [src, dst])
    producer = Producer({"bootstrap.servers": broker})
    for line in (REAL / f"{combo}.orders.jsonl").open():
        r = json.loads(line)
        value = None if r["value"] is None else r["value"].encode()
        headers = [(k, None if v is None else v.encode()) for k, v in r["headers"]]
        producer.produce(src, value, r["key"] and r["key"].encode(), headers=headers)
    producer.flush(30)
    sql = (
        SOURCE.format(columns=ORDERS, src=src, bs=broker, extra=extra)
        + f"""
CREATE TABLE out ({ORDERS}, PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{dst}', 'properties.bootstrap.servers' = '{broker}',
      'key.format' = 'json', 'value.format' = 'json');
INSERT INTO out SELECT * FROM v;
"""
    )
    run(broker, sql, tmp_path)
    got = {}
    for key, value in last_values(broker, dst).items():
        if value is not None:
            row = json.loads(value, parse_float=Decimal)
            got[json.loads(key)["id"]] = {
                c: _typed(c, None if v is None else str(v)) for c, v in row.items()
            }
    want = {}
    for line in (REAL / "postgres.orders.jsonl").open():
        row = json.loads(line)
        want[int(row["id"])] = {c: _typed(c, v) for c, v in row.items()}
    assert got == want
