"""How a table's columns map onto a record's key, value and metadata, and decoding with it.

A Kafka table's row is assembled from up to three places: the key (``key.format`` over
``key.fields``), the value (``format``/``value.format``, plus ``value.*`` format metadata)
and the record itself (``topic``, ``partition``, ``offset``, ``timestamp``, ``headers``).
The mapping is compiled once into one Python function per table.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace

from deltaflow.connectors.base import TableSpec
from deltaflow.connectors.options import TableOptions
from deltaflow.formats.changelog import Batch, RawBatch, RowKind
from deltaflow.formats.errors import ConnectorError, DeltaflowError
from deltaflow.formats.generated import define
from deltaflow.formats.spec import FormatSpec

RECORD_METADATA = ("topic", "partition", "offset", "timestamp", "headers")
_RECORD_EXPR = {
    "topic": "raw.topic",
    "partition": "raw.partition",
    "offset": "raw.offsets[o]",
    "timestamp": "_ts(raw.timestamps[o])",
    "headers": "headers[o]",
}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _ts(millis: int) -> dt.datetime | None:
    if millis is None or millis < 0:
        return None
    return _EPOCH + dt.timedelta(milliseconds=millis)


@dataclass
class Layout:
    """Which format decodes which columns, and how a row is put together."""

    value_format: str
    value_spec: FormatSpec
    key_format: str | None = None
    key_spec: FormatSpec | None = None
    record_keys: list[str] = field(default_factory=list)  # record metadata keys requested
    assemble: object = None  # (v, k, raw, o, headers) -> row; None means the value row as is
    key_columns: list[int] = field(default_factory=list)  # physical indexes of key.fields
    dead_letter_topic: str | None = None
    uses_key: bool = False  # the row takes columns from the record key

    @property
    def needs_origin(self) -> bool:
        return self.assemble is not None

    def decoders(self, table: str):
        value = make_decoder(table, self.value_format, self.value_spec)
        key = make_decoder(table, self.key_format, self.key_spec) if self.key_format else None
        return value, key


def make_decoder(table: str, name: str, spec: FormatSpec):
    from deltaflow.formats.registry import create_decoder

    try:
        return create_decoder(name, spec)
    except DeltaflowError as err:
        if isinstance(err, ConnectorError):
            raise
        raise ConnectorError(f"table '{table}': format '{name}': {err}") from None


def make_encoder(table: str, name: str, spec: FormatSpec):
    from deltaflow.formats.registry import create_encoder

    try:
        return create_encoder(name, spec)
    except DeltaflowError as err:
        if isinstance(err, ConnectorError):
            raise
        raise ConnectorError(f"table '{table}': format '{name}': {err}") from None


def format_prefixes(options: dict[str, str]) -> list[str]:
    """The option prefixes owned by the table's formats (``json.``, ``value.json.``, ...)."""
    out = []
    if options.get("format"):
        out.append(options["format"] + ".")
    if options.get("value.format"):
        out.append("value." + options["value.format"] + ".")
    if options.get("key.format"):
        out.append("key." + options["key.format"] + ".")
    return out


def value_format(opts: TableOptions) -> tuple[str, str]:
    """The value format name and its option prefix; exactly one of format/value.format."""
    plain, value = opts.get("format"), opts.get("value.format")
    if plain and value:
        raise opts.error("set either option 'format' or 'value.format', not both")
    if not plain and not value:
        raise opts.error(
            f"option 'format' (or 'value.format') is required by connector '{opts.connector}'"
        )
    return (plain, plain + ".") if plain else (value, "value." + value + ".")  # type: ignore[operator]


def on_error_policy(opts: TableOptions, prefix: str) -> str:
    if opts.get("deadletter.topic"):
        return "dead-letter"
    if opts.boolean(prefix + "ignore-parse-errors"):
        return "skip"
    return "fail"


