"""The table of type facts in formats/types.py, and the DECIMAL fact every reader keeps.

Integer widths are Java's (Flink's TINYINT/SMALLINT/INT/BIGINT are byte/short/int/long);
an integer type as a DECIMAL has the digits of its largest value (Flink's
LogicalTypeMerging: DECIMAL(3, 0), (5, 0), (10, 0), (19, 0)); DECIMAL alone is
DECIMAL(10, 0). A DECIMAL(p, s) value is a Decimal with exactly s digits after the
point, whatever the input wrote (fewer digits, more digits rounded HALF_UP as Flink's
readers do, an integer, zero): each decoder below is checked for it, and so are a
CAST, an addition and the inline SUM of processor/runtime/aggs.py, which adds such
values without rounding.
"""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest

from deltaflow.formats.changelog import INSERT, Batch, RawBatch
from deltaflow.formats.registry import create_decoder, create_encoder
from deltaflow.formats.spec import FormatSpec
from deltaflow.formats.types import (
    DECIMAL_MAX_PRECISION,
    INT_BITS,
    INT_DIGITS,
    INT_RANGES,
    decimal_limit,
    decimal_params,
    decimal_quantum,
    is_decimal_value,
    parse_type,
    plain_type,
)
from deltaflow.processor import plan as p
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.graph import Graph, topological
from deltaflow.state.backend import StateBackend

COLUMN = parse_type("DECIMAL(10, 2)")
# input text -> the DECIMAL(10, 2) value (HALF_UP: ties away from zero)
CASES = [
    ("1.5", Decimal("1.50")),
    ("7", Decimal("7.00")),
    ("-0.125", Decimal("-0.13")),
    ("2.345", Decimal("2.35")),
    ("0", Decimal("0.00")),
    ("12345678.994", Decimal("12345678.99")),
]


def test_integer_widths_are_java_s():
    assert INT_BITS == {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
    assert INT_RANGES == {
        "TINYINT": (-128, 127),
        "SMALLINT": (-32768, 32767),
        "INT": (-2147483648, 2147483647),
        "BIGINT": (-9223372036854775808, 9223372036854775807),
    }
    assert INT_DIGITS == {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}


def test_plain_types_need_no_conversion():
    expected = {"STRING": str, "CHAR(3)": str, "BOOLEAN": bool, "DOUBLE": float}
    for text, python_type in expected.items():
        assert plain_type(parse_type(text)) is python_type
    for text in ("FLOAT", "INT", "BIGINT", "DECIMAL(10, 2)", "DATE", "BYTES"):
        assert plain_type(parse_type(text)) is None, text


def test_decimal_rules():
    assert decimal_params(parse_type("DECIMAL")) == (10, 0)
    assert decimal_params(parse_type("DECIMAL(38, 18)")) == (38, 18)
    assert DECIMAL_MAX_PRECISION == 38
    assert decimal_quantum(2) == Decimal("0.01") and decimal_quantum(2).as_tuple().exponent == -2
    assert decimal_limit(10, 2) == Decimal("100000000")
    assert is_decimal_value(Decimal("99999999.99"), COLUMN)
    assert not is_decimal_value(Decimal("100000000.00"), COLUMN)  # 9 digits before the point
    assert not is_decimal_value(Decimal("1.5"), COLUMN)  # one digit after it, not two
    assert not is_decimal_value(Decimal("1.500"), COLUMN)
    assert not is_decimal_value(Decimal("NaN"), COLUMN)


def decoded(fmt: str, payloads: list[bytes], **options: str) -> list[Decimal]:
    spec = FormatSpec([("v", COLUMN)], options=options)
    raw = RawBatch("t", 0, list(range(len(payloads))), payloads)
    batch = create_decoder(fmt, spec).decode(raw)
    assert batch.kinds == [INSERT] * len(payloads)
    return [row[0] for row in batch.rows]


def debezium(value: object) -> bytes:
    return json.dumps({"before": None, "after": {"v": value}, "op": "c"}).encode()


def b64(unscaled: int) -> str:
    return base64.b64encode(unscaled.to_bytes(8, "big", signed=True)).decode()


READERS = {
    "json number": lambda texts: decoded("json", [f'{{"v": {t}}}'.encode() for t in texts]),
    "json text": lambda texts: decoded("json", [json.dumps({"v": t}).encode() for t in texts]),
    "debezium-json string": lambda texts: decoded(
        "debezium-json", [debezium(t) for t in texts], **{"decimal-encoding": "string"}
    ),
    "debezium-json double": lambda texts: decoded(
        "debezium-json", [debezium(float(t)) for t in texts], **{"decimal-encoding": "double"}
    ),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_decoder_leaves_exactly_the_scale_s_digits(reader):
    texts = [t for t, _ in CASES]
    if reader == "debezium-json double":  # a double holds 12345678.994 inexactly
        texts = texts[:-1]
    values = READERS[reader](texts)
    assert values == [v for _, v in CASES][: len(texts)]
    for value in values:
        assert is_decimal_value(value, COLUMN), (reader, value)


def test_debezium_precise_and_avro_decimals_carry_the_column_s_scale():
    # base64 (Debezium's precise mode): the unscaled value at the column's scale
    values = decoded("debezium-json", [debezium(b64(n)) for n in (150, 700, -13, 0)],
                     **{"decimal-encoding": "base64"})  # fmt: skip
    assert values == [Decimal("1.50"), Decimal("7.00"), Decimal("-0.13"), Decimal("0.00")]
    spec = FormatSpec([("v", COLUMN)])
    rows = [(Decimal("1.5"),), (Decimal("7"),), (Decimal("0"),)]
    written = create_encoder("avro", spec).encode(Batch([INSERT] * 3, rows))
    read = create_decoder("avro", spec).decode(RawBatch("t", 0, [0, 1, 2], written)).rows
    assert [r[0] for r in read] == [Decimal("1.50"), Decimal("7.00"), Decimal("0.00")]
    assert all(is_decimal_value(r[0], COLUMN) for r in [*zip(values), *read])


def test_expressions_and_the_inline_sum_keep_the_scale(tmp_path):
    sql = """CREATE TABLE t (k INT, d DECIMAL(10, 2), s STRING) WITH ('connector' = 'datagen');
CREATE TABLE out (k INT, c DECIMAL(10, 2), twice DECIMAL(11, 2), total DECIMAL(38, 2),
  PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT k, MAX(CAST(s AS DECIMAL(10, 2))), MAX(d + d), SUM(d) FROM t GROUP BY k;
"""
    plan = plan_job(sql).plan
    nodes = topological(plan.sinks)
    (scan,) = [n.node_id for n in nodes if type(n) is p.TableSourceScan]
    (sink,) = [n for n in nodes if type(n) is p.Sink]
    rows = [(1, d, t) for (t, _), (_, d) in zip(CASES, CASES, strict=True)]
    with StateBackend(tmp_path / "state") as backend:
        out = Graph(plan, backend).push(scan, Batch([INSERT] * len(rows), rows))
    last = {row[0]: row for row in out[sink.node_id].rows}[1]
    assert last[1] == Decimal("12345678.99")  # MAX of the CASTs of the texts
    assert last[2] == Decimal("24691357.98")  # MAX of d + d
    assert last[3] == sum(v for _, v in CASES)  # 12345689.71, exactly
    for value, field in zip(last[1:], sink.fields[1:], strict=True):
        assert is_decimal_value(value, field.type), (field, value)
