"""The json format's typed batch path gives exactly what its untyped per-record path
gives (Flink's ``JsonToRowDataConverters`` rules): same rows, same records refused."""

from __future__ import annotations

import json
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


def _compare(messages: list[bytes | None], demanded: frozenset[str] | None) -> None:
    spec = FormatSpec(COLUMNS, on_error="dead-letter", demanded=demanded)
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
