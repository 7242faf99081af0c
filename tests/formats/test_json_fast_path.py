"""The json format's typed batch path gives exactly what its untyped per-record path
gives (Flink's ``JsonToRowDataConverters`` rules): same rows, same records refused."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import RawBatch
from deltaflow.formats.json_format import JsonDecoder
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

COLUMNS = [
    ("id", parse_type("BIGINT")),
    ("small", parse_type("SMALLINT")),
    ("name", parse_type("STRING")),
    ("flag", parse_type("BOOLEAN")),
    ("ratio", parse_type("DOUBLE")),
    ("f", parse_type("FLOAT")),
    ("amount", parse_type("DECIMAL(6, 2)")),
    ("at", parse_type("TIMESTAMP(3)")),
    ("list", parse_type("ARRAY<INT>")),
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4)
    | st.sampled_from(["42", " 7 ", "true", "1e5", "2020-05-13 09:32:10.123", "12.345", 1e-7, 5.0])
    | st.sampled_from(["NaN", "Infinity", "-0.00", " 1.5", "1_000", "1e400", -0.0, 9999.995, 1e300])
)
values = scalars | st.lists(scalars, max_size=3)
objects = st.fixed_dictionaries({}, optional={name: values for name, _ in COLUMNS})
records = (
    objects.map(lambda o: json.dumps(o).encode())
    | st.sampled_from([b"null", b"", b"  ", b"[1]", b"5", b"{", b'{"id": 1, "id": 2}'])
    | st.sampled_from([b'{"amount": 1e400}', b'{"amount": 9999.995}', b'{"amount": "NaN"}'])
    | st.none()
)
fast_path = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _shown(rows: list[tuple]) -> list[tuple]:
    return [tuple((type(v).__name__, repr(v)) for v in row) for row in rows]


def _compare(
    messages: list[bytes | None],
    demanded: frozenset[str] | None,
    columns: list = COLUMNS,
    options: dict[str, str] | None = None,
) -> None:
    spec = FormatSpec(columns, on_error="dead-letter", demanded=demanded, options=options or {})
    raw = RawBatch("t", 0, list(range(len(messages))), messages)
    batched = JsonDecoder(spec)
    batch = batched.decode(raw)
    single = JsonDecoder(spec)
    rows: list[tuple] = []
    for i, message in enumerate(messages):
        if message is not None:
            single._one(raw, i, message, rows)
    assert _shown(batch.rows) == _shown(rows)
    assert batched.dead_letters == single.dead_letters


@fast_path
@given(st.lists(records, min_size=1, max_size=6))
def test_typed_batch_path_equals_untyped_path(messages: list[bytes | None]) -> None:
    _compare(messages, None)


@fast_path
@given(st.lists(records, min_size=1, max_size=6))
def test_typed_batch_path_equals_untyped_path_on_demanded_columns(messages: list) -> None:
    _compare(messages, frozenset({"id", "name", "ratio", "amount"}))


ROW_TYPE = "ROW<a BIGINT, s STRING, d DOUBLE, t TIMESTAMP(3), m DECIMAL(6, 2), b BOOLEAN, inner ROW<x INT, l ARRAY<INT>>>"
ROW_COLUMNS = [
    ("id", parse_type("BIGINT")),
    ("r", parse_type(ROW_TYPE)),
    ("r2", parse_type("ROW<a INT>")),
]
stamps = st.sampled_from(
    ["2020-05-13 09:32:10.123", "2020-05-13T09:32:10.123456", "2020-05-13 09:32"]
)
fields = scalars | stamps | st.lists(scalars, max_size=2)
inner = st.fixed_dictionaries({}, optional={"x": fields, "l": fields, "y": fields}) | fields
row_objects = st.fixed_dictionaries(
    {}, optional={n: fields for n in ("a", "s", "d", "t", "m", "b", "zz")} | {"inner": inner}
)
row_records = (
    st.fixed_dictionaries(
        {}, optional={"id": fields, "r": row_objects | fields, "r2": row_objects | fields}
    ).map(lambda o: json.dumps(o).encode())
    | st.sampled_from(
        [
            b'{"r": {"a": 1, "a": "x"}}',
            b'{"r": {"a": 1}, "r": [1]}',
            b'{"r": {"inner": {"x": 1, "x": 2.5}}}',
        ]
    )
    | records
)


@fast_path
@given(st.lists(row_records, min_size=1, max_size=6), st.booleans())
def test_typed_batch_path_equals_untyped_path_on_row_columns(messages: list, iso: bool) -> None:
    # the ROW columns are msgspec structs on the typed path, dicts and the generated row
    # reader on the untyped one: same rows, same refusals, same messages
    options = {"timestamp-format.standard": "ISO-8601"} if iso else {}
    _compare(messages, None, ROW_COLUMNS, options)
    _compare(messages, frozenset({"r"}), ROW_COLUMNS, options)


def test_typed_path_reads_row_columns_field_by_field() -> None:
    # Flink's JsonToRowDataConverters per ROW field: "7" for a BIGINT is 7, a number for
    # a STRING its text, a missing field and an unknown one ignored; a ROW that is not an
    # object refuses the record, naming the column
    messages = [
        b'{"id": 1, "r": {"a": "7", "s": 2.5, "t": "2020-05-13 09:32:10.1239", "zz": 1}}',
        b'{"id": 2, "r": {"inner": {"x": 3, "l": [1, null]}, "b": true, "d": 1}, "r2": null}',
        b'{"id": 3, "r": [1]}',
    ]
    decoder = JsonDecoder(FormatSpec(ROW_COLUMNS, on_error="dead-letter"))
    rows = decoder.decode(RawBatch("t", 0, [0, 1, 2], messages)).rows
    stamp = datetime(2020, 5, 13, 9, 32, 10, 123000)
    assert rows == [
        (1, (7, "2.5", None, stamp, None, None, None), None),
        (2, (None, None, 1.0, None, None, True, (3, [1, None])), None),
    ]
    letters = decoder.dead_letters
    assert [letter[2] for letter in letters] == [2]
    row_type = parse_type(ROW_TYPE)
    assert letters[0][4] == f"column 'r' ({row_type}): expected a JSON object, got [1]"


def test_typed_path_reads_flink_coercions_through_the_converters() -> None:
    # Flink: "42" for a BIGINT is 42, a number for a STRING is its text, a JSON float
    # for a DECIMAL is rounded exactly; a SMALLINT out of range refuses the record
    messages = [
        b'{"id": "42", "name": 1.5, "amount": 1234.565, "ratio": 1}',
        b'{"id": 1, "small": 40000}',
        b'{"id": 2, "name": "x", "flag": true, "f": 0.5}',
        b'{"id": 3, "amount": 0.124999999999999999999}',
    ]
    decoder = JsonDecoder(FormatSpec(COLUMNS, on_error="dead-letter"))
    rows = decoder.decode(RawBatch("t", 0, [0, 1, 2, 3], messages)).rows
    assert [r[:7] for r in rows] == [
        (42, None, "1.5", None, 1.0, None, Decimal("1234.57")),
        (2, None, "x", True, None, 0.5, None),
        (3, None, None, None, None, None, Decimal("0.12")),  # not the double 0.125
    ]
    assert [letter[2] for letter in decoder.dead_letters] == [1]


STAMP_COLUMNS = [
    (f"t{p}", parse_type(f"TIMESTAMP({p})")) for p in (0, 1, 3, 6, 9)
] + [
    ("ltz", parse_type("TIMESTAMP_LTZ(3)")),
    ("t", parse_type("TIMESTAMP")),
    ("r", parse_type("ROW<t3 TIMESTAMP(3), t0 TIMESTAMP(0), t9 TIMESTAMP(9), n ROW<t6 TIMESTAMP(6)>>")),
]


GOOD, BAD = 6, 1  # weights: mostly well-formed parts, each broken now and then


@st.composite
def stamp_texts(draw) -> str:
    """Timestamp-like text: well-formed in either standard with 0 to 10 fraction digits,
    or broken in one place or more (a field out of range, a digit short, a zone, another
    separator, a non-ASCII digit)."""

    def part(good: list[str], bad: list[str]) -> str:
        return draw(st.sampled_from(good * GOOD * len(bad) + bad * BAD * len(good)))

    date = part(["2020-05-13", "1999-12-31"], ["2020-02-30", "2020-13-01", "20-05-13", "٢٠٢٠-05-13"])
    sep = part([" ", "T"], ["t", "  "])
    clock = part(["09:32:10", "23:59:59"], ["24:00:00", "9:32:10", "09:32", "09:60:00"])
    digits = draw(st.integers(0, 10))
    fraction = "" if digits == 0 else "." + "".join(draw(st.lists(st.sampled_from("0123456789"), min_size=digits, max_size=digits)))
    zone = part([""], ["Z", "+01:00", " "])
    return f"{date}{sep}{clock}{fraction}{zone}"


stamp_values = stamp_texts() | scalars
stamp_rows = st.fixed_dictionaries(
    {},
    optional={
        "t3": stamp_values,
        "t0": stamp_values,
        "t9": stamp_values,
        "n": st.fixed_dictionaries({}, optional={"t6": stamp_values}) | scalars,
    },
)
stamp_records = st.fixed_dictionaries(
    {},
    optional={name: stamp_rows if name == "r" else stamp_values for name, _ in STAMP_COLUMNS},
).map(lambda o: json.dumps(o).encode())


@fast_path
@given(st.lists(stamp_records, min_size=1, max_size=6), st.booleans())
def test_typed_batch_path_equals_untyped_path_on_timestamp_text(messages: list, iso: bool) -> None:
    # TIMESTAMP(p <= 6) text of the standard's shape with at most p fraction digits is
    # parsed in C on the typed path; everything else goes to the converter on both
    options = {"timestamp-format.standard": "ISO-8601"} if iso else {}
    _compare(messages, None, STAMP_COLUMNS, options)


def test_timestamp_text_the_converter_would_cut_is_cut() -> None:
    """More fraction digits than TIMESTAMP(p) keeps are truncated (the converter's rule),
    not parsed whole in C; exactly p digits are kept."""
    spec = FormatSpec([("t", parse_type("TIMESTAMP(3)"))], on_error="dead-letter")
    texts = ["2020-05-13 09:32:10.123456", "2020-05-13 09:32:10.12", "2020-05-13 09:32:10"]
    messages = [json.dumps({"t": t}).encode() for t in texts]
    batch = JsonDecoder(spec).decode(RawBatch("t", 0, [0, 1, 2], messages))
    assert [row[0] for row in batch.rows] == [
        datetime(2020, 5, 13, 9, 32, 10, 123000),
        datetime(2020, 5, 13, 9, 32, 10, 120000),
        datetime(2020, 5, 13, 9, 32, 10),
    ]
