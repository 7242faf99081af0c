"""The ``raw`` format: the record value is the single column, byte for byte.

As Flink's raw format: exactly one physical column; STRING/CHAR/VARCHAR are text
in ``raw.charset`` (default UTF-8), BINARY/VARBINARY/BYTES are the bytes as they
are, BOOLEAN/TINYINT/SMALLINT/INT/BIGINT/FLOAT/DOUBLE are fixed-size numbers in
``raw.endianness`` (big-endian by default). A null value (tombstone) reads as a
row holding NULL and a NULL column writes a null value.
"""

from __future__ import annotations

import codecs
import struct
from collections.abc import Callable

from deltaflow.formats.changelog import INSERT, Batch, RawBatch
from deltaflow.formats.codec_support import (
    RecordDecoder,
    check_options,
    choice_option,
    on_error_policy,
    reason_of,
)
from deltaflow.formats.errors import DeltaflowError, FormatError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import BINARY_ROOTS, BOOLEAN, STRING_ROOTS, DataType

OPTIONS = ("charset", "endianness")
_NUMBER_CODES = {"TINYINT": "b", "SMALLINT": "h", "INT": "i", "BIGINT": "q", "FLOAT": "f"}
_NUMBER_CODES["DOUBLE"] = "d"
_NUMBER_CODES[BOOLEAN] = "?"


def _column(name: str, spec: FormatSpec) -> DataType:
    check_options(name, spec.options, OPTIONS)
    if len(spec.physical) != 1:
        cols = ", ".join(n for n, _ in spec.physical)
        raise DeltaflowError(
            f"format '{name}' holds exactly one physical column, but the schema has "
            f"{len(spec.physical)}: {cols}; use a format such as 'json' for several columns"
        )
    if spec.metadata:
        raise DeltaflowError(f"format '{name}' has no metadata keys ({spec.metadata[0][0]!r})")
    dtype = spec.physical[0][1]
    supported = dtype.root in STRING_ROOTS | BINARY_ROOTS or dtype.root in _NUMBER_CODES
    if not supported:
        raise DeltaflowError(
            f"format '{name}' cannot hold column {spec.physical[0][0]!r} of type {dtype}; it "
            "supports STRING, CHAR, VARCHAR, BYTES, BINARY, VARBINARY, BOOLEAN, TINYINT, "
            "SMALLINT, INT, BIGINT, FLOAT, DOUBLE"
        )
    return dtype


def _charset(name: str, spec: FormatSpec) -> str:
    charset = spec.options.get("charset", "UTF-8")
    try:
        return codecs.lookup(charset).name
    except LookupError:
        raise DeltaflowError(f"option '{name}.charset' names unknown charset {charset!r}") from None


def _struct(name: str, spec: FormatSpec, dtype: DataType) -> struct.Struct:
    order = choice_option(
        name, spec.options, "endianness", ("big-endian", "little-endian"), "big-endian"
    )
    return struct.Struct((">" if order == "big-endian" else "<") + _NUMBER_CODES[dtype.root])


def make_decoder(name: str, spec: FormatSpec) -> RawDecoder:
    dtype = _column(name, spec)
    reader: Callable[[bytes], object]
    if dtype.root in STRING_ROOTS:
        charset = _charset(name, spec)
        reader = lambda v: v.decode(charset)  # noqa: E731
    elif dtype.root in BINARY_ROOTS:
        reader = bytes
    else:
        packer = _struct(name, spec, dtype)
        reader = lambda v: packer.unpack(v)[0]  # noqa: E731
    return RawDecoder(name, on_error_policy(name, spec), dtype, reader)


def make_encoder(name: str, spec: FormatSpec) -> RawEncoder:
    dtype = _column(name, spec)
    writer: Callable[[object], bytes]
    if dtype.root in STRING_ROOTS:
        charset = _charset(name, spec)
        writer = lambda v: v.encode(charset)  # type: ignore[attr-defined]  # noqa: E731
    elif dtype.root in BINARY_ROOTS:
        writer = bytes  # type: ignore[assignment]
    else:
        writer = _struct(name, spec, dtype).pack
    return RawEncoder(dtype, writer)


class RawDecoder(RecordDecoder):
    """Each record value becomes one +I row of one column."""

    def __init__(
        self, fmt: str, on_error: str, dtype: DataType, reader: Callable[[bytes], object]
    ) -> None:
        super().__init__(fmt, on_error)
        self.dtype = dtype
        self._read = reader

    def decode(self, raw: RawBatch) -> Batch:
        read = self._read
        try:
            rows = [(None if v is None else read(v),) for v in raw.values]
        except (ValueError, struct.error):
            rows = self._decode_one_by_one(raw)
        return Batch([INSERT] * len(rows), rows)

    def _decode_one_by_one(self, raw: RawBatch) -> list[tuple]:
        rows = []
        for i, value in enumerate(raw.values):
            try:
                rows.append((None if value is None else self._read(value),))
            except (ValueError, struct.error) as exc:
                why = reason_of(exc)
                if isinstance(exc, struct.error):
                    why = f"{len(value)} bytes do not hold one {self.dtype} ({why})"  # type: ignore[arg-type]
                self.reject(raw, i, why)
        return rows


class RawEncoder:
    """Each row's single column becomes one record value (NULL -> null value)."""

    def __init__(self, dtype: DataType, writer: Callable[[object], bytes]) -> None:
        self.dtype = dtype
        self._write = writer

    def encode(self, batch: Batch) -> list[bytes | None]:
        write = self._write
        try:
            return [None if r[0] is None else write(r[0]) for r in batch.rows]
        except (ValueError, TypeError, struct.error) as exc:
            raise FormatError(f"cannot write a {self.dtype} value raw: {reason_of(exc)}") from None
