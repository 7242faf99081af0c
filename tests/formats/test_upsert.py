"""upsert-kafka key/value encoding against Flink's upsert-kafka semantics."""

from __future__ import annotations

import json

import pytest

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, Batch, RawBatch
from deltaflow.formats.errors import DeltaflowError, FormatError
from deltaflow.formats.registry import create_decoder, create_encoder
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type
from deltaflow.formats.upsert import UPSERT_MODE, UpsertDecoder, UpsertEncoder, upsert_layout

COLUMNS = [
    ("k_region", parse_type("STRING NOT NULL")),
    ("pv", parse_type("BIGINT")),
    ("k_day", parse_type("INT NOT NULL")),
    ("uv", parse_type("BIGINT")),
]


def prefixed_layout():
    return upsert_layout(COLUMNS, ["k_region", "k_day"], prefix="k_", include="EXCEPT_KEY")


def codecs(layout, key_format="json", value_format="json", on_error="fail"):
    key_spec = FormatSpec(layout.key_columns, on_error=on_error)
    value_spec = FormatSpec(layout.value_columns, on_error=on_error)
    encoder = UpsertEncoder(
        layout, create_encoder(key_format, key_spec), create_encoder(value_format, value_spec)
    )
    decoder = UpsertDecoder(
        layout,
        create_decoder(key_format, key_spec),
        create_decoder(value_format, value_spec),
        on_error,
    )
    return encoder, decoder


def records(keys, values) -> RawBatch:
    return RawBatch("pageviews", 4, list(range(10, 10 + len(keys))), list(values), list(keys))


def test_layout_strips_the_key_prefix_and_excludes_key_columns() -> None:
    layout = prefixed_layout()
    assert [n for n, _ in layout.key_columns] == ["region", "day"]
    assert [n for n, _ in layout.value_columns] == ["pv", "uv"]
    every = upsert_layout(COLUMNS, ["k_day"])
    assert [n for n, _ in every.value_columns] == ["k_region", "pv", "k_day", "uv"]


def test_layout_rejects_what_flink_rejects() -> None:
    with pytest.raises(DeltaflowError, match="EXCEPT_KEY"):
        upsert_layout(COLUMNS, ["k_day"], prefix="k_")
    with pytest.raises(DeltaflowError, match="PRIMARY KEY"):
        upsert_layout(COLUMNS, [])
    with pytest.raises(DeltaflowError, match="'nope' is not a column"):
        upsert_layout(COLUMNS, ["nope"])
    with pytest.raises(DeltaflowError, match="must start with"):
        upsert_layout(COLUMNS, ["pv"], prefix="k_", include="EXCEPT_KEY")
    with pytest.raises(DeltaflowError, match="value.fields-include"):
        upsert_layout(COLUMNS, ["pv"], include="SOME")


def test_sink_writes_a_tombstone_for_update_before_and_delete() -> None:
    # Flink's upsert-kafka serialiser: "if kind == DELETE || kind == UPDATE_BEFORE" the
    # value is null - a -U whose +U a filter dropped must delete the key.
    encoder, _ = codecs(prefixed_layout())
    kinds = [INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]
    rows = [("eu", 1, 20, 1), ("eu", 1, 20, 1), ("eu", 5, 20, 2), ("eu", 5, 20, 2)]
    keys, values = encoder.encode(Batch(kinds, rows))
    assert [json.loads(k) for k in keys] == [{"region": "eu", "day": 20}] * 4
    assert values[1] is None and values[3] is None
    assert [json.loads(values[i]) for i in (0, 2)] == [{"pv": 1, "uv": 1}, {"pv": 5, "uv": 2}]


