"""The compiled fast path of debezium-json gives exactly what the checked path gives.

The checked path (``Plan.checked``: an untyped decode, then each column's converter,
Flink's ``JsonToRowDataConverters`` rules) is the reference; the fast path (typed
msgspec decode, DECIMAL rounded inline, one compiled loop per batch) must agree on
every message: the same row kinds, the same values of the same Python types, and the
same messages refused.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import (
    DELETE,
    INSERT,
    TRUNCATED,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    RawBatch,
)
from deltaflow.formats.debezium_json import DebeziumJsonDecoder
from deltaflow.formats.debezium_plan import Bad
from deltaflow.formats.errors import FormatError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

COLUMNS = [
    ("id", parse_type("BIGINT")),
    ("small", parse_type("SMALLINT")),
    ("amount", parse_type("DECIMAL(6, 2)")),
    ("name", parse_type("STRING")),
    ("flag", parse_type("BOOLEAN")),
    ("ratio", parse_type("DOUBLE")),
    ("at", parse_type("TIMESTAMP(3)")),
]
DECIMAL_TEXT = [
    "12.34", "12.3", "12", "-0.00", "0", "-0", "9999.995", "9999.994", "10000", "1E+2",
    "1e-9", "NaN", "-NaN", "sNaN", "Infinity", "-Infinity", "AQ==", " 1.5", "1.5 ", "",
]  # fmt: skip
values = {
    "id": st.integers(-(2**64), 2**64) | st.sampled_from(["42", " 7", 3.9, True, None]),
    "small": st.integers(-40000, 40000) | st.sampled_from([1.5, "12", None, "x"]),
    "amount": (
        st.floats(-1e5, 1e5)
        | st.decimals(allow_nan=False, allow_infinity=False, places=4, max_value=10**5, min_value=-(10**5))
        | st.sampled_from(DECIMAL_TEXT)
        | st.sampled_from([0, -0.0, 0.005, 1e20, 12, None, True, {"scale": 2, "value": "AQ=="}])
    ),
    "name": st.text(max_size=4) | st.sampled_from([12, 1.5, 1e-7, True, None, [1], {"a": 1}]),
    "flag": st.booleans() | st.sampled_from([0, 1, "TRUE", "no", None]),
    "ratio": st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(["1.5", 3, None]),
    "at": st.sampled_from(["2020-05-13 09:32:10.123", "2020-05-13T09:32:10Z", 1589362330123, None, "x"]),
}  # fmt: skip
images = st.none() | st.fixed_dictionaries({}, optional=values) | st.sampled_from([1, "x", []])
envelopes = st.fixed_dictionaries(
    {"op": st.sampled_from(["c", "r", "u", "d", "t", None, 1])},
    optional={"before": images, "after": images},
)


def _encode(envelope: dict) -> bytes:
    return json.dumps(envelope, default=str).encode()


def _shown(rows: list[tuple]) -> list[tuple]:
    return [tuple((type(v).__name__, repr(v)) for v in row) for row in rows]


def _reference(decoder: DebeziumJsonDecoder, value: bytes) -> list[tuple[int, tuple]] | None:
    """The checked path alone: the changes of one message, or None when it is refused."""
    try:
        env, before, after, _ = decoder._plain.checked(value)
    except Bad:
        return None
    op = env.op
    if op in ("c", "r") and after is not None:
        return [(INSERT, after)]
    if op == "u" and before is not None and after is not None:
        return [(UPDATE_BEFORE, before), (UPDATE_AFTER, after)]
    if op == "d" and before is not None:
        return [(DELETE, before)]
    return None


def _compare(messages: list[bytes], demanded: frozenset[str] | None, loose: bool = False) -> None:
    spec = FormatSpec(COLUMNS, on_error="dead-letter", demanded=demanded)
    fast = DebeziumJsonDecoder(spec)
    if loose:
        fast._loosen()
    batch = fast.decode(RawBatch("t", 0, list(range(len(messages))), messages))
    reference = DebeziumJsonDecoder(spec)
    kinds, rows, refused = [], [], []
    for offset, message in enumerate(messages):
        changes = _reference(reference, message)
        if changes is None:
            refused.append(offset)
        for kind, row in changes or ():
            kinds.append(kind)
            rows.append(row)
    assert batch.kinds == kinds
    assert _shown(batch.rows) == _shown(rows)
    assert [letter[2] for letter in fast.dead_letters] == refused


fast_path = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fast_path
@given(st.lists(envelopes, min_size=1, max_size=6))
def test_fast_path_equals_checked_path(envelopes: list[dict]) -> None:
    _compare([_encode(e) for e in envelopes], None)


@fast_path
@given(st.lists(envelopes, min_size=1, max_size=6))
def test_fast_path_equals_checked_path_on_demanded_columns(envelopes: list[dict]) -> None:
    _compare([_encode(e) for e in envelopes], frozenset({"id", "amount", "name"}))


@fast_path
@given(st.lists(envelopes, min_size=1, max_size=6))
def test_loose_plan_equals_checked_path(envelopes: list[dict]) -> None:
    _compare([_encode(e) for e in envelopes], None, loose=True)


def test_loose_plan_reads_numbers_as_the_checked_path_does() -> None:
    # exact decimals (Flink reads JSON floats as BigDecimal): a number for a STRING
    # column keeps its decimal text, a 20-digit DECIMAL keeps its digits
    after = b'{"name": 1e-07, "amount": 1234.565, "ratio": 0.1, "id": 7.9}'
    message = b'{"op": "c", "after": %s}' % after
    _compare([message], None, loose=True)
    decoder = DebeziumJsonDecoder(FormatSpec(COLUMNS))
    decoder._loosen()
    row = decoder.decode(RawBatch("t", 0, [0], [message])).rows[0]
    assert row[:4] == (7, None, Decimal("1234.57"), "1E-7") and row[5] == 0.1


def test_data_needing_coercions_in_every_message_switches_to_the_loose_plan() -> None:
    # Flink's JSON converters read "42" for a BIGINT column as 42; such messages fail
    # the typed decode, so after a batch of them the decoder reads through converters
    def message(n: int) -> bytes:
        return _encode({"op": "c", "after": {"id": str(n), "amount": n + 0.5, "name": "x"}})

    decoder = DebeziumJsonDecoder(FormatSpec(COLUMNS))
    typed = decoder._plain
    first = decoder.decode(RawBatch("t", 0, list(range(64)), [message(n) for n in range(64)]))
    assert decoder._plain is not typed  # switched
    second = decoder.decode(RawBatch("t", 0, [64], [message(64)]))
    expected = [(n, None, Decimal(f"{n}.50"), "x", None, None, None) for n in range(65)]
    assert first.rows + second.rows == expected
    assert first.kinds + second.kinds == [INSERT] * 65
    with pytest.raises(FormatError, match="offset 65: .*REPLICA IDENTITY"):
        decoder.decode(RawBatch("t", 0, [65], [b'{"op": "d"}']))
    clean = _encode({"op": "c", "after": {"id": 1}})
    for _ in range(64):
        decoder.decode(RawBatch("t", 0, [66], [clean]))
    assert decoder._plain is typed  # tried again after 64 batches: clean data reads typed


def test_decimal_rounding_cases() -> None:
    """DECIMAL(6, 2) as Flink: HALF_UP to 2 digits, NULL past the precision, no -0.00."""
    amounts = [
        "12.3",
        "12.345",
        "-12.345",
        "-0.00",
        "0.001",
        "9999.995",
        "9999.994",
        '"NaN"',
        "1e2",
    ]
    messages = [b'{"op": "c", "after": {"amount": %s}}' % a.encode() for a in amounts]
    decoder = DebeziumJsonDecoder(FormatSpec(COLUMNS, on_error="dead-letter"))
    batch = decoder.decode(RawBatch("t", 0, list(range(len(messages))), messages))
    got = [repr(row[2]) for row in batch.rows]
    expected = ["12.30", "12.35", "-12.35", "0.00", "0.00", None, "9999.99", "100.00"]
    assert got == [repr(Decimal(e)) if e else "None" for e in expected]
    assert [letter[2] for letter in decoder.dead_letters] == [7]  # NaN is no DECIMAL


def test_create_with_before_image_and_delete_with_after_image() -> None:
    """A create with a before image and a delete with an after image keep Flink's reading
    (the op decides; the other image is still converted, so a bad one refuses the message)."""
    messages = [
        _encode({"op": "c", "before": {"id": 1}, "after": {"id": 2}}),
        _encode({"op": "d", "before": {"id": 3}, "after": {"id": 4}}),
        _encode({"op": "c", "before": {"id": "x"}, "after": {"id": 5}}),
    ]
    decoder = DebeziumJsonDecoder(FormatSpec(COLUMNS, on_error="dead-letter"))
    batch = decoder.decode(RawBatch("t", 0, [0, 1, 2], messages))
    assert batch.kinds == [INSERT, DELETE]
    assert [row[0] for row in batch.rows] == [2, 3]
    assert [letter[2] for letter in decoder.dead_letters] == [2]


SCHEMAS = [
    None,
    {"type": "struct", "fields": []},
    {
        "type": "struct",
        "fields": [
            {
                "field": "after",
                "type": "struct",
                "fields": [{"field": "at", "type": "int64", "name": "io.debezium.time.MicroTimestamp"}],
            }
        ],
    },
]  # fmt: skip
wrapped = st.one_of(
    st.tuples(st.sampled_from(range(len(SCHEMAS))), envelopes).map(
        lambda p: _encode({"schema": SCHEMAS[p[0]], "payload": p[1]})
    ),
    st.sampled_from([b'{"schema": null}', b'{"payload": null}', b"[1]", b"{", b"", b'{"schema": {'])
    | envelopes.map(_encode),
)


META = [
    ("source.timestamp", parse_type("TIMESTAMP_LTZ(3)")),
    ("ingestion-timestamp", parse_type("TIMESTAMP(3)")),
    ("source.table", parse_type("STRING")),
    ("schema", parse_type("STRING")),
]
sources = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "ts_ms": st.sampled_from([1589362330123, "x", None]),
        "table": st.sampled_from(["t", 5]),
    },
)
stamped = st.tuples(envelopes, sources, st.sampled_from([1589362330999, None, "y"])).map(
    lambda t: {**t[0], "source": t[1], "ts_ms": t[2]}
)


def _one_at_a_time(spec: FormatSpec, messages: list[bytes]) -> None:
    """The batch decode equals reading each message alone on the per-message path."""
    raw = RawBatch("t", 0, list(range(len(messages))), messages)
    batched = DebeziumJsonDecoder(spec)
    batch = batched.decode(raw)
    single = DebeziumJsonDecoder(spec)
    kinds: list[int] = []
    rows: list[tuple] = []
    for i, message in enumerate(messages):
        if message:
            single._one(raw, i, message, kinds, rows)
    assert batch.kinds == kinds
    assert _shown(batch.rows) == _shown(rows)
    assert batched.dead_letters == single.dead_letters


@fast_path
@given(st.lists(stamped, min_size=1, max_size=8))
def test_metadata_batches_equal_one_message_at_a_time(envelopes: list[dict]) -> None:
    spec = FormatSpec(COLUMNS, META[:3], on_error="dead-letter", demanded=frozenset({"id"}))
    _one_at_a_time(spec, [_encode(e) for e in envelopes])


@fast_path
@given(st.lists(st.tuples(st.sampled_from(range(len(SCHEMAS))), stamped), min_size=1, max_size=6))
def test_schema_include_with_metadata_equals_one_message_at_a_time(pairs: list) -> None:
    spec = FormatSpec(COLUMNS, META, {"schema-include": "true"}, on_error="dead-letter")
    _one_at_a_time(spec, [_encode({"schema": SCHEMAS[s], "payload": e}) for s, e in pairs])


@fast_path
@given(st.lists(wrapped, min_size=1, max_size=8))
def test_schema_include_batches_equal_one_message_at_a_time(messages: list[bytes]) -> None:
    spec = FormatSpec(COLUMNS, options={"schema-include": "true"}, on_error="dead-letter")
    _one_at_a_time(spec, messages)


def test_schema_include_reads_each_message_with_its_own_schema() -> None:
    # io.debezium.time.MicroTimestamp: 1,000,000 is one second after the epoch; without
    # a schema the number is read by its size, here as milliseconds (16 min 40 s)
    import datetime as dt

    def message(schema: object) -> bytes:
        return _encode({"schema": schema, "payload": {"op": "c", "after": {"at": 1_000_000}}})

    messages = [message(SCHEMAS[2]), message(None), message(SCHEMAS[2]), message(SCHEMAS[1])]
    spec = FormatSpec(COLUMNS, options={"schema-include": "true"})
    batch = DebeziumJsonDecoder(spec).decode(RawBatch("t", 0, [0, 1, 2, 3], messages))
    second, later = dt.datetime(1970, 1, 1, 0, 0, 1), dt.datetime(1970, 1, 1, 0, 16, 40)
    assert [row[6] for row in batch.rows] == [second, later, second, later]


def test_untyped_floats_are_exact_when_the_row_has_a_decimal() -> None:
    # Flink's JSON reader enables USE_BIG_DECIMAL_FOR_FLOATS when the row type has a
    # DECIMAL: a float inside ARRAY<STRING> reads as BigDecimal text ("1E-7"), and the
    # typed and checked paths agree
    columns = [("d", parse_type("DECIMAL(5, 2)")), ("tags", parse_type("ARRAY<STRING>"))]
    message = b'{"op": "c", "after": {"d": 1, "tags": [1e-07, 0.1, 2]}}'
    fast = DebeziumJsonDecoder(FormatSpec(columns))
    rows = fast.decode(RawBatch("t", 0, [0], [message])).rows
    assert rows == [(Decimal("1.00"), ["1E-7", "0.1", "2"])]
    _, _, after, _ = fast._plain.checked(message)
    assert after == rows[0]


def _partial(demanded: frozenset[str] | None, key: list[str], loose: bool) -> DebeziumJsonDecoder:
    decoder = DebeziumJsonDecoder(FormatSpec(COLUMNS, on_error="dead-letter", demanded=demanded))
    decoder.accept_partial_images(key)
    if loose:
        decoder._loosen()
    return decoder


def _one_update(batch, at: list[int]) -> tuple[list, list]:
    """``batch`` without the -U of each update that keeps its key (at ``at``): the
    normalizer reads a -U/+U pair of one key as that key's +U alone."""
    kinds, rows, n = [], [], len(batch.kinds)
    for i, (kind, row) in enumerate(zip(batch.kinds, batch.rows, strict=True)):
        nxt = batch.rows[i + 1] if i + 1 < n and batch.kinds[i + 1] == UPDATE_AFTER else None
        if kind == UPDATE_BEFORE and nxt is not None and all(row[j] == nxt[j] for j in at):
            continue
        kinds.append(kind)
        rows.append(row)
    return kinds, rows


