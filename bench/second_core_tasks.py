"""The work ``bench.second_core`` times: deltaflow's real decoder and sink encoder as the
bench's W3 and W2 jobs build them, and the batches they work on (bench.data's messages,
W3- and W2-shaped output rows)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from bench.data import Shape, encoded, item_events, order_events

BATCH = 5000  # processor/job.py POLL_RECORDS
ORDER_SHAPE = "iiidst"  # order_id, merchant_id, item_id, amount, status, updated_at
TOPICS = {"orders": "orders", "items": "items", "out": "out"}


@dataclass
class Task:
    name: str
    direction: str  # "decode": the worker produces rows; "encode": it consumes them
    batches: list  # RawBatch (decode) or (kinds, rows) (encode)
    work: object  # one batch's real work
    shape: str  # the handed rows' columns (bench.handoff.PY_TYPES letters)
    messages: int


def _planned(workload: str):
    from bench.jobs import kafka_job
    from deltaflow.processor.planner.api import plan_job

    return plan_job(kafka_job(workload, "127.0.0.1:9", TOPICS), source_name=workload).plan


def orders_decoder(workload: str):
    """The orders scan's value decoder as the job builds it (connectors/kafka.py, and
    processor/runtime/normalize_source.py when before-images come from state)."""
    from deltaflow.connectors import kafka
    from deltaflow.connectors.layout import build_layout
    from deltaflow.processor.job_tables import scans_of, source_spec

    scan = next(s for s in scans_of(_planned(workload)) if s.table.endswith(".orders"))
    spec = source_spec(scan)
    decoder, _ = build_layout(spec, kafka.table_options(spec)).decoders(spec.name)
    if scan.normalize:  # processor/job_inputs.py install_checks
        decoder.accept_partial_images()
    return decoder


def sink_encoder(workload: str):
    """The job's upsert-kafka sink encoder: a Batch -> (keys, values, None, None)."""
    from deltaflow.connectors import upsert_kafka
    from deltaflow.formats.changelog import Batch
    from deltaflow.processor.job_tables import sink_spec

    spec = sink_spec(_planned(workload).sinks[0])
    encode = upsert_kafka._sink_encoder(spec, *upsert_kafka._options(spec))
    return lambda batch: encode(Batch(*batch))


def raw_batches(values: list[bytes]) -> list:
    from deltaflow.formats.changelog import RawBatch

    return [
        RawBatch(
            "orders", 0, list(range(at, min(at + BATCH, len(values)))), values[at : at + BATCH]
        )
        for at in range(0, len(values), BATCH)
    ]


def joined_rows(decoded: list, items: dict) -> list:
    """W3-shaped output: each decoded order change joined with its item, when it exists."""
    out = []
    for batch in decoded:
        kinds, rows = [], []
        for kind, (oid, merchant, item, amount, *_) in zip(batch.kinds, batch.rows, strict=True):
            found = items.get((merchant, item))
            if found is not None:
                kinds.append(kind)
                rows.append((oid, merchant, item, amount, *found))
        out.append((kinds, rows))
    return out


def aggregated_rows(decoded: list) -> list:
    """W2-shaped output: count and sum per merchant, +I or -U/+U per change (an update's
    -U/+U of one merchant taken as one change of its sum)."""
    groups: dict = {}
    out = []
    for batch in decoded:
        kinds, rows = [], []
        changes = _changes(batch.kinds, batch.rows)
        for merchant, count_delta, amount_delta in changes:
            old = groups.get(merchant)
            count, total = old or (0, Decimal("0.00"))
            new = (count + count_delta, total + amount_delta)
            if old is not None:
                kinds.append(1)
                rows.append((merchant, *old))
            kinds.append(0 if old is None else 2)
            rows.append((merchant, *new))
            groups[merchant] = new
        out.append((kinds, rows))
    return out


def _changes(kinds: list, rows: list) -> list:
    """(merchant, count change, amount change) per change of the decoded orders."""
    out, at = [], 0
    while at < len(kinds):
        kind, row = kinds[at], rows[at]
        after = rows[at + 1] if at + 1 < len(kinds) else None
        if kind == 1 and after is not None and kinds[at + 1] == 2 and after[1] == row[1]:
            out.append((row[1], 0, after[3] - row[3]))
            at += 2
            continue
        sign = 1 if kind in (0, 2) else -1
        out.append((row[1], sign, sign * row[3]))
        at += 1
    return out


def final_items(shape: Shape) -> dict:
    items: dict = {}
    for key, event in item_events(shape):
        after = event["after"]
        k = (key["merchant_id"], key["item_id"])
        if after is None:
            items.pop(k, None)
        else:
            items[k] = (after["item_name"], Decimal(str(after["price"])).quantize(Decimal("0.01")))
    return items


def tasks(shape: Shape) -> list[Task]:
    values = [v for _, v in encoded(order_events(shape))]
    raws = raw_batches(values)
    out = []
    for workload in ("W3", "W2", "W1msg"):
        decoder = orders_decoder(workload)
        out.append(Task(f"decode {workload}", "decode", raws, decoder.decode, ORDER_SHAPE,
                        len(values)))  # fmt: skip
    w3 = [orders_decoder("W3").decode(r) for r in raws]
    joined = joined_rows(w3, final_items(shape))
    out.append(Task("encode W3", "encode", joined, sink_encoder("W3"), "iiidsd", len(values)))
    summed = aggregated_rows([orders_decoder("W2").decode(r) for r in raws])
    out.append(Task("encode W2", "encode", summed, sink_encoder("W2"), "iid", len(values)))
    return out


def rows_of(task: Task, batch):
    """(kinds, rows) a batch hands over (a decode's output, an encode's input)."""
    if task.direction == "encode":
        return batch
    done = task.work(batch)
    return done.kinds, done.rows