def test_source_reads_upserts_and_tombstones_into_full_rows() -> None:
    _, decoder = codecs(prefixed_layout())
    assert decoder.changelog_mode == UPSERT_MODE
    batch = decoder.decode(
        records(
            [
                b'{"region": "eu", "day": 20}',
                b'{"region": "us", "day": 21}',
                b'{"region": "eu", "day": 20}',
            ],
            [b'{"pv": 1, "uv": 1}', b'{"pv": 7, "uv": 3}', None],
        )
    )
    assert batch.kinds == [INSERT, INSERT, DELETE]
    assert batch.rows == [("eu", 1, 20, 1), ("us", 7, 21, 3), ("eu", None, 20, None)]


def test_with_value_fields_include_all_the_value_copy_wins() -> None:
    layout = upsert_layout(COLUMNS, ["k_region"])
    _, decoder = codecs(layout)
    batch = decoder.decode(
        records(
            [b'{"k_region": "key-side"}', b'{"k_region": "gone"}'],
            [b'{"k_region": "value-side", "pv": 2, "k_day": 3, "uv": 4}', None],
        )
    )
    assert batch.rows == [("value-side", 2, 3, 4), ("gone", None, None, None)]
    assert batch.kinds == [INSERT, DELETE]


def test_round_trip_with_raw_key_and_avro_value() -> None:
    layout = upsert_layout(COLUMNS[:2], ["k_region"], prefix="k_", include="EXCEPT_KEY")
    encoder, decoder = codecs(layout, key_format="raw", value_format="avro")
    keys, values = encoder.encode(Batch([INSERT, DELETE], [("eu", 3), ("us", 4)]))
    assert keys == [b"eu", b"us"] and values[1] is None
    batch = decoder.decode(records(keys, values))
    assert batch.kinds == [INSERT, DELETE]
    assert batch.rows == [("eu", 3), ("us", None)]


def test_bad_value_is_skipped_without_misaligning_the_others() -> None:
    _, decoder = codecs(prefixed_layout(), on_error="skip")
    batch = decoder.decode(
        records(
            [
                b'{"region": "a", "day": 1}',
                b'{"region": "b", "day": 2}',
                b'{"region": "c", "day": 3}',
                b'{"region": "d", "day": 4}',
            ],
            [b'{"pv": 1}', b'{"pv": "many"}', None, b'{"pv": 4}'],
        )
    )
    assert batch.kinds == [INSERT, DELETE, INSERT]
    assert batch.rows == [("a", 1, 1, None), ("c", None, 3, None), ("d", 4, 4, None)]
    assert decoder.skipped == 1
    assert decoder.value_decoder.skipped == 0  # counted once, on the upsert decoder


def test_bad_key_fails_naming_the_key_and_offset() -> None:
    _, decoder = codecs(prefixed_layout())
    with pytest.raises(FormatError, match="offset 11: record key: .*column 'day'") as info:
        decoder.decode(
            records([b'{"region": "a", "day": 1}', b'{"region": "b", "day": "x"}'], [b"{}", b"{}"])
        )
    assert (info.value.topic, info.value.partition, info.value.offset) == ("pageviews", 4, 11)


def test_missing_key_and_bad_key_go_to_dead_letters() -> None:
    _, decoder = codecs(prefixed_layout(), on_error="dead-letter")
    batch = decoder.decode(
        records([None, b"{bad", b'{"region": "z", "day": 9}'], [b"{}", b"{}", b"{}"])
    )
    assert batch.rows == [("z", None, 9, None)]
    assert [(o, reason.split(":")[0]) for _, _, o, _, reason in decoder.dead_letters] == [
        (10, "the record has no key; upsert-kafka records need one"),
        (11, "record key"),
    ]


def test_changelog_value_formats_are_refused() -> None:
    layout = prefixed_layout()
    value = create_decoder("debezium-json", FormatSpec(layout.value_columns))
    key = create_decoder("json", FormatSpec(layout.key_columns))
    with pytest.raises(DeltaflowError, match="insert-only value format"):
        UpsertDecoder(layout, key, value, "fail")


def test_a_record_with_bad_key_and_bad_value_is_skipped_once() -> None:
    _, decoder = codecs(prefixed_layout(), on_error="skip")
    batch = decoder.decode(
        records([b"{bad", b'{"region": "y", "day": 2}'], [b"{bad too", b'{"pv": 2}'])
    )
    assert batch.rows == [("y", 2, 2, None)]
    assert decoder.skipped == 1


