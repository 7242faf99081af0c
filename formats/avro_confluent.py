"""``avro-confluent`` and ``debezium-avro-confluent``: Avro in the Confluent wire format.

A record value is magic byte 0, a 4-byte big-endian schema id, then Avro binary
written with that schema. The decoder fetches writer schemas by id from the
registry (cached) and reads fields by name into the table's columns, as Avro
resolution against Flink's derived reader schema does. The encoder registers its
schema (the ``schema`` option, or the one derived from the table) under
``subject`` on first use and writes the wire format.

``debezium-avro-confluent`` reads the Debezium envelope (``before``, ``after``,
``op``) into +I / -U +U / -D exactly like ``debezium-json``, and writes +I/+U as
``op = c`` with ``after`` and -U/-D as ``op = d`` with ``before``, as Flink does.

Options (prefix stripped): ``url`` (required), ``subject`` (required to encode;
the kafka connector passes ``<topic>-value`` / ``<topic>-key`` when the user gave
none), ``schema``, ``basic-auth.credentials-source`` (USER_INFO | URL),
``basic-auth.user-info``, ``bearer-auth.credentials-source`` (STATIC_TOKEN),
``bearer-auth.token``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence

import fastavro

from deltaflow.formats import avro_schema as av
from deltaflow.formats.avro_format import READ_ERRORS, AvroEncoder, column_problem, row_reader
from deltaflow.formats.changelog import (
    DELETE,
    INSERT,
    TRUNCATED,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Batch,
    RawBatch,
    RowKind,
)
from deltaflow.formats.codec_support import (
    RecordDecoder,
    check_options,
    choice_option,
    on_error_policy,
    reason_of,
)
from deltaflow.formats.errors import DeltaflowError
from deltaflow.formats.schema_registry import SchemaRegistry
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import DataType, string

OPTIONS = (
    "url",
    "subject",
    "schema",
    "basic-auth.credentials-source",
    "basic-auth.user-info",
    "bearer-auth.credentials-source",
    "bearer-auth.token",
)
DEBEZIUM = "debezium-avro-confluent"
# debezium-avro-confluent's own: where before-images come from (processor/runtime/normalize.py)
DEBEZIUM_OPTIONS = ("before-image", "unavailable-value-placeholder")
REPLICA_IDENTITY = 'the "before" field of a {} message is null'
_LOSES = "skipping such records loses their changes"
_STATE = (
    f"Set '{DEBEZIUM}.before-image' = 'state' (the default for a table with a PRIMARY KEY; "
    "declare one with PRIMARY KEY (...) NOT ENFORCED) to take before-images from deltaflow's "
    "state"
)
_REPLICA_HINT = f"{_STATE}, or set REPLICA IDENTITY FULL on the PostgreSQL table; {_LOSES}"
_TRUNCATE_HINT = (
    f"{_STATE}: a truncate then retracts every row of the table; or leave truncates out in "
    f"Debezium (skipped.operations = 't'); {_LOSES}"
)


class BadRecord(Exception):
    """A record that cannot be read; the message is the reason, ``hint`` the remedy when
    it is not the bad-input policy (a record the database legitimately sent)."""

    def __init__(self, reason: str, hint: str | None = None) -> None:
        super().__init__(reason)
        self.hint = hint


def registry_of(name: str, spec: FormatSpec) -> SchemaRegistry:
    options = spec.options
    check_options(name, options, OPTIONS + DEBEZIUM_OPTIONS if name == DEBEZIUM else OPTIONS)
    if name == DEBEZIUM:
        choice_option(name, options, "before-image", ("state", "message"), "state")
    if spec.metadata:
        raise DeltaflowError(f"format '{name}' has no metadata keys ({spec.metadata[0][0]!r})")
    url = options.get("url")
    if not url:
        raise DeltaflowError(
            f"format '{name}' needs option '{name}.url', the schema registry URL "
            "(e.g. 'http://localhost:8081')"
        )
    source = choice_option(
        name, options, "basic-auth.credentials-source", ("USER_INFO", "URL"), "USER_INFO"
    )
    user_info = options.get("basic-auth.user-info") if source == "USER_INFO" else None
    token = None
    if "bearer-auth.token" in options:
        choice_option(
            name, options, "bearer-auth.credentials-source", ("STATIC_TOKEN",), "STATIC_TOKEN"
        )
        token = options["bearer-auth.token"]
    return SchemaRegistry(url, user_info=user_info, bearer_token=token)


def envelope_columns(columns: list[tuple[str, DataType]]) -> list[tuple[str, DataType]]:
    """Flink's Debezium Avro row: before and after (nullable rows of the table), op."""
    row = DataType("ROW", fields=tuple(columns))
    return [("before", row), ("after", row), ("op", string())]