def _key_only(envelope: dict, key: list[str]) -> dict:
    """``envelope`` with its before-image (when an object) cut to the ``key`` columns."""
    before = envelope.get("before")
    if not isinstance(before, dict):
        return envelope
    return {**envelope, "before": {k: v for k, v in before.items() if k in key}}


@fast_path
@given(
    st.lists(envelopes, min_size=1, max_size=6),
    st.sampled_from([["id"], ["id", "name"], ["at"]]),
    st.booleans(),
)
def test_before_images_read_for_their_key_alone(
    envelopes: list[dict], key: list[str], loose: bool
) -> None:
    """With before-images from state and the key given, a message reads as a decoder
    reading images whole reads it with the before-image cut to its key columns (the
    normalizer reads nothing else of it): the same kinds, rows and refusals, on the
    compiled loop, the checked path and the loose plan."""
    raw = RawBatch("t", 0, list(range(len(envelopes))), [_encode(e) for e in envelopes])
    cut_messages = [_encode(_key_only(e, key)) for e in envelopes]
    cut_raw = RawBatch("t", 0, list(range(len(envelopes))), cut_messages)
    whole, cut = _partial(None, [], loose), _partial(None, key, loose)
    at = [i for i, (name, _) in enumerate(COLUMNS) if name in key]
    expected, got = _one_update(whole.decode(cut_raw), at), _one_update(cut.decode(raw), at)
    assert got[0] == expected[0]
    assert [r if r is TRUNCATED else _shown([r]) for r in got[1]] == [
        r if r is TRUNCATED else _shown([r]) for r in expected[1]
    ]
    assert [d[2] for d in cut.dead_letters] == [d[2] for d in whole.dead_letters]


