"""The ``upsert-kafka`` connector: a compacted topic as a table keyed by its PRIMARY KEY.

Source: a record with a value is an upsert (+U) of its key, a tombstone (null value)
a delete (-D) of its key. Sink: +I/+U write key and value, -D and -U write a
tombstone, as Flink's upsert-kafka sink does (a +U that follows rewrites the key).
"""

from __future__ import annotations

import time

from deltaflow.connectors import kafka_client
from deltaflow.connectors.base import TableSpec
from deltaflow.connectors.kafka_sink import KafkaSink, RecordWriter, delivery_guarantee
from deltaflow.connectors.kafka_source import KafkaSource
from deltaflow.connectors.layout import (
    Layout,
    build_layout,
    decode_with_origins,
    format_prefixes,
    key_rows,
    make_encoder,
)
from deltaflow.connectors.options import TableOptions
from deltaflow.formats.changelog import Batch, RawBatch, RowKind
from deltaflow.formats.errors import DeltaflowError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.upsert import UpsertEncoder, upsert_layout

KNOWN = (
    "topic", "key.format", "key.fields-prefix", "value.format", "value.fields-include",
    "scan.bounded.mode", "scan.bounded.specific-offsets", "scan.bounded.timestamp-millis",
    "sink.parallelism", "sink.delivery-guarantee", "sink.buffer-flush.max-rows",
    "sink.buffer-flush.interval", "sink.transactional-id-prefix", "scan.parallelism",
    "scan.offset-out-of-range",
)  # fmt: skip
SOURCE_MODE = frozenset({RowKind.UPDATE_AFTER, RowKind.DELETE})
SINK_MODE = frozenset({RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.DELETE})
_UA, _D = int(RowKind.UPDATE_AFTER), int(RowKind.DELETE)
# The planner treats an upsert source's inserts as upserts; Flink plans show the scan as
# changelogMode=[UA,D], so records with a value are emitted as +U.


def _options(spec: TableSpec) -> tuple[TableOptions, Layout]:
    opts = TableOptions(spec.name, "upsert-kafka", spec.options, KNOWN,
                        ["properties.", *format_prefixes(spec.options)])  # fmt: skip
    opts.required("key.format")
    opts.required("value.format")
    return opts, build_layout(spec, opts, upsert=True)


def source_mode(spec: TableSpec) -> frozenset[RowKind]:
    _options(spec)
    return SOURCE_MODE


def open_source(spec: TableSpec, bootstrap: str | None, start: str | None) -> KafkaSource:
    opts, layout = _options(spec)
    if start not in (None, "earliest"):
        raise opts.error(
            f"start position '{start}' is not available for upsert-kafka; it always reads "
            "the topic from the earliest offset to rebuild the table"
        )
    conf = kafka_client.client_config(opts, bootstrap)
    source = KafkaSource(opts, layout, conf, "earliest", SOURCE_MODE)
    source.build = lambda raw, headers: _upsert_rows(source, raw, headers)
    return source


def _upsert_rows(source: KafkaSource, raw: RawBatch, headers: list | None) -> Batch:
    """+U for each record with a value, -D (key columns only) for each tombstone."""
    layout = source.layout
    batch, origins = decode_with_origins(source.value_decoder, raw)
    keys = key_rows(source.key_decoder, raw, len(layout.key_spec.physical))  # type: ignore[union-attr]
    by_origin = dict(zip(origins, batch.rows, strict=True))
    nulls = (None,) * (len(layout.value_spec.physical) + len(layout.value_spec.metadata))
    build = layout.assemble
    out = Batch()
    for o, value in enumerate(raw.values):
        if keys[o] is None:
            continue  # the key was dropped by the bad-input policy
        if value is None:
            out.append(_D, build(nulls, keys[o], raw, o, headers))  # type: ignore[operator]
        elif o in by_origin:
            out.append(_UA, build(by_origin[o], keys[o], raw, o, headers))  # type: ignore[operator]
    return out