def make_decoder(name: str, spec: FormatSpec) -> ConfluentDecoder:
    registry = registry_of(name, spec)
    if name == DEBEZIUM:
        return DebeziumAvroDecoder(name, spec, registry)
    return ConfluentDecoder(name, spec, registry)


def make_encoder(name: str, spec: FormatSpec) -> ConfluentEncoder:
    registry = registry_of(name, spec)
    subject = spec.options.get("subject")
    if not subject:
        raise DeltaflowError(
            f"format '{name}' needs option '{name}.subject' to register its schema; the "
            "kafka connectors default it to '<topic>-value' (or '<topic>-key')"
        )
    columns = envelope_columns(list(spec.physical)) if name == DEBEZIUM else list(spec.physical)
    schema = av.row_schema(columns)
    if "schema" in spec.options:
        try:
            schema = json.loads(spec.options["schema"])
            parsed = fastavro.parse_schema(schema)
        except (ValueError, TypeError, KeyError) as exc:
            raise DeltaflowError(
                f"option '{name}.schema' is not a valid Avro schema: {reason_of(exc)}"
            ) from None
    else:
        parsed = fastavro.parse_schema(schema)
    return ConfluentEncoder(
        AvroEncoder(parsed, columns), registry, subject, json.dumps(schema), name == DEBEZIUM
    )


class ConfluentDecoder(RecordDecoder):
    """Confluent wire-format Avro records into +I rows of the table's columns."""

    def __init__(self, fmt: str, spec: FormatSpec, registry: SchemaRegistry) -> None:
        super().__init__(fmt, on_error_policy(fmt, spec))
        self.registry = registry
        self.columns = list(spec.physical)
        self._row = row_reader(self.columns)
        self._schemas: dict[int, dict] = {}

    def read(self, value: bytes) -> dict:
        """The record dict of one wire-format value, read with its writer schema."""
        if len(value) < 5 or value[0] != 0:
            raise BadRecord(
                "not in the Confluent wire format (expected magic byte 0 and a 4-byte schema id)"
            )
        schema_id = int.from_bytes(value[1:5], "big")
        schema = self._schemas.get(schema_id) or self._fetch(schema_id)
        buffer = io.BytesIO(value)
        buffer.seek(5)
        try:
            record = fastavro.schemaless_reader(buffer, schema, None)
        except READ_ERRORS as exc:
            raise BadRecord(
                f"not an Avro record of schema id {schema_id} ({reason_of(exc)})"
            ) from None
        if not isinstance(record, dict):
            raise BadRecord(f"schema id {schema_id} is not an Avro record schema")
        return record

    def _fetch(self, schema_id: int) -> dict:
        text = self.registry.schema_text(schema_id)
        if text is None:
            raise BadRecord(
                f"schema id {schema_id} is unknown to the registry at {self.registry.url}"
            )
        try:
            schema = fastavro.parse_schema(json.loads(text))
        except (ValueError, TypeError, KeyError) as exc:
            raise BadRecord(f"schema id {schema_id} is not a usable Avro schema ({exc})") from None
        self._schemas[schema_id] = schema
        return schema

    def decode(self, raw: RawBatch) -> Batch:
        rows: list[tuple] = []
        read, row = self.read, self._row
        for i, value in enumerate(raw.values):
            if value is None:
                continue
            record: dict = {}
            try:
                record = read(value)
                rows.append(row(record))
            except BadRecord as exc:
                self.reject(raw, i, str(exc), exc.hint)
            except READ_ERRORS as exc:
                why = column_problem(self.columns, record) or reason_of(exc)
                self.reject(raw, i, why)
        return Batch([INSERT] * len(rows), rows)


