"""CAST / TRY_CAST with Flink 2.x semantics (legacy cast behaviour off)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from ex_helpers import cast, col, ev, i, lit, s

from deltaflow.processor.exprs.errors import EvalError

UTC = dt.UTC


def test_string_to_numbers() -> None:
    assert ev(cast(s("42"), "INT")) == 42
    assert ev(cast(s(" -7 "), "BIGINT")) == -7
    assert ev(cast(s("1.235"), "DECIMAL(5, 2)")) == Decimal("1.24")
    assert str(ev(cast(s("1.5"), "DECIMAL(5, 2)"))) == "1.50"
    assert ev(cast(s("1e3"), "DOUBLE")) == 1000.0


def test_invalid_cast_fails_and_try_cast_gives_null() -> None:
    with pytest.raises(EvalError, match="TRY_CAST"):
        ev(cast(s("non-number"), "INT"))
    assert ev(cast(s("non-number"), "INT", try_cast=True)) is None
    with pytest.raises(EvalError):
        ev(cast(s("3000000000"), "INT"))
    assert ev(cast(s("3000000000"), "BIGINT")) == 3000000000
    assert ev(cast(s("maybe"), "BOOLEAN", try_cast=True)) is None


def test_string_to_boolean() -> None:
    assert [ev(cast(s(v), "BOOLEAN")) for v in ("true", "T", "yes", "1", "false", "n", "0")] == [
        True,
        True,
        True,
        True,
        False,
        False,
        False,
    ]


def test_null_casts_to_null() -> None:
    assert ev(cast(col(0, "STRING"), "INT"), (None,)) is None


def test_numeric_narrowing() -> None:
    assert ev(cast(i(300), "TINYINT")) == 44  # Java (byte) 300
    assert ev(cast(lit(Decimal("-7.9"), "DECIMAL(2, 1)"), "INT")) == -7
    assert ev(cast(lit(3.99, "DOUBLE"), "INT")) == 3
    assert ev(cast(lit(1e20, "DOUBLE"), "INT")) == 2**31 - 1
    assert ev(cast(lit(Decimal("123.456"), "DECIMAL(6, 3)"), "DECIMAL(4, 1)")) == Decimal("123.5")
    assert ev(cast(lit(Decimal("12345.6"), "DECIMAL(6, 1)"), "DECIMAL(4, 1)")) is None
    assert ev(cast(lit(0.1, "DOUBLE"), "DECIMAL(5, 3)")) == Decimal("0.100")


def test_to_string() -> None:
    assert ev(cast(i(5), "STRING")) == "5"
    assert ev(cast(lit(True, "BOOLEAN"), "STRING")) == "TRUE"
    assert ev(cast(lit(Decimal("1.50"), "DECIMAL(3, 2)"), "STRING")) == "1.50"
    assert ev(cast(lit(1.0, "DOUBLE"), "STRING")) == "1.0"
    assert ev(cast(lit(1e7, "DOUBLE"), "STRING")) == "1.0E7"
    assert ev(cast(lit(dt.date(2024, 2, 9), "DATE"), "STRING")) == "2024-02-09"
    ts = dt.datetime(2021, 9, 24, 12, 34, 56, 123000)
    assert ev(cast(lit(ts, "TIMESTAMP(3)"), "STRING")) == "2021-09-24 12:34:56.123"
    assert ev(cast(lit(ts, "TIMESTAMP(0)"), "STRING")) == "2021-09-24 12:34:56"
    assert ev(cast(s("abcdef"), "VARCHAR(3)")) == "abc"
    assert ev(cast(s("ab"), "CHAR(4)")) == "ab  "


def test_string_to_temporal() -> None:
    assert ev(cast(s("2024-02-29"), "DATE")) == dt.date(2024, 2, 29)
    assert ev(cast(s("2024-02-29 10:11:12.345678"), "TIMESTAMP(3)")) == dt.datetime(
        2024, 2, 29, 10, 11, 12, 345000
    )
    assert ev(cast(s("2024-02-29T10:11:12"), "TIMESTAMP(3)")) == dt.datetime(
        2024, 2, 29, 10, 11, 12
    )
    assert ev(cast(s("10:11:12"), "TIME(0)")) == dt.time(10, 11, 12)
    with pytest.raises(EvalError):
        ev(cast(s("2024-02-30"), "DATE"))


def test_timestamp_and_ltz_use_the_session_time_zone() -> None:
    local = lit(dt.datetime(2024, 1, 1, 12, 0), "TIMESTAMP(3)")
    ltz = ev(cast(local, "TIMESTAMP_LTZ(3)"), time_zone="Europe/Berlin")
    assert ltz == dt.datetime(2024, 1, 1, 11, 0, tzinfo=UTC)
    instant = lit(dt.datetime(2024, 7, 1, 0, 30, tzinfo=UTC), "TIMESTAMP_LTZ(3)")
    assert ev(cast(instant, "TIMESTAMP(3)"), time_zone="Europe/Berlin") == dt.datetime(
        2024, 7, 1, 2, 30
    )
    assert ev(cast(instant, "DATE"), time_zone="America/New_York") == dt.date(2024, 6, 30)
    assert ev(cast(instant, "STRING"), time_zone="Asia/Tokyo") == "2024-07-01 09:30:00.000"


def test_temporal_conversions() -> None:
    ts = lit(dt.datetime(2024, 3, 1, 8, 9, 10, 987654), "TIMESTAMP(6)")
    assert ev(cast(ts, "DATE")) == dt.date(2024, 3, 1)
    assert ev(cast(ts, "TIME(0)")) == dt.time(8, 9, 10)
    assert ev(cast(ts, "TIMESTAMP(3)")) == dt.datetime(2024, 3, 1, 8, 9, 10, 987000)
    assert ev(cast(lit(dt.date(2024, 3, 1), "DATE"), "TIMESTAMP(3)")) == dt.datetime(2024, 3, 1)
    assert ev(cast(lit(0, "BIGINT"), "TIMESTAMP_LTZ(3)")) == dt.datetime(1970, 1, 1, tzinfo=UTC)


def test_bytes_and_strings() -> None:
    assert ev(cast(s("hé"), "BYTES")) == "hé".encode()
    assert ev(cast(lit(b"\xff", "BYTES"), "STRING", try_cast=True)) is None
    with pytest.raises(EvalError, match="UTF-8"):
        ev(cast(lit(b"\xff", "BYTES"), "STRING"))


def test_constructed_casts() -> None:
    assert ev(cast(lit([1, None, 3], "ARRAY<INT>"), "ARRAY<STRING>")) == ["1", None, "3"]
    assert ev(cast(lit([1, 2], "ARRAY<INT>"), "STRING")) == "[1, 2]"
    assert ev(cast(lit((1, "a"), "ROW<x INT, y STRING>"), "STRING")) == "(1, a)"