def build_layout(spec: TableSpec, opts: TableOptions, *, upsert: bool = False) -> Layout:
    """The layout of a Kafka-like table: key fields, value fields and metadata columns."""
    fmt, prefix = value_format(opts)
    names = [n for n, _ in spec.physical]
    key_fields = _key_fields(spec, opts, upsert)
    include = opts.choice("value.fields-include", ("ALL", "EXCEPT_KEY"), "ALL")
    key_format = opts.get("key.format")
    if key_fields and not key_format:
        raise opts.error("option 'key.fields' needs option 'key.format'")
    if key_format and not key_fields:
        raise opts.error("option 'key.format' needs option 'key.fields' (the key columns)")
    if opts.get("key.fields-prefix") and include == "ALL":
        raise opts.error(
            "option 'key.fields-prefix' is not allowed when 'value.fields-include' is 'ALL'; "
            "set 'value.fields-include' = 'EXCEPT_KEY' so key and value fields do not overlap"
        )
    key_idx = [names.index(f) for f in key_fields]
    except_key = include == "EXCEPT_KEY" and bool(key_idx)
    value_idx = [i for i in range(len(names)) if not (except_key and i in key_idx)]
    meta_value = [(k[len("value.") :], t) for _, k, t in spec.metadata if k.startswith("value.")]
    on_error = on_error_policy(opts, prefix)
    value_spec = FormatSpec(
        [spec.physical[i] for i in value_idx],
        meta_value,
        with_subject(fmt, opts.with_prefix(prefix), opts, "value"),
        on_error,
        spec.demanded,
        spec.prefilter,
    )
    layout = Layout(
        fmt, value_spec, key_columns=key_idx, dead_letter_topic=opts.get("deadletter.topic")
    )
    if key_format:
        prefix_k = "key." + key_format + "."
        kprefix = opts.get("key.fields-prefix", "")
        kphys = [(spec.physical[i][0][len(kprefix) :], spec.physical[i][1]) for i in key_idx]
        layout.key_format = key_format
        key_options = with_subject(key_format, opts.with_prefix(prefix_k), opts, "key")
        layout.key_spec = FormatSpec(kphys, [], key_options, on_error)
    _compile(layout, spec, opts, value_idx, key_idx, except_key or upsert, key_wins=upsert)
    if layout.needs_origin and value_spec.prefilter is not None:
        # rows are matched to their records by count (decode_with_origins): every image stays
        layout.value_spec = replace(value_spec, prefilter=None)
    return layout


REGISTRY_FORMATS = ("avro-confluent", "debezium-avro-confluent")


def with_subject(
    fmt: str, options: dict[str, str], opts: TableOptions, part: str
) -> dict[str, str]:
    """Schema-registry formats default their subject to ``<topic>-key|value``, as Flink does."""
    topic = opts.get("topic")
    if fmt not in REGISTRY_FORMATS or "subject" in options or not topic or ";" in topic:
        return options
    return {**options, "subject": f"{topic}-{part}"}


def _key_fields(spec: TableSpec, opts: TableOptions, upsert: bool) -> list[str]:
    names = [n for n, _ in spec.physical]
    text = opts.get("key.fields")
    if upsert:
        if text:
            raise opts.error(
                "option 'key.fields' is not used by 'upsert-kafka'; the PRIMARY KEY is the key"
            )
        if not spec.primary_key:
            raise opts.error("'upsert-kafka' needs a PRIMARY KEY ... NOT ENFORCED on the table")
        fields = list(spec.primary_key)
    else:
        fields = [f.strip() for f in text.split(";")] if text else []
    kprefix = opts.get("key.fields-prefix", "")
    for f in fields:
        if f not in names:
            raise opts.error(
                f"key field '{f}' is not a physical column; columns are: " + ", ".join(names)
            )
        if kprefix and not f.startswith(kprefix):
            raise opts.error(
                f"key field '{f}' does not start with 'key.fields-prefix' = '{kprefix}'"
            )
    return fields


def _compile(layout: Layout, spec: TableSpec, opts: TableOptions, value_idx, key_idx, use_key,
             key_wins: bool) -> None:  # fmt: skip
    """Compiles the row assembly; with ``key_wins`` key columns always come from the key
    (upsert-kafka: a tombstone has only its key)."""
    exprs: list[str] = []
    for i in range(len(spec.physical)):
        if use_key and i in key_idx and (key_wins or i not in value_idx):
            exprs.append(f"k[{key_idx.index(i)}]")
        else:
            exprs.append(f"v[{value_idx.index(i)}]")
    value_meta = len(value_idx)
    for _, key, _ in spec.metadata:
        if key.startswith("value."):
            exprs.append(f"v[{value_meta}]")
            value_meta += 1
        elif key in RECORD_METADATA:
            layout.record_keys.append(key)
            exprs.append(_RECORD_EXPR[key])
        else:
            valid = ", ".join(RECORD_METADATA + ("value.<format metadata>",))
            raise opts.error(f"unknown metadata key '{key}'; valid keys are: {valid}")
    identity = [f"v[{j}]" for j in range(len(exprs))]
    layout.uses_key = any(e.startswith("k[") for e in exprs)
    if exprs == identity and not key_wins:
        return
    source = f"def assemble(v, k, raw, o, headers):\n    return ({', '.join(exprs)},)\n"
    layout.assemble = define(source, "assemble", {"_ts": _ts}, "record layout")


