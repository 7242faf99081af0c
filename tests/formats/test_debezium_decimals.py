"""DECIMAL columns of debezium-json: 'decimal-encoding' says how Debezium wrote NUMERIC
when there is no schema envelope; with one, the schema decides. Nothing is guessed.

Expected values come from Debezium's encodings: ``decimal.handling.mode=precise``
writes the big-endian two's complement of the unscaled value in base64 (-2704.67 is
the unscaled -270467, bytes fb df 7d, text "+999", which also reads as the number
999), ``string`` the number's text, ``double`` a JSON number.
"""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest

from deltaflow.formats.changelog import INSERT, RawBatch
from deltaflow.formats.debezium_json import DebeziumJsonDecoder
from deltaflow.formats.errors import DeltaflowError, FormatError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

COLUMN = "DECIMAL(10, 2)"


def b64(unscaled: int, size: int) -> str:
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


def message(value: object) -> bytes:
    return json.dumps({"before": None, "after": {"v": value}, "op": "c"}).encode()


def decoder(encoding: str | None, column: str = COLUMN, **options: str) -> DebeziumJsonDecoder:
    if encoding is not None:
        options["decimal-encoding"] = encoding
    return DebeziumJsonDecoder(FormatSpec([("v", parse_type(column))], options=options))


def read(encoding: str | None, value: object, column: str = COLUMN) -> object:
    batch = decoder(encoding, column).decode(RawBatch("t", 0, [0], [message(value)]))
    assert batch.kinds == [INSERT]
    return batch.rows[0][0]


def failure(encoding: str | None, value: object) -> FormatError:
    good = {"base64": b64(100, 1), "double": 1.0}.get(encoding or "", "1.00")
    raw = RawBatch("orders", 2, [40, 41], [message(good), message(value)])
    with pytest.raises(FormatError) as info:
        decoder(encoding).decode(raw)
    err = info.value
    assert (err.topic, err.partition, err.offset) == ("orders", 2, 41)
    assert "'debezium-json.decimal-encoding'" in err.reason
    return err


def test_the_precise_base64_text_that_also_reads_as_a_number() -> None:
    assert b64(-270467, 3) == "+999"
    assert b64(-3125964, 3) == "0E00"
    assert read("base64", "+999") == Decimal("-2704.67")
    assert read("base64", "0E00") == Decimal("-31259.64")
    # the default reads Flink's way: numeric text is the number it says
    assert read(None, "+999") == Decimal("999.00")


@pytest.mark.parametrize(
    ("encoding", "value", "expected"),
    [
        ("string", "-2704.67", Decimal("-2704.67")),
        ("string", " 12.345 ", Decimal("12.35")),  # HALF_UP to the scale
        ("string", 12.5, Decimal("12.50")),  # a JSON number, as Flink reads it
        ("string", 7, Decimal("7.00")),
        ("base64", b64(810, 2), Decimal("8.10")),
        ("base64", b64(-1, 1), Decimal("-0.01")),
        ("base64", b64(0, 1), Decimal("0.00")),
        # io.debezium.data.VariableScaleDecimal: its own scale, rounded to the column's
        ("base64", {"scale": 3, "value": b64(12345, 2)}, Decimal("12.35")),
        ("base64", 12.5, Decimal("12.50")),  # a JSON number: an integer or double column
        ("base64", 7, Decimal("7.00")),
        ("double", 2704.67, Decimal("2704.67")),
        ("double", -0.125, Decimal("-0.13")),
        ("double", 3, Decimal("3.00")),
    ],
)
def test_each_encoding(encoding: str, value: object, expected: Decimal) -> None:
    got = read(encoding, value)
    assert got == expected
    assert got.as_tuple().exponent == -2  # exactly the declared scale


def test_more_digits_than_the_precision_is_null_in_every_encoding() -> None:
    # 10^8 needs 9 integer digits; DECIMAL(10, 2) has 8: NULL, as Flink
    assert read("string", "100000000.00") is None
    assert read("base64", b64(10**10, 5)) is None
    assert read("double", 1.0e8) is None


