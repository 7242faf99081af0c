"""``deltaflow demo``: the inventory CDC story on the embedded broker, in under a minute.

1. start the embedded broker and load Debezium events of the inventory database
   (customers, products, orders: snapshot rows, then inserts, updates, deletes);
2. show the changelog deltaflow decodes from each topic;
3. plan the join + aggregate job, print its plan, run it to the end of the topics;
4. read the upsert result topic back and print the final table.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from decimal import Decimal
from importlib import resources
from pathlib import Path

from deltaflow.formats.printing import row_printer

TOPICS = (
    "dbserver1.inventory.customers",
    "dbserver1.inventory.products",
    "dbserver1.inventory.orders",
)
RESULT_TOPIC = "customer_totals"


def example_text(name: str) -> str:
    return resources.files("deltaflow.processor").joinpath("examples", name).read_text("utf-8")


def load_events(bootstrap: str) -> int:
    """Produces the sample Debezium events (key and value JSON) to their topics."""
    from confluent_kafka import Producer

    from deltaflow.connectors.broker import ensure_topics

    ensure_topics(bootstrap, [*TOPICS, RESULT_TOPIC])
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    lines = example_text("inventory.jsonl").splitlines()
    for line in lines:
        event = json.loads(line)
        producer.produce(
            event["topic"], key=json.dumps(event["key"]), value=json.dumps(event["value"])
        )
    producer.flush(30)
    return len(lines)


def show_changelogs(planned, bootstrap: str) -> None:
    """Decodes each source topic to the end and prints its changelog, Flink's print format."""
    from deltaflow.connectors.base import create_source
    from deltaflow.processor.job_tables import scans_of, source_spec

    for scan in scans_of(planned.plan):
        spec = source_spec(scan, pushed=False)  # every row of the topic, whole
        source = create_source(spec, bootstrap=bootstrap, start="earliest")
        source.open(None)
        show = row_printer([t for _, t in spec.physical] + [t for _, _, t in spec.metadata])
        print(f"\n-- {scan.table} ({scan.options.get('topic')}):")
        while not source.finished():
            batch = source.poll(1000, 0.2)
            for kind, row in zip(batch.kinds, batch.rows, strict=True):
                print("  " + show(kind, row))
        source.close()


def read_result(bootstrap: str) -> dict[str, dict]:
    """The upsert topic folded into its final table: key -> latest value (tombstones delete)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "deltaflow-demo", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(RESULT_TOPIC, 0, 0)])
    table: dict[str, dict] = {}
    while True:
        msg = consumer.poll(5.0)
        if msg is None:
            break
        error, key, value = msg.error(), msg.key(), msg.value()
        if error is not None:
            if error.code() == error._PARTITION_EOF:
                break
            raise RuntimeError(str(error))
        assert key is not None, "the demo's result topic is keyed"
        if value is None:
            table.pop(key.decode(), None)
        else:
            table[key.decode()] = json.loads(value, parse_float=Decimal)
    consumer.close()
    return table


def print_table(rows: list[dict]) -> None:
    if not rows:
        print("  (empty)")
        return
    cols = list(rows[0])
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in cols]
    print("  " + " | ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    print("  " + "-+-".join("-" * w for w in widths))
    for r in rows:
        print("  " + " | ".join(str(r[c]).ljust(w) for c, w in zip(cols, widths, strict=True)))


def run_demo(bootstrap: str, state_dir: Path) -> list[dict]:
    from deltaflow.processor.job import Job, JobOptions
    from deltaflow.processor.planner.api import plan_job

    count = load_events(bootstrap)
    print(f"Loaded {count} Debezium events of the inventory database into {', '.join(TOPICS)}.")
    planned = plan_job(example_text("inventory.sql"), source_name="inventory.sql")
    print("\n== 1. The changelog deltaflow decodes from the Debezium topics")
    show_changelogs(planned, bootstrap)
    print("\n== 2. The job (deltaflow/processor/examples/inventory.sql) and its plan\n")
    print(planned.explain())
    job = Job(planned.plan, JobOptions(state_dir=state_dir, bootstrap=bootstrap))
    job.run()
    print(
        f"\n== 3. Ran to the end of the topics: {job.stats.total_in} changes in, "
        f"{sum(job.stats.events_out.values())} changes out to topic {RESULT_TOPIC!r}"
    )
    table = read_result(bootstrap)
    rows = sorted(table.values(), key=lambda r: r["customer_id"])
    print(f"\n== 4. Final table in {RESULT_TOPIC!r} (upsert topic, read back)\n")
    print_table(rows)
    return rows


def demo_cli(args: argparse.Namespace) -> int:
    from deltaflow.connectors.broker import EmbeddedBroker

    with EmbeddedBroker(port=args.port) as broker, tempfile.TemporaryDirectory() as tmp:
        print(f"Embedded broker (tansu) on {broker.bootstrap}")
        run_demo(broker.bootstrap, Path(tmp) / "state")
    return 0