def decode_with_origins(decoder, raw: RawBatch) -> tuple[Batch, list[int]]:
    """Decode a batch and say which record (index into ``raw``) each row came from.

    One record gives zero rows (tombstone), one row, or a -U/+U pair. When the rows
    cannot be matched to records that way (a record skipped or dead-lettered), the
    records are decoded one at a time. A decoder that changes the rows (a source's
    normalizer) says itself, through its ``decode_origins``.
    """
    own = getattr(decoder, "decode_origins", None)
    if own is not None:
        return own(raw)
    skipped, dead = decoder.skipped, len(decoder.dead_letters)
    batch = decoder.decode(raw)
    if decoder.skipped == skipped and len(decoder.dead_letters) == dead:
        # a null value gives no row (changelog formats) or one row of NULLs (raw)
        origins = _match(batch.kinds, [i for i, v in enumerate(raw.values) if v is not None])
        if origins is None:
            origins = _match(batch.kinds, list(range(len(raw))))
        if origins is not None:
            return batch, origins
    decoder.skipped = skipped  # the records are decoded again: count each failure once
    del decoder.dead_letters[dead:]
    return _decode_each(decoder, raw)


def _match(kinds: list[int], present: list[int]) -> list[int] | None:
    """Rows matched to the ``present`` records, or None when the counts disagree."""
    if len(kinds) == len(present) and RowKind.UPDATE_BEFORE not in kinds:
        return present
    origins: list[int] = []
    j = 0
    n = len(kinds)
    i = 0
    while i < n:
        if j >= len(present):
            return None
        origins.append(present[j])
        if kinds[i] == RowKind.UPDATE_BEFORE and i + 1 < n and kinds[i + 1] == RowKind.UPDATE_AFTER:
            origins.append(present[j])
            i += 1
        i += 1
        j += 1
    return origins if j == len(present) else None


def _decode_each(decoder, raw: RawBatch) -> tuple[Batch, list[int]]:
    out = Batch()
    origins: list[int] = []
    keys = raw.keys or [None] * len(raw)
    stamps = raw.timestamps or [0] * len(raw)
    for i, value in enumerate(raw.values):
        one = RawBatch(raw.topic, raw.partition, [raw.offsets[i]], [value], [keys[i]], [stamps[i]])
        got = decoder.decode(one)
        out.extend(got)
        origins.extend([i] * len(got))
    return out, origins


def key_rows(decoder, raw: RawBatch, width: int) -> list[tuple | None]:
    """The decoded key of every record of ``raw``: all NULL for a record without a key,
    None for a key the bad-input policy dropped (the record is dropped with it)."""
    nulls = (None,) * width
    rows: list[tuple | None] = [nulls if k is None else None for k in raw.keys]
    keyed = RawBatch(raw.topic, raw.partition, raw.offsets, raw.keys, [], raw.timestamps)
    batch, origins = decode_with_origins(decoder, keyed)
    for row, o in zip(batch.rows, origins, strict=True):
        rows[o] = row
    return rows


def assemble_rows(layout: Layout, batch: Batch, origins, keys, raw, headers) -> Batch:
    """Rows in table order from value rows, key rows and record metadata."""
    build = layout.assemble
    if keys is None:
        rows = [build(v, (), raw, o, headers) for v, o in zip(batch.rows, origins, strict=True)]  # type: ignore[operator]
        return Batch(batch.kinds, rows)
    out = Batch()
    for kind, v, o in zip(batch.kinds, batch.rows, origins, strict=True):
        if keys[o] is not None:
            out.append(kind, build(v, keys[o], raw, o, headers))  # type: ignore[operator]
    return out
