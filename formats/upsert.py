"""Key/value encoding of the ``upsert-kafka`` connector, as Flink does it.

Layout (``upsert_layout``): the key holds the primary-key columns, named without
``key.fields-prefix``; the value holds every column (``value.fields-include`` =
ALL) or the others (EXCEPT_KEY).

Sink (``UpsertEncoder``): +I and +U write key and value; -D and -U write the key
with a null value (a tombstone), as Flink's upsert-kafka sink serialises both. The
planner gives an upsert sink -U only where it cannot drop it, e.g. behind a filter
on a non-key column: there a -U whose +U was filtered out must delete the key.

Source (``UpsertDecoder``): a record with a value is the value format's row kind
(+I for every insert-only format) holding key columns from the key and value
columns from the value (with ALL the value's copy wins, as in Flink); a record
with a null value is -D of a row holding only the key columns. Its changelog mode
is upsert, [I, UA, D]: the planner puts ChangelogNormalize after it.
"""

from __future__ import annotations

from dataclasses import dataclass

from deltaflow.formats.changelog import (
    DELETE,
    INSERT,
    UPDATE_BEFORE,
    Batch,
    RawBatch,
    RowKind,
)
from deltaflow.formats.codec_support import RecordDecoder
from deltaflow.formats.errors import DeltaflowError, FormatError
from deltaflow.formats.generated import define
from deltaflow.formats.spec import Decoder, Encoder
from deltaflow.formats.types import DataType

INCLUDE_CHOICES = ("ALL", "EXCEPT_KEY")
UPSERT_MODE = frozenset({RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.DELETE})
_HINT = "Fix the producer, or choose a bad-input policy of skip or dead-letter"


@dataclass(frozen=True)
class UpsertLayout:
    """Where the table's columns live in a record's key and value."""

    columns: tuple[tuple[str, DataType], ...]  # the full physical row
    key_indexes: tuple[int, ...]  # row positions of the key columns, in key order
    value_indexes: tuple[int, ...]  # row positions of the value columns, in value order
    prefix: str = ""

    @property
    def key_columns(self) -> list[tuple[str, DataType]]:
        """The key format's columns: key columns without ``key.fields-prefix``."""
        cut = len(self.prefix)
        return [(self.columns[i][0][cut:], self.columns[i][1]) for i in self.key_indexes]

    @property
    def value_columns(self) -> list[tuple[str, DataType]]:
        return [self.columns[i] for i in self.value_indexes]


def upsert_layout(
    columns: list[tuple[str, DataType]],
    key_fields: list[str],
    prefix: str = "",
    include: str = "ALL",
) -> UpsertLayout:
    """The layout for a table with primary key ``key_fields`` (Flink's option checks)."""
    names = [n for n, _ in columns]
    if not key_fields:
        raise DeltaflowError(
            "'upsert-kafka' tables need a PRIMARY KEY (... ) NOT ENFORCED; its columns form "
            "the Kafka record key"
        )
    mode = include.upper()
    if mode not in INCLUDE_CHOICES:
        raise DeltaflowError(
            f"option 'value.fields-include' must be 'ALL' or 'EXCEPT_KEY', not {include!r}"
        )
    if prefix and mode == "ALL":
        raise DeltaflowError(
            "option 'key.fields-prefix' needs 'value.fields-include' = 'EXCEPT_KEY', so that "
            "key and value fields do not overlap"
        )
    key_indexes = []
    for field in key_fields:
        if field not in names:
            raise DeltaflowError(f"key field {field!r} is not a column; columns are {names}")
        if not field.startswith(prefix):
            raise DeltaflowError(
                f"key field {field!r} must start with 'key.fields-prefix' {prefix!r}"
            )
        key_indexes.append(names.index(field))
    values = [i for i in range(len(columns)) if mode == "ALL" or i not in key_indexes]
    return UpsertLayout(tuple(columns), tuple(key_indexes), tuple(values), prefix)


def _projector(indexes: tuple[int, ...]):
    body = "".join(f"r[{i}], " for i in indexes)
    return define(f"def project(r):\n    return ({body})\n", "project", None, "upsert project")


def _merger(layout: UpsertLayout):
    """``merge(key_row, value_row) -> row`` in table order (value wins where both hold it)."""
    source = {i: f"k[{n}]" for n, i in enumerate(layout.key_indexes)}
    source |= {i: f"v[{n}]" for n, i in enumerate(layout.value_indexes)}
    deleted = {i: f"k[{n}]" for n, i in enumerate(layout.key_indexes)}
    width = range(len(layout.columns))
    env: dict[str, object] = {}
    merge = "".join(f"{source.get(i, 'None')}, " for i in width)
    tomb = "".join(f"{deleted.get(i, 'None')}, " for i in width)
    text = f"def merge(k, v):\n    return ({merge})\ndef tomb(k):\n    return ({tomb})\n"
    return define(text, "merge", env, "upsert merge"), env["tomb"]


