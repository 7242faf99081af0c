"""The ``avro`` format: plain Avro binary (no header), schema derived from the table.

Options (``avro.`` prefix stripped): ``encoding`` (only ``binary``) and
``timestamp_mapping.legacy`` (default true, as in Flink: TIMESTAMP is written
as ``timestamp-*``; false writes ``local-timestamp-*`` and gives TIMESTAMP_LTZ
the ``timestamp-*`` types). Every record is +I; a null value is skipped.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable

import fastavro

from deltaflow.formats import avro_schema as av
from deltaflow.formats.changelog import INSERT, Batch, RawBatch
from deltaflow.formats.codec_support import (
    RecordDecoder,
    bool_option,
    check_options,
    choice_option,
    compile_row_reader,
    compile_row_writer,
    on_error_policy,
    reason_of,
)
from deltaflow.formats.errors import DeltaflowError, FormatError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import DataType

OPTIONS = ("encoding", "timestamp_mapping.legacy")
# what fastavro raises on bytes that are not a record of the schema
READ_ERRORS = (
    ValueError,
    TypeError,
    EOFError,
    IndexError,
    KeyError,
    AttributeError,
    OverflowError,
    struct.error,
)


def check_spec(name: str, spec: FormatSpec, options: tuple[str, ...]) -> bool:
    """Validate options and schema; returns the legacy timestamp mapping flag."""
    check_options(name, spec.options, options)
    if spec.metadata:
        raise DeltaflowError(
            f"format '{name}' has no metadata keys, but {spec.metadata[0][0]!r} was requested"
        )
    choice_option(name, spec.options, "encoding", ("binary",), "binary")
    return bool_option(name, spec.options, "timestamp_mapping.legacy", True)


def make_decoder(name: str, spec: FormatSpec) -> AvroDecoder:
    check_spec(name, spec, OPTIONS)
    av.row_schema(spec.physical)  # rejects what Avro cannot hold
    # timestamps read as plain longs (same bytes) and converted by the row reader
    schema = av.row_schema(spec.physical, legacy=None)
    return AvroDecoder(name, spec, fastavro.parse_schema(schema))


def make_encoder(name: str, spec: FormatSpec) -> AvroEncoder:
    legacy = check_spec(name, spec, OPTIONS)
    schema = fastavro.parse_schema(av.row_schema(spec.physical, legacy=legacy))
    return AvroEncoder(schema, spec.physical)


def row_reader(columns: list[tuple[str, DataType]]) -> Callable[[dict], tuple]:
    """``row(record_dict) -> tuple`` converting decoded Avro values to column values."""
    names = [n for n, _ in columns]
    return compile_row_reader(
        names, [av.reader_for(t) for _, t in columns], [av.guard_for(t) for _, t in columns]
    )


def row_writer(columns: list[tuple[str, DataType]]) -> Callable[[tuple], dict]:
    """``obj(row) -> dict`` of values fastavro writes with the derived schema."""
    return compile_row_writer([n for n, _ in columns], [av.writer_for(t) for _, t in columns])


def column_problem(columns: list[tuple[str, DataType]], record: object) -> str | None:
    """Which column of a decoded record does not fit (runs only for a bad record)."""
    if not isinstance(record, dict):
        return f"expected an Avro record, got {record!r:.60}"
    for name, dtype in columns:
        value = record.get(name)
        if value is None:
            continue
        try:
            av.reader_for(dtype)(value)
        except READ_ERRORS as exc:
            return f"column {name!r} ({dtype}): {reason_of(exc)}"
    return None


class AvroDecoder(RecordDecoder):
    """Schemaless Avro records (written with the derived schema) into +I rows."""

    def __init__(self, fmt: str, spec: FormatSpec, schema: dict) -> None:
        super().__init__(fmt, on_error_policy(fmt, spec))
        self.schema = schema
        self.columns = list(spec.physical)
        self._row = row_reader(self.columns)

    def decode(self, raw: RawBatch) -> Batch:
        rows: list[tuple] = []
        read, schema, row = fastavro.schemaless_reader, self.schema, self._row
        for i, value in enumerate(raw.values):
            if value is None:
                continue
            try:
                rows.append(row(read(io.BytesIO(value), schema, None)))
            except READ_ERRORS as exc:
                self.reject(raw, i, self._diagnose(value, exc))
        return Batch([INSERT] * len(rows), rows)

    def _diagnose(self, value: bytes, exc: BaseException) -> str:
        try:
            record = fastavro.schemaless_reader(io.BytesIO(value), self.schema, None)
        except READ_ERRORS as err:
            return (
                f"not an Avro record of the table's schema ({type(err).__name__}: {reason_of(err)})"
            )
        return column_problem(self.columns, record) or reason_of(exc)


class AvroEncoder:
    """Each row as one schemaless Avro record of the derived schema."""

    def __init__(self, schema: dict, columns: list[tuple[str, DataType]]) -> None:
        self.schema = schema
        self._obj = row_writer(columns)

    def encode(self, batch: Batch) -> list[bytes | None]:
        return [self.encode_record(self._obj(r)) for r in batch.rows]

    def encode_record(self, record: dict) -> bytes:
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, self.schema, record)
        except (ValueError, TypeError, AttributeError, OverflowError) as exc:
            raise FormatError(
                f"cannot encode a row as Avro: {reason_of(exc)} (row {record!r:.200})"
            ) from None
        return out.getvalue()
