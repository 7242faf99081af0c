"""debezium-json with a pre-filter: row images failing the WHERE's tests are dropped
before their rows are built, image by image, with SQL's NULL semantics."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, RawBatch
from deltaflow.formats.debezium_json import DebeziumJsonDecoder
from deltaflow.formats.errors import FormatError
from deltaflow.formats.prefilter import Check, PreFilter
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

COLUMNS = [
    ("id", parse_type("BIGINT")),
    ("n", parse_type("INT")),
    ("s", parse_type("STRING")),
    ("amount", parse_type("DECIMAL(10, 2)")),
    ("ts", parse_type("TIMESTAMP(3)")),
]
NAMES = [n for n, _ in COLUMNS]
PAID = PreFilter((Check("s", "=", "PAID"),))


def decoder(prefilter: PreFilter | None, on_error: str = "fail", **options: str):
    spec = FormatSpec(COLUMNS, options=options, on_error=on_error, prefilter=prefilter)
    return DebeziumJsonDecoder(spec)


def decode(dec: DebeziumJsonDecoder, values: list[bytes]) -> list[tuple[int, tuple]]:
    batch = dec.decode(RawBatch("t", 0, list(range(len(values))), values))
    return list(zip(batch.kinds, batch.rows, strict=True))


def image(i: int, n: int | None = 1, s: str | None = "NEW", amount: object = "1.5"):
    return {"id": i, "n": n, "s": s, "amount": amount, "ts": "2026-01-01 10:00:00"}


def event(op: str, before: dict | None = None, after: dict | None = None) -> bytes:
    return json.dumps({"before": before, "after": after, "op": op}).encode()


def row(i: int, n: int | None = 1, s: str | None = "NEW") -> tuple:
    return (i, n, s, Decimal("1.50"), dt.datetime(2026, 1, 1, 10, 0))


def test_each_image_is_kept_or_dropped_as_the_where_would() -> None:
    values = [
        event("c", after=image(1, s="PAID")),
        event("c", after=image(2, s="NEW")),
        event("u", image(1, s="PAID"), image(1, s="SHIPPED")),  # leaves the filter: -U only
        event("u", image(2, s="NEW"), image(2, s="PAID")),  # enters it: +U only
        event("u", image(2, n=5, s="PAID"), image(2, n=6, s="PAID")),  # stays: both
        event("u", image(3, s="A"), image(3, s="B")),  # never in it: nothing
        event("d", before=image(2, n=6, s="PAID")),
        event("d", before=image(4, s="NEW")),
        event("r", after=image(5, s=None)),  # NULL = 'PAID' is not true
    ]
    dec = decoder(PAID)
    assert decode(dec, values) == [
        (INSERT, row(1, s="PAID")),
        (UPDATE_BEFORE, row(1, s="PAID")),
        (UPDATE_AFTER, row(2, s="PAID")),
        (UPDATE_BEFORE, row(2, n=5, s="PAID")),
        (UPDATE_AFTER, row(2, n=6, s="PAID")),
        (DELETE, row(2, n=6, s="PAID")),
    ]
    assert dec.filtered == 7  # 9 messages, 13 images, 6 kept


def test_null_tests_and_comparisons_of_integers() -> None:
    tests = PreFilter((Check("n", "IS NOT NULL"), Check("n", ">=", 2), Check("n", "<>", 4)))
    values = [event("c", after=image(i, n=n)) for i, n in enumerate([None, 1, 2, 3, 4, 5])]
    assert [r[1] for _, r in decode(decoder(tests), values)] == [2, 3, 5]
    nulls = PreFilter((Check("s", "IS NULL"),))
    values = [event("c", after=image(1, s=None)), event("c", after=image(2, s="x"))]
    assert decode(decoder(nulls), values) == [(INSERT, row(1, s=None))]


def test_in_and_not_in() -> None:
    values = [event("c", after=image(i, s=s)) for i, s in enumerate(["a", "b", "c", None])]
    among = PreFilter((Check("s", "IN", frozenset({"a", "c"})),))
    assert [r[2] for _, r in decode(decoder(among), values)] == ["a", "c"]
    outside = PreFilter((Check("s", "NOT IN", frozenset({"a", "c"})),))
    assert [r[2] for _, r in decode(decoder(outside), values)] == ["b"]  # NULL NOT IN: not true


def test_columns_with_a_converter_are_not_tested_by_the_format() -> None:
    # DECIMAL and TIMESTAMP values are converted when the row is built: the decoded value
    # is not the row's, so such tests are left to the Calc (every image comes out)
    tests = PreFilter((Check("amount", "=", Decimal("9.99")), Check("ts", "IS NULL")))
    dec = decoder(tests)
    assert dec._plain.keep is None
    assert len(decode(dec, [event("c", after=image(1))])) == 1


def test_constants_of_another_type_are_not_pushed() -> None:
    dec = decoder(PreFilter((Check("n", "=", "1"), Check("s", "=", 1))))
    assert dec._plain.keep is None


def test_a_dropped_image_is_not_converted() -> None:
    # the timestamp of the dropped before-image is unreadable: Flink does not convert
    # a field its filter pushdown leaves out either (docs/formats: debezium-json)
    bad = {**image(1, s="NEW"), "ts": "not a time"}
    values = [event("u", bad, image(1, s="PAID"))]
    assert decode(decoder(PAID), values) == [(UPDATE_AFTER, row(1, s="PAID"))]
    with pytest.raises(FormatError, match="ts"):
        decode(decoder(None), values)


def test_a_dropped_decimal_is_not_read() -> None:
    # with a pre-filter a DECIMAL is read only for the rows built: "abc" in a dropped
    # image is not reported, in a kept one it is, as without the pre-filter
    dropped = [event("c", after=image(1, s="NEW", amount="abc"))]
    assert decode(decoder(PAID), dropped) == []
    kept = [event("c", after=image(1, s="PAID", amount="abc"))]
    for prefilter in (None, PAID):
        with pytest.raises(FormatError, match="amount"):
            decode(decoder(prefilter), kept)
    rounded = [event("c", after=image(1, s="PAID", amount=2.675)), event("d", image(2, s="PAID"))]
    assert [r[3] for _, r in decode(decoder(PAID), rounded)] == [Decimal("2.68"), Decimal("1.50")]


def test_errors_are_still_raised() -> None:
    dec = decoder(PAID)
    with pytest.raises(FormatError, match="invalid JSON"):
        decode(dec, [event("c", after=image(1)), b'{"op": "c", "after": {'])
    with pytest.raises(FormatError, match='unknown "op"'):
        decode(dec, [event("x", after=image(1, s="NEW"))])
    with pytest.raises(FormatError, match="'n'"):  # out of range for INT, in a dropped image
        decode(dec, [event("c", after=image(1, n=2**40, s="NEW"))])


def test_the_checked_path_keeps_every_image() -> None:
    # a number in a string for INT takes the checked path (Flink's coercion): its images
    # are not tested there, the Calc still drops them; nothing is lost or doubled
    values = [
        event("c", after={**image(1, s="NEW"), "n": "7"}),
        event("c", after=image(2, s="PAID")),
    ]
    dec = decoder(PAID)
    assert decode(dec, values) == [(INSERT, row(1, n=7)), (INSERT, row(2, s="PAID"))]
    assert dec.filtered == 0


def test_schema_include_payloads_are_filtered() -> None:
    schema = {"type": "struct", "fields": []}
    values = [
        json.dumps({"schema": schema, "payload": json.loads(event("c", after=image(i, s=s)))})
        for i, s in enumerate(["PAID", "NEW"])
    ]
    dec = decoder(PAID, **{"schema-include": "true"})
    assert decode(dec, [v.encode() for v in values]) == [(INSERT, row(0, s="PAID"))]
    assert dec.filtered == 1


# ---------------------------------------------------------------------------
# property: the pre-filter drops exactly the images the WHERE rejects


def sql_true(test: Check, value) -> bool:
    """SQL semantics of one test written out (a WHERE keeps only TRUE)."""
    if test.op == "IS NULL":
        return value is None
    if test.op == "IS NOT NULL":
        return value is not None
    if value is None:
        return False
    if test.op == "IN":
        return value in test.value
    if test.op == "NOT IN":
        return value not in test.value
    c = test.value
    return {"=": value == c, "<>": value != c, "<": value < c, "<=": value <= c,
            ">": value > c, ">=": value >= c}[test.op]  # fmt: skip


def where(tests: PreFilter, rows: list[tuple[int, tuple]]) -> list[tuple[int, tuple]]:
    return [
        (k, r) for k, r in rows if all(sql_true(t, r[NAMES.index(t.column)]) for t in tests.tests)
    ]


ns = st.one_of(st.none(), st.integers(-3, 3))
ss = st.one_of(st.none(), st.sampled_from(["a", "b", "PAID", ""]))
# numbers and numeric strings, rounded HALF_UP, and NULL
FITTING = [0, -3, 12.345, "7.005", "-0.5", 99999999.994]
# too many digits for DECIMAL(10, 2): NULL in debezium-json, read on its checked path
TOO_LONG = [1e20, "123456789012.5", 99999999.995]
amounts = st.one_of(st.none(), st.sampled_from(FITTING + TOO_LONG))
images = st.builds(image, st.integers(1, 4), ns, ss, amounts)
events = st.one_of(
    st.builds(lambda a: event("c", after=a), images),
    st.builds(lambda a: event("r", after=a), images),
    st.builds(lambda b, a: event("u", b, a), images, images),
    st.builds(lambda b: event("d", before=b), images),
    st.just(b""),  # a tombstone
)
ops = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])
int_tests = st.one_of(
    st.builds(lambda op, v: Check("n", op, v), ops, st.integers(-3, 3)),
    st.builds(
        lambda m, neg: Check("n", "NOT IN" if neg else "IN", frozenset(m)),
        st.sets(st.integers(-3, 3), min_size=1, max_size=3),
        st.booleans(),
    ),  # fmt: skip
    st.builds(lambda neg: Check("n", "IS NOT NULL" if neg else "IS NULL"), st.booleans()),
)
str_tests = st.one_of(
    st.builds(lambda op, v: Check("s", op, v), ops, st.sampled_from(["a", "b", "PAID", ""])),
    st.builds(lambda m: Check("s", "IN", frozenset(m)), st.sets(st.sampled_from("ab"), min_size=1)),
    st.builds(lambda neg: Check("s", "IS NOT NULL" if neg else "IS NULL"), st.booleans()),
)
filters = st.lists(st.one_of(int_tests, str_tests), min_size=1, max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.lists(events, max_size=30), filters)
def test_prefilter_equals_the_where_on_random_histories(values, tests) -> None:
    pre = PreFilter(tuple(tests))
    plain = decode(decoder(None), values)
    dec = decoder(pre)
    got = decode(dec, values)
    assert where(pre, got) == where(pre, plain)
    assert dec.filtered == len(plain) - len(got)  # each image kept or counted
    if not any(str(a).encode() in v for a in TOO_LONG for v in values):
        assert got == where(pre, plain)  # all on the fast path: exactly the WHERE's images


@settings(max_examples=100, deadline=None)
@given(st.lists(events, max_size=20), filters, st.sampled_from(["fail", "skip"]))
def test_a_partial_prefilter_is_sound(values, tests, on_error) -> None:
    # with a test the format cannot apply (DECIMAL), what it keeps still gives the
    # WHERE's result once the Calc runs
    pre = PreFilter((*tests, Check("amount", ">", Decimal("1.00"))))
    plain = decode(decoder(None, on_error), values)
    got = decode(decoder(pre, on_error), values)
    assert where(pre, got) == where(pre, plain)


# ---------------------------------------------------------------------------
# the json format (insert-only rows): the same tests on each record


def json_rows(prefilter: PreFilter | None, records: list[bytes]):
    from deltaflow.formats.json_format import JsonDecoder

    dec = JsonDecoder(FormatSpec(COLUMNS, prefilter=prefilter))
    batch = dec.decode(RawBatch("t", 0, list(range(len(records))), records))
    return dec, batch.rows


@settings(max_examples=200, deadline=None)
@given(st.lists(st.builds(image, st.integers(1, 4), ns, ss, st.sampled_from(FITTING)), max_size=30),
       filters)  # fmt: skip
def test_json_prefilter_equals_the_where(records, tests) -> None:
    pre = PreFilter(tuple(tests))
    values = [json.dumps(r).encode() for r in records]
    _, plain = json_rows(None, values)
    dec, got = json_rows(pre, values)
    assert [(INSERT, r) for r in got] == where(pre, [(INSERT, r) for r in plain])
    assert dec.filtered == len(plain) - len(got)


def test_json_records_off_the_typed_path_are_kept() -> None:
    # "7" for INT is read on the untyped path (Flink's coercion), which does not filter
    values = [json.dumps({**image(1), "n": "7"}).encode(), json.dumps(image(2, s="PAID")).encode()]
    dec, rows = json_rows(PAID, values)
    assert rows == [row(1, n=7), row(2, s="PAID")]
    assert dec.filtered == 0
