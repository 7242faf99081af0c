"""The raw format: one column, the record value byte for byte (Flink's raw format)."""

from __future__ import annotations

import pytest

from deltaflow.formats.changelog import INSERT, Batch, RawBatch
from deltaflow.formats.errors import DeltaflowError, FormatError
from deltaflow.formats.raw_format import make_decoder, make_encoder
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type


def spec(type_text: str, on_error: str = "fail", **options: str) -> FormatSpec:
    return FormatSpec([("v", parse_type(type_text))], options=dict(options), on_error=on_error)


def raw(*values: bytes | None) -> RawBatch:
    return RawBatch("logs", 1, list(range(40, 40 + len(values))), list(values))


def test_string_is_utf8_text_and_tombstone_is_a_null_row() -> None:
    batch = make_decoder("raw", spec("STRING")).decode(raw("héllo".encode(), None, b""))
    assert batch.kinds == [INSERT, INSERT, INSERT]
    assert batch.rows == [("héllo",), (None,), ("",)]
    out = make_encoder("raw", spec("STRING")).encode(Batch([INSERT, INSERT], [("héllo",), (None,)]))
    assert out == ["héllo".encode(), None]


def test_charset_option() -> None:
    s = spec("STRING", charset="ISO-8859-1")
    assert make_encoder("raw", s).encode(Batch([INSERT], [("é",)])) == [b"\xe9"]
    assert make_decoder("raw", s).decode(raw(b"\xe9")).rows == [("é",)]


def test_bytes_pass_through() -> None:
    assert make_decoder("raw", spec("BYTES")).decode(raw(b"\x00\xff")).rows == [(b"\x00\xff",)]
    assert make_encoder("raw", spec("BYTES")).encode(Batch([INSERT], [(b"\x01",)])) == [b"\x01"]


@pytest.mark.parametrize(
    ("type_text", "value", "big"),
    [
        ("INT", 1, b"\x00\x00\x00\x01"),
        ("BIGINT", -2, b"\xff" * 7 + b"\xfe"),
        ("SMALLINT", 258, b"\x01\x02"),
        ("TINYINT", -1, b"\xff"),
        ("BOOLEAN", True, b"\x01"),
        ("DOUBLE", 1.0, b"\x3f\xf0" + b"\x00" * 6),
        ("FLOAT", 2.0, b"\x40\x00\x00\x00"),
    ],
)
def test_numbers_are_fixed_size_big_endian_by_default(type_text: str, value: object, big: bytes):
    assert make_encoder("raw", spec(type_text)).encode(Batch([INSERT], [(value,)])) == [big]
    assert make_decoder("raw", spec(type_text)).decode(raw(big)).rows == [(value,)]
    little = spec(type_text, endianness="little-endian")
    assert make_encoder("raw", little).encode(Batch([INSERT], [(value,)])) == [big[::-1]]


def test_wrong_size_names_topic_partition_offset() -> None:
    with pytest.raises(FormatError, match="topic 'logs' partition 1 offset 41.*3 bytes") as info:
        make_decoder("raw", spec("INT")).decode(raw(b"\x00\x00\x00\x01", b"\x00\x00\x01"))
    assert info.value.offset == 41


def test_invalid_text_is_skipped_under_skip_policy() -> None:
    dec = make_decoder("raw", spec("STRING", on_error="skip"))
    assert dec.decode(raw(b"ok", b"\xff\xfe", b"fine")).rows == [("ok",), ("fine",)]
    assert dec.skipped == 1


def test_schema_must_be_one_supported_column() -> None:
    two = FormatSpec([("a", parse_type("STRING")), ("b", parse_type("INT"))])
    with pytest.raises(DeltaflowError, match="exactly one physical column"):
        make_decoder("raw", two)
    with pytest.raises(DeltaflowError, match="DATE"):
        make_encoder("raw", spec("DATE"))
    with pytest.raises(DeltaflowError, match="'raw.endian'"):
        make_decoder("raw", spec("INT", endian="big"))
    with pytest.raises(DeltaflowError, match="charset"):
        make_decoder("raw", spec("STRING", charset="klingon"))