def test_before_image_of_an_update_is_its_key_alone() -> None:
    """The normalizer reads only the key of a before-image: the fast path builds no
    other column of it (no DECIMAL conversion), and none at all for an update that keeps
    its key (its +U alone); an update moving the key keeps its -U."""
    decoder = _partial(None, ["id"], False)
    messages = [
        b'{"before":{"id":1,"amount":"1.50","name":"a"},"after":{"id":1,"amount":"2.50",'
        b'"name":"b"},"op":"u"}',
        b'{"before":{"id":1,"amount":"2.50","name":"b"},"after":{"id":2,"amount":"2.50",'
        b'"name":"b"},"op":"u"}',
        b'{"before":{"id":2,"amount":"2.50","name":"b"},"after":null,"op":"d"}',
    ]
    batch = decoder.decode(RawBatch("t", 0, [0, 1, 2], messages))
    empty = (None,) * (len(COLUMNS) - 1)
    assert batch.kinds == [UPDATE_AFTER, UPDATE_BEFORE, UPDATE_AFTER, DELETE]
    assert [batch.rows[i] for i in (1, 3)] == [(1, *empty), (2, *empty)]
    assert batch.rows[0][:4] == (1, None, Decimal("2.50"), "b")
    assert batch.rows[2][:4] == (2, None, Decimal("2.50"), "b")
