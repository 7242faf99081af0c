"""Fuzzing the debezium-json decoder: bad input is a FormatError under "fail", never a crash,
and never raises under "skip" or "dead-letter"."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import RawBatch
from deltaflow.formats.debezium_json import DebeziumJsonDecoder
from deltaflow.formats.errors import FormatError
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import parse_type

DATA = Path(__file__).resolve().parents[1] / "data" / "debezium"
LINES = (DATA / "debezium-postgres-data-schema-exclude.txt").read_bytes().split(b"\n")
WRAPPED = (DATA / "debezium-data-schema-include.txt").read_bytes().split(b"\n")
TYPES = [
    "BIGINT",
    "INT",
    "STRING",
    "DECIMAL(10, 2)",
    "DOUBLE",
    "FLOAT",
    "BOOLEAN",
    "BYTES",
    "DATE",
    "TIME(3)",
    "TIMESTAMP(3)",
    "TIMESTAMP_LTZ(6)",
    "ARRAY<INT>",
    "MAP<STRING, DECIMAL(5, 1)>",
    "ROW<a INT, b STRING>",
]
COLUMNS = [(f"c{i}", parse_type(t)) for i, t in enumerate(TYPES)]
PRODUCTS = [
    ("id", parse_type("BIGINT")),
    ("name", parse_type("STRING")),
    ("description", parse_type("STRING")),
    ("weight", parse_type("DECIMAL(10, 2)")),
]
META = [
    ("source.timestamp", parse_type("TIMESTAMP_LTZ(3)")),
    ("ingestion-timestamp", parse_type("TIMESTAMP_LTZ(3)")),
    ("source.properties", parse_type("MAP<STRING, STRING>")),
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(["AQID", "2020-05-13", "12:34:56", "2020-05-13 09:32:10.5Z", "1e5", "NaN"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=10,
)
images = (
    st.none()
    | json_values
    | st.fixed_dictionaries({}, optional={n: json_values for n, _ in COLUMNS})
)
envelopes = st.fixed_dictionaries(
    {"op": st.sampled_from(["c", "r", "u", "d", "t", "x"]) | json_values},
    optional={"before": images, "after": images, "source": json_values, "ts_ms": json_values},
)


def mutate(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    """Replace ``length`` bytes at each position (modulo the length) with ``insert``."""
    out = bytearray(data)
    for at, length, insert in edits:
        at = at % (len(out) + 1)
        out[at : at + length] = insert
    return bytes(out)


edits = st.lists(
    st.tuples(st.integers(0, 5000), st.integers(0, 3), st.binary(max_size=3)),
    min_size=1,
    max_size=4,
)


def check(spec_columns: list, values: list[bytes], options: dict[str, str] | None = None) -> None:
    raw = RawBatch("fuzz", 0, list(range(len(values))), values)
    for on_error in ("skip", "dead-letter"):
        spec = FormatSpec(spec_columns, META, options or {}, on_error)
        decoder = DebeziumJsonDecoder(spec)
        batch = decoder.decode(raw)
        assert len(batch.kinds) == len(batch.rows)
    strict = DebeziumJsonDecoder(FormatSpec(spec_columns, META, options or {}))
    try:
        strict.decode(raw)
    except FormatError as err:
        assert err.topic == "fuzz" and err.offset in range(len(values))


fuzz = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fuzz
@given(st.lists(st.binary(max_size=200), min_size=1, max_size=5))
def test_random_bytes(values: list[bytes]) -> None:
    check(COLUMNS, values)


@fuzz
@given(st.sampled_from(LINES), edits)
def test_mutated_real_envelopes(line: bytes, changes: list) -> None:
    check(PRODUCTS, [mutate(line, changes)])


@fuzz
@given(st.sampled_from(WRAPPED), edits)
def test_mutated_real_envelopes_with_schema(line: bytes, changes: list) -> None:
    check(PRODUCTS, [mutate(line, changes)], {"schema-include": "true"})


@fuzz
@given(st.lists(envelopes, min_size=1, max_size=4))
def test_random_envelopes(values: list[dict]) -> None:
    check(COLUMNS, [json.dumps(v).encode() for v in values])


@fuzz
@given(envelopes, json_values)
def test_random_envelopes_with_random_schema(envelope: dict, schema: object) -> None:
    message = json.dumps({"schema": schema, "payload": envelope}).encode()
    check(COLUMNS, [message], {"schema-include": "true"})