class DebeziumAvroDecoder(ConfluentDecoder):
    """The Debezium envelope in Confluent Avro into a changelog."""

    changelog_mode = frozenset(RowKind)
    partial = False  # before-images come from state (accept_partial_images)
    truncates = 0  # truncates handed on as a -D of TRUNCATED

    def accept_partial_images(self, key: Sequence[str] = ()) -> None:
        """As ``DebeziumJsonDecoder.accept_partial_images``: an update without a
        before-image gives its +U alone, a truncate a -D of ``TRUNCATED`` (Avro reads
        each image whole: ``key`` is not used)."""
        self.partial = True

    def decode(self, raw: RawBatch) -> Batch:
        out = Batch()
        for i, value in enumerate(raw.values):
            if value is None:
                continue  # the tombstone after a delete
            try:
                self._changes(self.read(value), out)
            except BadRecord as exc:
                self.reject(raw, i, str(exc), exc.hint)
            except READ_ERRORS as exc:
                self.reject(raw, i, reason_of(exc))
        return out

    def _changes(self, record: dict, out: Batch) -> None:
        op, before, after = record.get("op"), record.get("before"), record.get("after")
        row: Callable[[dict], tuple] = self._row
        if op in ("c", "r"):
            if after is None:
                raise BadRecord(f'the "after" field of an op "{op}" message is null')
            out.append(INSERT, self._image(row, after, "after"))
        elif op == "u":
            if after is None:
                raise BadRecord('the "after" field of an UPDATE message is null')
            if before is None and not self.partial:
                raise BadRecord(REPLICA_IDENTITY.format("UPDATE"), _REPLICA_HINT)
            new = self._image(row, after, "after")
            if before is not None:
                out.append(UPDATE_BEFORE, self._image(row, before, "before"))
            out.append(UPDATE_AFTER, new)
        elif op == "d":
            if before is None:
                if self.partial:
                    raise BadRecord(
                        'the "before" field of a DELETE message is null (PostgreSQL: REPLICA '
                        "IDENTITY NOTHING sends no key)",
                        f"Set REPLICA IDENTITY DEFAULT or FULL on the table; {_LOSES}",
                    )
                raise BadRecord(REPLICA_IDENTITY.format("DELETE"), _REPLICA_HINT)
            out.append(DELETE, self._image(row, before, "before"))
        elif op == "t" and self.partial:
            out.append(DELETE, TRUNCATED)
            self.truncates += 1
        elif op == "t":
            raise BadRecord(
                "a truncate (op 't'): the record names no rows, and the before-images are "
                "taken from the records",
                _TRUNCATE_HINT,
            )
        else:
            raise BadRecord(f'unknown "op" value {op!r}; Debezium writes c, r, u or d')

    def _image(self, row: Callable[[dict], tuple], image: object, field: str) -> tuple:
        if not isinstance(image, dict):
            raise BadRecord(f'the "{field}" field is not a record')
        try:
            return row(image)
        except READ_ERRORS as exc:
            problem = column_problem(self.columns, image) or reason_of(exc)
            raise BadRecord(f'"{field}": {problem}') from None


class ConfluentEncoder:
    """Rows (or Debezium envelopes of them) as Confluent wire-format Avro values."""

    def __init__(
        self, avro: AvroEncoder, registry: SchemaRegistry, subject: str, schema: str, debezium: bool
    ) -> None:
        self.avro = avro
        self.registry = registry
        self.subject = subject
        self.schema = schema
        self.debezium = debezium
        self._header: bytes | None = None

    def header(self) -> bytes:
        """Magic byte and schema id; registers the schema on first use."""
        if self._header is None:
            schema_id = self.registry.register(self.subject, self.schema)
            self._header = b"\x00" + schema_id.to_bytes(4, "big")
        return self._header

    def encode(self, batch: Batch) -> list[bytes | None]:
        header = self.header()
        if not self.debezium:
            return [header + v for v in self.avro.encode(batch)]  # type: ignore[operator]
        envelopes = Batch()
        for kind, row in zip(batch.kinds, batch.rows, strict=True):
            adds = kind == INSERT or kind == UPDATE_AFTER
            envelopes.append(INSERT, (None, row, "c") if adds else (row, None, "d"))
        return [header + v for v in self.avro.encode(envelopes)]  # type: ignore[operator]