@pytest.mark.parametrize(
    ("encoding", "value", "what"),
    [
        ("string", "AA==", "not a number or numeric text"),
        (None, "Ayo=", "not a number or numeric text"),
        ("string", {"scale": 1, "value": "AQ=="}, "not a number"),
        ("base64", "12.50", "not base64 bytes"),
        ("base64", True, "not base64 bytes"),
        ("double", "12.5", "not a JSON number"),
        ("double", "AA==", "not a JSON number"),
    ],
)
def test_a_value_not_in_the_encoding_is_an_error_naming_the_option(
    encoding: str | None, value: object, what: str
) -> None:
    err = failure(encoding, value)
    assert what in err.reason
    assert "column 'v'" in err.reason
    named = encoding or "string"
    assert f"= '{named}'" in err.reason


def test_ignore_parse_errors_nulls_the_field_and_counts_it() -> None:
    dec = decoder("base64", **{"ignore-parse-errors": "true"})
    batch = dec.decode(RawBatch("t", 0, [0, 1], [message("1.5"), message("+999")]))
    assert batch.rows == [(None,), (Decimal("-2704.67"),)]
    assert dec.nulled == 1


def test_an_unknown_encoding_is_refused() -> None:
    with pytest.raises(DeltaflowError, match="decimal-encoding' must be one of"):
        decoder("precise")


@pytest.mark.parametrize("encoding", ["string", "base64", "double"])
def test_the_fast_path_keeps_exactly_the_scale(encoding: str) -> None:
    """A batch big enough for the compiled loop: every value has exactly s digits."""
    unscaled = [(-1) ** n * (n * 7919 + 3) for n in range(200)]
    if encoding == "string":
        values: list[object] = [str(Decimal(u).scaleb(-2)) for u in unscaled]
    elif encoding == "base64":
        values = [b64(u, 4) for u in unscaled]
    else:
        values = [float(Decimal(u).scaleb(-2)) for u in unscaled]
    raw = RawBatch("t", 0, list(range(200)), [message(v) for v in values])
    batch = decoder(encoding).decode(raw)
    got = [row[0] for row in batch.rows]
    assert got == [Decimal(u).scaleb(-2) for u in unscaled]
    assert {d.as_tuple().exponent for d in got} == {-2}


# --- with the schema envelope the schema decides -------------------------------------------


def wrapped(field: dict, value: object) -> bytes:
    image = {"type": "struct", "optional": True, "fields": [{**field, "field": "v"}]}
    schema = {
        "type": "struct",
        "fields": [{**image, "field": "before"}, {**image, "field": "after"}],
    }
    payload = {"before": None, "after": {"v": value}, "op": "c"}
    return json.dumps({"schema": schema, "payload": payload}).encode()


PRECISE = {
    "type": "bytes",
    "optional": True,
    "name": "org.apache.kafka.connect.data.Decimal",
    "version": 1,
    "parameters": {"scale": "2", "connect.decimal.precision": "10"},
}


@pytest.mark.parametrize("encoding", ["string", "base64", "double"])
@pytest.mark.parametrize(
    ("field", "value"),
    [
        (PRECISE, "+999"),
        ({"type": "string", "optional": True}, "-2704.67"),
        ({"type": "double", "optional": True}, -2704.67),
    ],
)
def test_the_schema_decides_whatever_the_option(encoding: str, field: dict, value: object) -> None:
    dec = decoder(encoding, **{"schema-include": "true"})
    batch = dec.decode(RawBatch("t", 0, [0], [wrapped(field, value)]))
    assert batch.rows == [(Decimal("-2704.67"),)]


def test_a_string_field_of_the_schema_is_not_read_as_base64() -> None:
    dec = decoder("base64", **{"schema-include": "true"})
    raw = RawBatch("t", 0, [7], [wrapped({"type": "string", "optional": True}, "AA==")])
    with pytest.raises(FormatError, match="not a number or numeric text") as info:
        dec.decode(raw)
    assert info.value.offset == 7