def test_json_sink_writes_typed_values_and_honours_ignore_null_fields() -> None:
    # Flink's JSON format: DECIMAL as a number, TIMESTAMP as 'yyyy-MM-dd HH:mm:ss[.S]';
    # 'json.encode.ignore-null-fields' leaves null fields out. Kinds may be plain ints.
    import datetime as dt
    from decimal import Decimal

    columns = [
        ("id", parse_type("BIGINT")),
        ("amount", parse_type("DECIMAL(10, 2)")),
        ("at", parse_type("TIMESTAMP(3)")),
    ]
    layout = upsert_layout(columns, ["id"], include="ALL")
    value_spec = FormatSpec(layout.value_columns, options={"encode.ignore-null-fields": "true"})
    encoder = UpsertEncoder(
        layout,
        create_encoder("json", FormatSpec(layout.key_columns)),
        create_encoder("json", value_spec),
    )
    at = dt.datetime(2026, 11, 29, 8, 30, 1, 250000)
    rows = [(7, Decimal("12.50"), at), (7, Decimal("12.50"), at), (8, None, None)]
    keys, values = encoder.encode(Batch([0, 1, 2], rows))
    assert keys == [b'{"id":7}', b'{"id":7}', b'{"id":8}']
    assert values == [b'{"id":7,"amount":12.50,"at":"2026-11-29 08:30:01.25"}', None, b'{"id":8}']
    with pytest.raises(FormatError, match="cannot encode a row as JSON"):
        encoder.encode(Batch([INSERT], [(9, object(), None)]))


def test_equal_decimal_keys_keep_their_own_text() -> None:
    # 1.0 and 1.00 are equal numbers but the JSON format writes each as it is
    from decimal import Decimal

    columns = [("k", parse_type("DECIMAL(5, 2)")), ("n", parse_type("INT"))]
    layout = upsert_layout(columns, ["k"], include="ALL")
    encoder = UpsertEncoder(
        layout,
        create_encoder("json", FormatSpec(layout.key_columns)),
        create_encoder("json", FormatSpec(layout.value_columns)),
    )
    rows = [(Decimal("1.0"), 1), (Decimal("1.00"), 2), (Decimal("1.0"), 3)]
    keys, _ = encoder.encode(Batch([INSERT] * 3, rows))
    assert keys == [b'{"k":1.0}', b'{"k":1.00}', b'{"k":1.0}']


def test_a_batch_decodes_as_its_records_one_at_a_time() -> None:
    # upserts, tombstones, a missing key, an empty value and bad values, in one batch:
    # the batch gives what each record gives alone, in order
    from hypothesis import given, settings
    from hypothesis import strategies as st

    layout = prefixed_layout()
    keys = st.sampled_from(
        [b'{"region": "eu", "day": 1}', b'{"region": "us", "day": 2}', None, b"{"]
    )
    values = st.sampled_from([b'{"pv": 1, "uv": 2}', b'{"pv": "x"}', None, b"", b"null"])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(keys, values), min_size=1, max_size=8))
    def check(records: list) -> None:
        for on_error in ("skip", "dead-letter"):
            _, decoder = codecs(layout, on_error=on_error)
            batch = decoder.decode(records_of(records))
            _, single = codecs(layout, on_error=on_error)
            expected = Batch()
            for n, record in enumerate(records):
                one = records_of([record])
                one.offsets[0] = 10 + n
                expected.extend(single.decode(one))
            assert (batch.kinds, batch.rows) == (expected.kinds, expected.rows)
            assert decoder.skipped == single.skipped
            assert sorted(decoder.dead_letters) == sorted(single.dead_letters)  # by offset

    check()


def records_of(pairs: list) -> RawBatch:
    return records([k for k, _ in pairs], [v for _, v in pairs])