class UpsertEncoder:
    """Changes to (keys, values): parallel lists, one entry per record to produce."""

    def __init__(self, layout: UpsertLayout, key_encoder: Encoder, value_encoder: Encoder) -> None:
        self.layout = layout
        self.key_encoder = key_encoder
        self.value_encoder = value_encoder
        self._key = _projector(layout.key_indexes)
        self._value = _projector(layout.value_indexes)
        self._fused = None
        keys_of = getattr(key_encoder, "batch_writer", None)
        values_of = getattr(value_encoder, "batch_writer", None)
        if keys_of is not None and values_of is not None:  # the json format: no row copies
            self._fused = (
                keys_of(layout.key_indexes, memo=True),
                values_of(layout.value_indexes, tombstones=True),
            )

    def encode(self, batch: Batch) -> tuple[list[bytes | None], list[bytes | None]]:
        rows, kinds = batch.rows, batch.kinds
        if self._fused is not None:
            keys_of, values_of = self._fused
            return keys_of(kinds, rows), values_of(kinds, rows)
        key_rows = [self._key(row) for row in rows]
        keys = self.key_encoder.encode(Batch([INSERT] * len(key_rows), key_rows))
        live = [n for n, kind in enumerate(kinds) if kind != DELETE and kind != UPDATE_BEFORE]
        value_rows = [self._value(rows[n]) for n in live]
        encoded = self.value_encoder.encode(Batch([INSERT] * len(value_rows), value_rows))
        values: list[bytes | None] = [None] * len(rows)
        for n, value in zip(live, encoded, strict=True):
            values[n] = value
        return keys, values


class UpsertDecoder(RecordDecoder):
    """Kafka records (key, value) into an upsert changelog of full table rows."""

    changelog_mode = UPSERT_MODE

    def __init__(
        self, layout: UpsertLayout, key_decoder: Decoder, value_decoder: Decoder, on_error: str
    ) -> None:
        super().__init__("upsert-kafka", on_error)
        for role, decoder in (("key", key_decoder), ("value", value_decoder)):
            if set(decoder.changelog_mode) != {RowKind.INSERT}:
                raise DeltaflowError(
                    f"'upsert-kafka' needs an insert-only {role} format; the one given produces "
                    f"{sorted(k.short for k in decoder.changelog_mode)}; use json, avro, "
                    "avro-confluent or raw"
                )
        self.layout = layout
        self.key_decoder = key_decoder
        self.value_decoder = value_decoder
        self._merge, self._tomb = _merger(layout)

    def decode(self, raw: RawBatch) -> Batch:
        keys = raw.keys if raw.keys else [None] * len(raw)
        keyed: list[int] | range = range(len(raw))
        if None in keys:
            keyed = [i for i, k in enumerate(keys) if k is not None]
            for i in sorted(set(range(len(raw))) - set(keyed)):
                self.reject(raw, i, "the record has no key; upsert-kafka records need one", _HINT)
        _, key_rows = self._aligned(self.key_decoder, _subset(raw, keyed, keys), "key")
        values, merge, tomb = raw.values, self._merge, self._tomb
        if len(keyed) == len(raw) and None not in key_rows and None not in values:
            kinds, rows = self._aligned(self.value_decoder, raw, "value")
            if None not in rows:  # the common case: every record an upsert, none dropped
                return Batch(list(kinds), list(map(merge, key_rows, rows)))
        else:
            live = [
                i
                for i, k in zip(keyed, key_rows, strict=True)
                if k is not None and values[i] is not None
            ]
            kinds, rows = self._aligned(self.value_decoder, _subset(raw, live, values), "value")
        decoded = zip(kinds, rows, strict=True)  # in the order of the live records
        out_kinds: list[int] = []
        out_rows: list[tuple] = []
        for i, key in zip(keyed, key_rows, strict=True):
            if key is None:
                continue  # dropped by the bad-input policy
            if values[i] is None:
                out_kinds.append(DELETE)
                out_rows.append(tomb(key))
                continue
            kind, row = next(decoded)
            if row is not None:  # None: dropped by the bad-input policy
                out_kinds.append(kind)
                out_rows.append(merge(key, row))
        return Batch(out_kinds, out_rows)

    def _aligned(self, decoder: Decoder, raw: RawBatch, role: str) -> tuple[list, list]:
        """(kinds, rows) with one entry per record of ``raw``; the row is None where the
        bad-input policy dropped the record."""
        skipped, dead = decoder.skipped, len(decoder.dead_letters)
        try:
            batch = decoder.decode(raw)
            kinds, rows = batch.kinds, batch.rows
            if len(batch) != len(raw):  # the policy dropped some record: find which
                decoder.skipped = skipped
                del decoder.dead_letters[dead:]
                pairs = [self._one(decoder, raw, i) for i in range(len(raw))]
                kinds = [p[0] if p else INSERT for p in pairs]
                rows = [p[1] if p else None for p in pairs]
        except FormatError as err:
            raise FormatError(
                f"record {role}: {err.reason}",
                topic=err.topic,
                partition=err.partition,
                offset=err.offset,
                payload=err.payload,
                hint=err.hint,
            ) from None
        self.skipped += decoder.skipped - skipped
        for topic, partition, offset, value, reason in decoder.dead_letters[dead:]:
            self.dead_letters.append((topic, partition, offset, value, f"record {role}: {reason}"))
        del decoder.dead_letters[dead:]
        decoder.skipped = skipped
        return kinds, rows

    @staticmethod
    def _one(decoder: Decoder, raw: RawBatch, i: int) -> tuple[int, tuple] | None:
        one = decoder.decode(_subset(raw, [i], raw.values))
        return (one.kinds[0], one.rows[0]) if len(one) else None


def _subset(raw: RawBatch, indexes, values: list[bytes | None]) -> RawBatch:  # noqa: ANN001
    if len(indexes) == len(raw):  # every record, in order
        return (
            raw if values is raw.values else RawBatch(raw.topic, raw.partition, raw.offsets, values)
        )
    return RawBatch(
        raw.topic, raw.partition, [raw.offsets[i] for i in indexes], [values[i] for i in indexes]
    )
