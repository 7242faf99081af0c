"""A WHERE pushed into the Kafka source's decoder, end to end on the broker: the sink
gets the WHERE's result, and the job still counts every change it read; with before-images
from the messages, and from state (the normalizer stores a Rejected row for an image failing
the tests and never emits it)."""

from __future__ import annotations

import json

from confluent_kafka import Producer
from tests_support import fold_upsert_topic

from deltaflow.connectors.broker import ensure_topics
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

JOB = """
CREATE TABLE orders (id INT, status STRING, qty INT{extra}, PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{bs}',
      'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
      'format' = 'debezium-json', 'debezium-json.before-image' = 'message');
CREATE TABLE paid (id INT, qty INT{out_extra}, PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{dst}', 'properties.bootstrap.servers' = '{bs}',
      'key.format' = 'json', 'value.format' = 'json');
INSERT INTO paid SELECT id, qty{select_extra} FROM orders WHERE status = 'PAID' AND qty > 1;
"""
STATUSES = ["NEW", "PAID", "SHIPPED"]


def history() -> list[dict]:
    """12,000 changes of 500 orders; the first 6,000 never PAID (whole batches dropped)."""
    live: dict[int, dict] = {}
    out = []
    for n in range(12_000):
        i = n % 500
        status = "NEW" if n < 6_000 else STATUSES[(n * 7) % 3]
        after = {"id": i, "status": status, "qty": n % 4}
        before = live.get(i)
        if before is not None and n % 11 == 0:
            out.append({"op": "d", "before": before, "after": None})
            del live[i]
            continue
        out.append({"op": "u" if before else "c", "before": before, "after": after})
        live[i] = after
    return out


def expected(changes: list[dict]) -> dict:
    live: dict[int, dict] = {}
    for c in changes:
        image = c["after"] or c["before"]
        if c["after"] is None:
            live.pop(image["id"])
        else:
            live[image["id"]] = c["after"]
    return {
        json.dumps({"id": i}, separators=(",", ":")): {"id": i, "qty": r["qty"]}
        for i, r in live.items()
        if r["status"] == "PAID" and r["qty"] > 1
    }


def run(broker, new_topic, tmp_path, extra: str = "", out_extra: str = "", select_extra: str = "",
        state: bool = False):  # fmt: skip
    src, dst = new_topic("orders"), new_topic("paid")
    ensure_topics(broker, [src, dst])
    changes = history()
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 20})
    for c in changes:
        producer.produce(src, json.dumps(c).encode())
    producer.flush(30)
    sql = JOB.format(src=src, dst=dst, bs=broker, extra=extra, out_extra=out_extra,
                     select_extra=select_extra)  # fmt: skip
    if state:  # before-images from state, the default with a primary key
        sql = sql.replace(", 'debezium-json.before-image' = 'message'", "")
    job = Job(plan_job(sql).plan, JobOptions(state_dir=tmp_path / "s", bootstrap=broker))
    decoder = next(iter(job.inputs.sources.values())).value_decoder
    job.run()
    images = sum(2 if c["op"] == "u" else 1 for c in changes)
    return fold_upsert_topic(broker, dst), changes, job.stats.total_in, images, decoder


def test_pushed_filter_gives_the_where_result_and_counts_every_change(
    broker, new_topic, tmp_path
) -> None:
    table, changes, counted, images, decoder = run(broker, new_topic, tmp_path)
    assert decoder.filtered > images // 2  # the decoder dropped the images the WHERE rejects
    assert counted == images
    assert table == expected(changes)


def test_record_metadata_keeps_every_image(broker, new_topic, tmp_path) -> None:
    # rows are matched to their records by count when record metadata is read: no pushdown
    table, changes, counted, images, decoder = run(
        broker, new_topic, tmp_path, extra=", off BIGINT METADATA FROM 'offset' VIRTUAL"
    )
    assert decoder.filtered == 0
    assert counted == images
    assert table == expected(changes)


def test_state_mode_pushes_the_filter_and_gives_the_where_result(broker, new_topic, tmp_path):
    table, changes, _, _, decoder = run(broker, new_topic, tmp_path, state=True)
    # most images fail the tests: built as Rejected rows, stored, never emitted
    assert decoder.withheld > len(changes) // 2
    assert decoder.filtered == decoder.inner.filtered + decoder.withheld
    assert table == expected(changes)
