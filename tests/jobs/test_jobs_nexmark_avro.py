"""Nexmark's nested events as Avro records on the real broker, against Flink's results of the
same jobs over the same events as JSON (``cases/calc_nexmark_q1``, ``window_tumble_nexmark_bids``).

The records are written with fastavro from a schema spelled out here in the shape Flink's
``AvroSchemaConverter`` gives the Nexmark table (nullable fields as ``["null", T]`` unions,
ROW columns as nested records, TIMESTAMP(3) as ``timestamp-millis``), not with deltaflow's
encoder, so the decoder is checked against an independent writer."""

from __future__ import annotations

import datetime as dt
import io

import fastavro
import jobs_cases as jc
from confluent_kafka import Producer
from test_jobs import check

from deltaflow.connectors.broker import ensure_topics
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

_TS = {"type": "long", "logicalType": "timestamp-millis"}


def _record(name: str, fields: list[tuple[str, object]]) -> list:
    spec = [{"name": n, "type": ["null", t], "default": None} for n, t in fields]
    return ["null", {"type": "record", "name": f"record_{name}", "fields": spec}]


PERSON = [("id", "long"), ("name", "string"), ("emailAddress", "string"),
          ("creditCard", "string"), ("city", "string"), ("state", "string"), ("dateTime", _TS),
          ("extra", "string")]  # fmt: skip
AUCTION = [("id", "long"), ("itemName", "string"), ("description", "string"),
           ("initialBid", "long"), ("reserve", "long"), ("dateTime", _TS), ("expires", _TS),
           ("seller", "long"), ("category", "long"), ("extra", "string")]  # fmt: skip
BID = [("auction", "long"), ("bidder", "long"), ("price", "long"), ("channel", "string"),
       ("url", "string"), ("dateTime", _TS), ("extra", "string")]  # fmt: skip
SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "org.apache.flink.avro.generated.record", "fields": [
        {"name": "event_type", "type": ["null", "int"], "default": None},
        {"name": "person", "type": _record("person", PERSON)},
        {"name": "auction", "type": _record("auction", AUCTION)},
        {"name": "bid", "type": _record("bid", BID)},
    ],
})  # fmt: skip


def _avro(event: dict) -> bytes:
    """One Nexmark JSON event as an Avro record: timestamps as UTC datetimes."""
    value = {"event_type": event["event_type"]}
    for part in ("person", "auction", "bid"):
        obj = event[part]
        value[part] = obj and {k: _time(k, v) for k, v in obj.items()}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, SCHEMA, value)
    return out.getvalue()


def _time(key: str, value: object) -> object:
    if key in ("dateTime", "expires") and isinstance(value, str):
        return dt.datetime.strptime(value, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=dt.UTC)
    return value


def _run(name: str, broker: str, new_topic, tmp_path) -> None:  # noqa: ANN001
    case = jc.load(name)
    topics = {"nexmark": new_topic(f"avro-{name}"), "sink": new_topic(f"avro-{name}-sink")}
    ensure_topics(broker, list(topics.values()))
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 5})
    for event in jc.events("nexmark"):
        producer.produce(topics["nexmark"], value=_avro(event))
    producer.flush(30)
    sql = jc.kafka_sql(case, broker, topics).replace("'format' = 'json'", "'format' = 'avro'", 1)
    assert "'format' = 'avro'" in sql
    plan = plan_job(sql).plan
    Job(plan, JobOptions(state_dir=tmp_path / "state", bootstrap=broker)).run()
    check(case, broker, topics["sink"], plan.sinks[0])


def test_nexmark_q1_over_avro_records_matches_flink(broker, new_topic, tmp_path) -> None:
    _run("calc_nexmark_q1", broker, new_topic, tmp_path)


def test_nexmark_window_over_avro_records_matches_flink(broker, new_topic, tmp_path) -> None:
    _run("window_tumble_nexmark_bids", broker, new_topic, tmp_path)