def sink_mode(spec: TableSpec) -> frozenset[RowKind]:
    _options(spec)
    return SINK_MODE


def open_sink(spec: TableSpec, bootstrap: str | None, out=None) -> KafkaSink:
    opts, layout = _options(spec)
    topic = opts.required("topic")
    if ";" in topic:
        raise opts.error(
            "an upsert-kafka sink writes to one topic: set option 'topic' to a single name"
        )
    conf = kafka_client.client_config(opts, bootstrap)
    writer = RecordWriter(opts, conf, topic, delivery_guarantee(opts), "default")
    sink = KafkaSink(opts, writer, _sink_encoder(spec, opts, layout), SINK_MODE)
    rows = opts.integer("sink.buffer-flush.max-rows", 0) or 0
    interval = opts.duration_ms("sink.buffer-flush.interval", 0)
    if (rows > 0) != (interval > 0):
        raise opts.error(
            "'sink.buffer-flush.max-rows' and 'sink.buffer-flush.interval' must both be greater "
            "than zero to buffer (or both left out)"
        )
    return BufferedUpsertSink(sink, layout.key_columns, rows, interval) if rows > 0 else sink


def sink_encoders(spec: TableSpec) -> None:
    """The sink's encoders built, not used (``connectors.base.build_sink_encoders``)."""
    _sink_encoder(spec, *_options(spec))


class BufferedUpsertSink:
    """Keeps only the last change per key until ``max_rows`` keys or ``interval_ms`` have
    gone by, or a flush (Flink's sink.buffer-flush.*): fewer records, the same table."""

    accepted_mode = SINK_MODE

    def __init__(self, sink: KafkaSink, key_columns: list[int], max_rows: int, interval_ms: int):
        self.sink, self.max_rows, self.interval = sink, max_rows, interval_ms / 1000
        self.key_of = lambda row: tuple(row[i] for i in key_columns)
        self.buffer: dict[tuple, tuple[int, tuple]] = {}
        self.since = time.monotonic()

    def write(self, batch: Batch) -> None:
        buffer, key_of = self.buffer, self.key_of
        for kind, row in zip(batch.kinds, batch.rows, strict=True):
            buffer[key_of(row)] = (RowKind.DELETE if kind == RowKind.UPDATE_BEFORE else kind, row)
        if len(buffer) >= self.max_rows or time.monotonic() - self.since >= self.interval:
            self._drain()

    def _drain(self) -> None:
        if self.buffer:
            changes = list(self.buffer.values())
            self.buffer.clear()
            self.sink.write(Batch([k for k, _ in changes], [r for _, r in changes]))
        self.since = time.monotonic()

    def flush(self, timeout: float) -> None:
        self._drain()
        self.sink.flush(timeout)

    def bind_patience(self, patience_for) -> None:
        self.sink.bind_patience(patience_for)

    def transaction_request(self):
        return self.sink.transaction_request()

    def join_transaction(self, producer) -> None:
        self.sink.join_transaction(producer)

    def close(self) -> None:
        self._drain()
        self.sink.close()


def _sink_encoder(spec: TableSpec, opts: TableOptions, layout: Layout):
    """Key and value per change through ``formats.upsert`` (tombstones for -D and -U)."""
    try:
        shape = upsert_layout(
            list(spec.physical),
            list(spec.primary_key),
            opts.get("key.fields-prefix", "") or "",
            opts.get("value.fields-include", "ALL") or "ALL",
        )
    except DeltaflowError as err:
        raise opts.error(str(err)) from None
    key_enc = make_encoder(
        spec.name, layout.key_format, FormatSpec(shape.key_columns, [], layout.key_spec.options)
    )  # type: ignore[arg-type,union-attr]
    value_spec = FormatSpec(shape.value_columns, [], layout.value_spec.options)
    upsert = UpsertEncoder(shape, key_enc, make_encoder(spec.name, layout.value_format, value_spec))

    def encode(batch: Batch):
        keys, values = upsert.encode(batch)
        return keys, values, None, None

    return encode
