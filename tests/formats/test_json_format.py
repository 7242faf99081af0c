"""The json format against Flink's documented JSON encodings and options."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from deltaflow.formats.changelog import INSERT, Batch, RawBatch
from deltaflow.formats.errors import DeltaflowError, FormatError
from deltaflow.formats.json_format import make_decoder, make_encoder
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

UTC = dt.UTC


def spec(columns: str, on_error: str = "fail", **options: str) -> FormatSpec:
    cols = []
    for part in columns.split(";"):
        name, _, text = part.strip().partition(" ")
        cols.append((name, parse_type(text)))
    return FormatSpec(cols, options=dict(options), on_error=on_error)


def raw(*values: bytes | None, topic: str = "orders") -> RawBatch:
    return RawBatch(topic, 3, list(range(100, 100 + len(values))), list(values))


def decode(s: FormatSpec, *values: bytes | None) -> list[tuple]:
    batch = make_decoder("json", s).decode(raw(*values))
    assert batch.kinds == [INSERT] * len(batch.rows)
    return batch.rows


def encode(s: FormatSpec, *rows: tuple) -> list[dict]:
    out = make_encoder("json", s).encode(Batch([INSERT] * len(rows), list(rows)))
    return [json.loads(v) for v in out]


ALL_TYPES = (
    "b BOOLEAN; ti TINYINT; si SMALLINT; i INT; bi BIGINT; f FLOAT; d DOUBLE; "
    "dec DECIMAL(10, 2); c CHAR(3); v VARCHAR(20); s STRING; bin BINARY(2); by BYTES; "
    "dt DATE; tm TIME(0); ts TIMESTAMP(3); ts6 TIMESTAMP(6); ltz TIMESTAMP_LTZ(3); "
    "arr ARRAY<INT>; m MAP<STRING, DOUBLE>; ms MULTISET<STRING>; r ROW<x INT, y STRING>"
)
ALL_VALUES = (
    True, -128, 32767, -2147483648, 9223372036854775807, 1.5, -2.25,
    Decimal("12345678.90"), "abc", "hello", "wide ☃ text", b"\x00\xff", b"bytes\x80",
    dt.date(2020, 12, 30), dt.time(12, 13, 14), dt.datetime(2020, 12, 30, 12, 13, 14, 123000),
    dt.datetime(2020, 12, 30, 12, 13, 14, 123456),
    dt.datetime(2020, 12, 30, 12, 13, 14, 100000, tzinfo=UTC),
    [1, None, 3], {"a": 1.5, "b": None}, {"x": 2}, (7, "seven"),
)  # fmt: skip


@pytest.mark.parametrize("standard", ["SQL", "ISO-8601"])
def test_round_trip_of_every_type(standard: str) -> None:
    s = spec(ALL_TYPES, **{"timestamp-format.standard": standard})
    values = make_encoder("json", s).encode(Batch([INSERT], [ALL_VALUES]))
    assert decode(s, *values) == [ALL_VALUES]
    nulls = tuple(None for _ in ALL_VALUES)
    values = make_encoder("json", s).encode(Batch([INSERT], [nulls]))
    assert decode(s, *values) == [nulls]


def test_flink_documented_timestamp_encodings_sql_standard() -> None:
    s = spec("ts TIMESTAMP(3); ltz TIMESTAMP_LTZ(3)")
    row = (
        dt.datetime(2020, 12, 30, 12, 13, 14, 123000),
        dt.datetime(2020, 12, 30, 12, 13, 14, 123000, tzinfo=UTC),
    )
    assert encode(s, row) == [{"ts": "2020-12-30 12:13:14.123", "ltz": "2020-12-30 12:13:14.123Z"}]
    text = b'{"ts": "2020-12-30 12:13:14.123", "ltz": "2020-12-30 12:13:14.123Z"}'
    assert decode(s, text) == [row]


def test_flink_documented_timestamp_encodings_iso() -> None:
    s = spec("ts TIMESTAMP(3); ltz TIMESTAMP_LTZ(3)", **{"timestamp-format.standard": "ISO-8601"})
    row = (
        dt.datetime(2020, 12, 30, 12, 13, 14, 123000),
        dt.datetime(2020, 12, 30, 12, 13, 14, 123000, tzinfo=UTC),
    )
    assert encode(s, row) == [{"ts": "2020-12-30T12:13:14.123", "ltz": "2020-12-30T12:13:14.123Z"}]
    assert decode(s, b'{"ts":"2020-12-30T12:13:14.123","ltz":"2020-12-30T12:13:14.123Z"}') == [row]


def test_timestamp_fraction_has_no_trailing_zeros_and_zero_fraction_is_omitted() -> None:
    s = spec("a TIMESTAMP(3); b TIMESTAMP(3)")
    row = (dt.datetime(2020, 1, 1, 0, 0, 0, 100000), dt.datetime(2020, 1, 1, 8, 5))
    assert encode(s, row) == [{"a": "2020-01-01 00:00:00.1", "b": "2020-01-01 08:05:00"}]


def test_timestamp_of_the_wrong_standard_is_an_error() -> None:
    s = spec("ts TIMESTAMP(3)")
    with pytest.raises(FormatError, match="column 'ts'"):
        decode(s, b'{"ts": "2020-12-30T12:13:14.123"}')
    with pytest.raises(FormatError, match="column 'ltz'"):
        decode(spec("ltz TIMESTAMP_LTZ(3)"), b'{"ltz": "2020-12-30 12:13:14.123"}')


def test_timestamp_is_cut_to_the_column_precision() -> None:
    s = spec("ts TIMESTAMP(3)")
    assert decode(s, b'{"ts": "2020-12-30 12:13:14.123456789"}') == [
        (dt.datetime(2020, 12, 30, 12, 13, 14, 123000),)
    ]


def test_time_keeps_its_declared_precision() -> None:
    # an intended difference: Flink 2.3's JSON format reads and writes milliseconds (checked
    # with PyFlink 2.3: "10:11:12.345678" into TIME(3), TIME(6) and TIME(0) is written
    # "10:11:12.345" for each), deltaflow the declared precision
    s = spec("t TIME(3)")
    assert decode(s, b'{"t": "10:11:12.345678"}') == [(dt.time(10, 11, 12, 345000),)]
    assert encode(s, (dt.time(10, 11, 12, 345000),)) == [{"t": "10:11:12.345"}]
    assert encode(s, (dt.time(23, 59, 59, 999999),)) == [{"t": "23:59:59.999"}]
    assert encode(s, (dt.time(10, 11, 12),)) == [{"t": "10:11:12"}]
    five = spec("t TIME(5)")
    assert decode(five, b'{"t": "14:23:07.36672"}') == [(dt.time(14, 23, 7, 366720),)]
    assert encode(five, (dt.time(14, 23, 7, 366720),)) == [{"t": "14:23:07.36672"}]
    assert encode(spec("t TIME(0)"), (dt.time(10, 11, 12, 345000),)) == [{"t": "10:11:12"}]


def test_float_is_written_as_javas_float_to_string() -> None:
    s = spec("f FLOAT")
    rows = [(0.10000000149011612,), (3.4028234663852886e38,), (4213.1298828125,), (1.0e-5,)]
    got = make_encoder("json", s).encode(Batch([INSERT] * 4, rows))
    assert got == [b'{"f":0.1}', b'{"f":3.4028235E38}', b'{"f":4213.13}', b'{"f":1.0E-5}']
    # and read back as the same 32-bit floats; the largest float is no infinity
    assert decode(s, b'{"f": 3.4028235E38}') == [(3.4028234663852886e38,)]
    assert decode(s, b'{"f": 0.1}') == [(0.10000000149011612,)]


def test_decimal_written_as_number_scientific_unless_plain_is_asked() -> None:
    # the Flink docs' example: 0.000000027 is written as 2.7E-8 by default
    s = spec("d DECIMAL(10, 9)")
    row = (Decimal("0.000000027"),)
    assert make_encoder("json", s).encode(Batch([INSERT], [row])) == [b'{"d":2.7E-8}']
    plain = spec("d DECIMAL(10, 9)", **{"encode.decimal-as-plain-number": "true"})
    assert make_encoder("json", plain).encode(Batch([INSERT], [row])) == [b'{"d":0.000000027}']


def test_decimal_is_read_exactly_and_rounded_half_up_to_the_scale() -> None:
    s = spec("d DECIMAL(20, 2); e DECIMAL(38, 0)")
    assert decode(s, b'{"d": 123456789012345678.905, "e": 12345678901234567890123456789}') == [
        (Decimal("123456789012345678.91"), Decimal("12345678901234567890123456789"))
    ]
    assert decode(s, b'{"d": "1.5"}') == [(Decimal("1.50"), None)]


def test_decimal_that_does_not_fit_names_column_and_value() -> None:
    with pytest.raises(FormatError, match=r"column 'd' \(DECIMAL\(4, 2\)\).*123\.4"):
        decode(spec("d DECIMAL(4, 2)"), b'{"d": 123.4}')


def test_numbers_and_booleans_may_arrive_as_strings() -> None:
    s = spec("i INT; b BIGINT; f DOUBLE; ok BOOLEAN; no BOOLEAN")
    text = b'{"i": " 42 ", "b": "-7", "f": "2.5", "ok": "TRUE", "no": "yes"}'
    assert decode(s, text) == [(42, -7, 2.5, True, False)]


def test_string_column_takes_the_text_of_any_json_value() -> None:
    s = spec("a STRING; b STRING; c STRING; d STRING")
    text = b'{"a": 12, "b": true, "c": {"k": [1, 2]}, "d": 1.0E10}'
    assert decode(s, text) == [("12", "true", '{"k":[1,2]}', "1.0E10")]


def test_integer_out_of_range_names_the_column() -> None:
    with pytest.raises(FormatError, match=r"column 't' \(TINYINT\): 200 is out of range"):
        decode(spec("t TINYINT"), b'{"t": 200}')
    with pytest.raises(FormatError, match="column 'i'"):
        decode(spec("i INT"), b'{"i": true}')


def test_missing_fields_are_null_and_unknown_fields_ignored() -> None:
    s = spec("a INT; b STRING; r ROW<x INT, y INT>")
    assert decode(s, b'{"b": "x", "zzz": 1, "r": {"y": 2}}') == [(None, "x", (None, 2))]


def test_fail_on_missing_field() -> None:
    s = spec("a INT; b STRING", **{"fail-on-missing-field": "true"})
    assert decode(s, b'{"a": 1, "b": null}') == [(1, None)]
    with pytest.raises(FormatError, match="field 'b' is missing") as info:
        decode(s, b'{"a": 1}')
    assert (info.value.topic, info.value.partition, info.value.offset) == ("orders", 3, 100)


def test_fail_on_missing_field_and_ignore_parse_errors_conflict() -> None:
    s = spec("a INT", **{"fail-on-missing-field": "true", "ignore-parse-errors": "true"})
    with pytest.raises(DeltaflowError, match="cannot both be 'true'"):
        make_decoder("json", s)


def test_malformed_json_names_topic_partition_offset() -> None:
    s = spec("a INT")
    with pytest.raises(FormatError) as info:
        decode(s, b'{"a": 1}', b'{"a": ')
    err = info.value
    assert (err.topic, err.partition, err.offset) == ("orders", 3, 101)
    assert "malformed JSON" in str(err) and "offset 101" in str(err)
    with pytest.raises(FormatError, match="expected a JSON object"):
        decode(s, b"[1, 2]")


def test_ignore_parse_errors_skips_and_counts() -> None:
    s = spec("a INT", **{"ignore-parse-errors": "true"})
    dec = make_decoder("json", s)
    batch = dec.decode(raw(b'{"a": 1}', b"not json", b'{"a": "x"}', b'{"a": 4}'))
    assert batch.rows == [(1,), (4,)]
    assert dec.skipped == 2


def test_dead_letter_policy_keeps_the_bad_records() -> None:
    dec = make_decoder("json", spec("a INT", on_error="dead-letter"))
    batch = dec.decode(raw(b'{"a": 1}', b"{oops"))
    assert batch.rows == [(1,)]
    [(topic, partition, offset, value, reason)] = dec.dead_letters
    assert (topic, partition, offset, value) == ("orders", 3, 101, b"{oops")
    assert "malformed JSON" in reason


def test_tombstones_empty_and_null_messages_produce_no_rows() -> None:
    assert decode(spec("a INT"), None, b'{"a": 2}', None, b"", b" null ") == [(2,)]


def test_bytes_are_base64() -> None:
    s = spec("b BYTES")
    assert encode(s, (b"\x01\x02\xff",)) == [{"b": "AQL/"}]
    with pytest.raises(FormatError, match="column 'b'"):
        decode(s, b'{"b": "***"}')


def test_map_null_key_modes() -> None:
    row = ({None: 1, "k": 2},)
    with pytest.raises(FormatError, match="map-null-key.mode"):
        encode(spec("m MAP<STRING, INT>"), row)
    drop = spec("m MAP<STRING, INT>", **{"map-null-key.mode": "DROP"})
    assert encode(drop, row) == [{"m": {"k": 2}}]
    literal = spec(
        "m MAP<STRING, INT>", **{"map-null-key.mode": "LITERAL", "map-null-key.literal": "nil"}
    )
    assert encode(literal, row) == [{"m": {"nil": 1, "k": 2}}]


def test_ignore_null_fields_on_encode() -> None:
    s = spec("a INT; b STRING", **{"encode.ignore-null-fields": "true"})
    assert encode(s, (1, None)) == [{"a": 1}]
    assert encode(spec("a INT; b STRING"), (1, None)) == [{"a": 1, "b": None}]


def test_unknown_option_lists_the_valid_ones() -> None:
    with pytest.raises(
        DeltaflowError, match=r"'json\.fail-on-missing-fields'.*json\.ignore-parse-errors"
    ):
        make_decoder("json", spec("a INT", **{"fail-on-missing-fields": "true"}))
    with pytest.raises(DeltaflowError, match="timestamp-format.standard"):
        make_encoder("json", spec("a INT", **{"timestamp-format.standard": "RFC"}))


def test_json_has_no_metadata() -> None:
    s = FormatSpec([("a", parse_type("INT"))], metadata=[("source.table", parse_type("STRING"))])
    with pytest.raises(DeltaflowError, match="source.table"):
        make_decoder("json", s)


@pytest.mark.parametrize(
    "text",
    [
        "2020-12-30 12:13:14,5",
        "2020-12-30 12:13:14+01:00",
        "2020-12-30 12:13",
        "2020-13-30 12:13:14",
    ],
)
def test_sql_timestamp_shapes_flink_does_not_accept(text: str) -> None:
    with pytest.raises(FormatError, match="column 'ts'"):
        decode(spec("ts TIMESTAMP(6)"), json.dumps({"ts": text}).encode())


def test_iso_timestamp_may_omit_seconds_like_iso_local_date_time() -> None:
    s = spec("ts TIMESTAMP(3); l TIMESTAMP_LTZ(3)", **{"timestamp-format.standard": "ISO-8601"})
    assert decode(s, b'{"ts": "2020-12-30T12:13", "l": "2020-12-30T12:13Z"}') == [
        (dt.datetime(2020, 12, 30, 12, 13), dt.datetime(2020, 12, 30, 12, 13, tzinfo=UTC))
    ]


def test_nan_and_infinities_are_written_as_strings_and_read_back() -> None:
    s = spec("a DOUBLE; b DOUBLE; c FLOAT")
    [value] = make_encoder("json", s).encode(Batch([INSERT], [(float("nan"), float("-inf"), 1.5)]))
    assert json.loads(value) == {"a": "NaN", "b": "-Infinity", "c": 1.5}
    [(a, b, c)] = decode(s, value)
    assert a != a and b == float("-inf") and c == 1.5


def test_timestamp_9_keeps_its_nanoseconds() -> None:
    from deltaflow.formats.nanos import with_nanos

    s = spec("ts TIMESTAMP(9); l TIMESTAMP_LTZ(9)")
    text = b'{"ts": "2020-12-30 12:13:14.123456789", "l": "2020-12-30 12:13:14.000000001Z"}'
    row = (
        with_nanos(dt.datetime(2020, 12, 30, 12, 13, 14, 123456), 789),
        with_nanos(dt.datetime(2020, 12, 30, 12, 13, 14, tzinfo=dt.UTC), 1),
    )
    assert decode(s, text) == [row]
    assert encode(s, row) == [
        {"ts": "2020-12-30 12:13:14.123456789", "l": "2020-12-30 12:13:14.000000001Z"}
    ]
    eight = spec("ts TIMESTAMP(8)")
    assert decode(eight, b'{"ts": "2020-12-30 12:13:14.123456789"}') == [
        (with_nanos(dt.datetime(2020, 12, 30, 12, 13, 14, 123456), 780),)
    ]
    assert decode(s, b'{"ts": "2020-12-30 12:13:14.5", "l": null}') == [
        (dt.datetime(2020, 12, 30, 12, 13, 14, 500000), None)
    ]


def test_float_signs_zeros_and_the_non_finite() -> None:
    from deltaflow.formats.printing import java_float

    assert [java_float(x) for x in (0.0, -0.0, 0.0, -0.0)] == ["0.0", "-0.0", "0.0", "-0.0"]
    assert java_float(3.5e38) == "Infinity"  # beyond the largest float: Java's (float) cast
    assert java_float(float("nan")) == "NaN"
    assert java_float(1.401298464324817e-45) == "1.4E-45"  # at least two digits, the closest
