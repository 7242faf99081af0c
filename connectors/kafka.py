"""The ``kafka`` connector (Flink's option names): source and append/changelog sink."""

from __future__ import annotations

import datetime as dt
from operator import itemgetter

from deltaflow.connectors import kafka_client
from deltaflow.connectors.base import ALL_KINDS, INSERT_ONLY, TableSpec
from deltaflow.connectors.kafka_sink import (
    PARTITIONERS,
    WRITABLE_METADATA,
    KafkaSink,
    RecordWriter,
    delivery_guarantee,
)
from deltaflow.connectors.kafka_source import KafkaSource
from deltaflow.connectors.layout import build_layout, format_prefixes, make_decoder, make_encoder
from deltaflow.connectors.options import TableOptions
from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.spec import FormatSpec

COMMON = (
    "topic", "format", "key.format", "key.fields", "key.fields-prefix", "value.format",
    "value.fields-include", "sink.parallelism", "scan.parallelism", "deadletter.topic",
    "bucket.key",  # Fluss-style index declaration read by the delta join/aggregate planner
)  # fmt: skip
SOURCE_ONLY = (
    "topic-pattern", "scan.topic-partition-discovery.interval", "scan.startup.mode",
    "scan.startup.specific-offsets", "scan.startup.timestamp-millis", "scan.bounded.mode", "scan.bounded.specific-offsets",
    "scan.bounded.timestamp-millis", "scan.offset-out-of-range",
)  # fmt: skip
SINK_ONLY = (
    "sink.partitioner",
    "sink.delivery-guarantee",
    "sink.semantic",
    "sink.transactional-id-prefix",
)
# Value formats that carry row kinds, so the sink can write every kind of change.
CHANGELOG_FORMATS = ("debezium-json", "debezium-avro-confluent")


def table_options(spec: TableSpec) -> TableOptions:
    known = COMMON + SOURCE_ONLY + SINK_ONLY
    return TableOptions(
        spec.name, "kafka", spec.options, known, ["properties.", *format_prefixes(spec.options)]
    )


def source_mode(spec: TableSpec) -> frozenset[RowKind]:
    opts = table_options(spec)
    layout = build_layout(spec, opts)
    return frozenset(make_decoder(spec.name, layout.value_format, layout.value_spec).changelog_mode)


def open_source(spec: TableSpec, bootstrap: str | None, start: str | None) -> KafkaSource:
    opts = table_options(spec)
    layout = build_layout(spec, opts)
    conf = kafka_client.client_config(opts, bootstrap)
    source = KafkaSource(opts, layout, conf, start, frozenset())
    source.changelog_mode = frozenset(source.value_decoder.changelog_mode)
    return source


def sink_mode(spec: TableSpec) -> frozenset[RowKind]:
    opts = table_options(spec)
    fmt = opts.get("value.format") or opts.get("format")
    return ALL_KINDS if fmt in CHANGELOG_FORMATS else INSERT_ONLY


def open_sink(spec: TableSpec, bootstrap: str | None, out=None) -> KafkaSink:
    opts = table_options(spec)
    if opts.get("topic-pattern") or ";" in opts.required("topic"):
        raise opts.error("a Kafka sink writes to one topic: set option 'topic' to a single name")
    guarantee = delivery_guarantee(opts)
    partitioner = opts.choice("sink.partitioner", PARTITIONERS, "default")
    conf = kafka_client.client_config(opts, bootstrap)
    writer = RecordWriter(opts, conf, opts.required("topic"), guarantee, partitioner)
    return KafkaSink(opts, writer, sink_encoder(spec, opts), sink_mode(spec))


def sink_encoders(spec: TableSpec) -> None:
    """The sink's encoders built, not used (``connectors.base.build_sink_encoders``)."""
    sink_encoder(spec, table_options(spec))


def _projector(indexes: list[int], width: int):
    if indexes == list(range(width)):
        return None
    if len(indexes) == 1:
        i = indexes[0]
        return lambda row: (row[i],)
    return itemgetter(*indexes)


def sink_encoder(spec: TableSpec, opts: TableOptions):
    """A function turning a batch into (keys, values, timestamps, headers) to produce."""
    layout = build_layout(spec, opts)
    names = [n for n, _ in spec.physical]
    width = len(names) + len(spec.metadata)
    value_idx = [names.index(n) for n in layout.value_spec.names]
    value_enc = make_encoder(
        spec.name,
        layout.value_format,
        FormatSpec(layout.value_spec.physical, [], layout.value_spec.options),
    )
    project_value = _projector(value_idx, width)
    key_enc = project_key = None
    if layout.key_format and layout.key_spec is not None:
        key_enc = make_encoder(spec.name, layout.key_format, layout.key_spec)
        project_key = _projector(layout.key_columns, -1)
    stamp_col, header_col = _writable_metadata(spec, opts)

    def encode(batch: Batch):
        vb = (
            batch
            if project_value is None
            else Batch(batch.kinds, [project_value(r) for r in batch.rows])
        )
        values = value_enc.encode(vb)
        keys = (
            key_enc.encode(Batch(batch.kinds, [project_key(r) for r in batch.rows]))
            if key_enc
            else None
        )  # type: ignore[misc]
        stamps = [_millis(r[stamp_col]) for r in batch.rows] if stamp_col is not None else None
        headers = [r[header_col] for r in batch.rows] if header_col is not None else None
        if len(values) != len(batch) and (keys or stamps or headers):
            raise opts.error(
                f"format '{layout.value_format}' wrote {len(values)} records for {len(batch)} "
                "changes, so keys and metadata cannot be paired with them"
            )
        return keys, values, stamps, headers

    return encode


def _writable_metadata(spec: TableSpec, opts: TableOptions) -> tuple[int | None, int | None]:
    base = len(spec.physical)
    stamp = header = None
    for i, (_, key, _) in enumerate(spec.metadata):
        if key == "timestamp":
            stamp = base + i
        elif key == "headers":
            header = base + i
        else:
            raise opts.error(
                f"metadata '{key}' cannot be written by a Kafka sink; writable keys are: "
                + ", ".join(WRITABLE_METADATA)
                + " (declare read-only metadata VIRTUAL)"
            )
    return stamp, header


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS = dt.timedelta(milliseconds=1)


def _millis(value) -> int | None:
    """Epoch milliseconds of a TIMESTAMP_LTZ value (exact: no float rounding)."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return (value - _EPOCH) // _MS
