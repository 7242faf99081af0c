"""Temporal functions; expected values from Flink's built-in function docs where given."""

from __future__ import annotations

import datetime as dt

from ex_helpers import call, cast, col, ev, i, lit, s, unit

from deltaflow.formats.types import DataType
from deltaflow.processor.exprs.coercion import INTERVAL_DAY_TIME, INTERVAL_YEAR_MONTH
from deltaflow.processor.exprs.nodes import Literal

UTC = dt.UTC


def date(text: str):  # type: ignore[no-untyped-def]
    return cast(s(text), "DATE")


def ts(text: str):  # type: ignore[no-untyped-def]
    return cast(s(text), "TIMESTAMP(3)")


def interval(value: int, kind: str) -> Literal:
    return Literal(DataType(kind, nullable=False), value)


def test_extract_doc_examples() -> None:
    assert ev(call("EXTRACT", unit("DAY"), date("2006-06-05"))) == 5
    assert ev(call("YEAR", date("1994-09-27"))) == 1994
    assert ev(call("QUARTER", date("1994-09-27"))) == 3
    assert ev(call("MONTH", date("1994-09-27"))) == 9
    assert ev(call("WEEK", date("1994-09-27"))) == 39
    assert ev(call("DAYOFYEAR", date("1994-09-27"))) == 270
    assert ev(call("DAYOFMONTH", date("1994-09-27"))) == 27
    assert ev(call("DAYOFWEEK", date("1994-09-27"))) == 3
    assert ev(call("HOUR", ts("1994-09-27 13:14:15"))) == 13
    assert ev(call("MINUTE", ts("1994-09-27 13:14:15"))) == 14
    assert ev(call("SECOND", ts("1994-09-27 13:14:15"))) == 15


def test_timestampadd_and_diff_doc_examples() -> None:
    assert ev(call("TIMESTAMPADD", unit("WEEK"), i(1), date("2003-01-02"))) == dt.date(2003, 1, 9)
    diff = call("TIMESTAMPDIFF", unit("DAY"), ts("2003-01-02 10:00:00"), ts("2003-01-03 10:00:00"))
    assert ev(diff) == 1
    # Flink 2.3: one month (adding a month to Jan 31 gives Feb 29), recorded in functions_flink.yaml
    assert ev(call("TIMESTAMPDIFF", unit("MONTH"), date("2024-01-31"), date("2024-02-29"))) == 1
    assert ev(call("TIMESTAMPDIFF", unit("MONTH"), date("2024-01-31"), date("2024-03-31"))) == 2
    assert (
        ev(
            call(
                "TIMESTAMPDIFF", unit("HOUR"), ts("2024-01-01 10:00:00"), ts("2024-01-01 07:30:00")
            )
        )
        == -2
    )
    assert ev(call("TIMESTAMPADD", unit("MONTH"), i(1), date("2024-01-31"))) == dt.date(2024, 2, 29)


def test_floor_and_ceil_to_unit_doc_examples() -> None:
    t = cast(s("12:44:31"), "TIME(0)")
    assert ev(call("FLOOR", t, unit("MINUTE"))) == dt.time(12, 44)
    assert ev(call("CEIL", t, unit("MINUTE"))) == dt.time(12, 45)
    x = ts("2024-05-17 13:14:15.678")
    assert ev(call("FLOOR", x, unit("HOUR"))) == dt.datetime(2024, 5, 17, 13)
    assert ev(call("CEIL", x, unit("DAY"))) == dt.datetime(2024, 5, 18)
    assert ev(call("FLOOR", x, unit("MONTH"))) == dt.datetime(2024, 5, 1)
    assert ev(call("CEIL", ts("2024-05-01 00:00:00"), unit("MONTH"))) == dt.datetime(2024, 5, 1)


def test_formatting_and_parsing() -> None:
    x = ts("2024-05-17 13:04:05.678")
    assert ev(call("DATE_FORMAT", x, s("yyyy-MM-dd HH:mm:ss"))) == "2024-05-17 13:04:05"
    assert ev(call("DATE_FORMAT", x, s("yy/M/d h:mm a SSS"))) == "24/5/17 1:04 PM 678"
    assert ev(call("TO_TIMESTAMP", s("2024-05-17 13:04:05"))) == dt.datetime(2024, 5, 17, 13, 4, 5)
    assert ev(call("TO_TIMESTAMP", s("17.05.2024"), s("dd.MM.yyyy"))) == dt.datetime(2024, 5, 17)
    assert ev(call("TO_TIMESTAMP", s("garbage"))) is None
    assert ev(call("TO_DATE", s("2024-05-17"))) == dt.date(2024, 5, 17)
    assert ev(call("TO_DATE", s("20240517"), s("yyyyMMdd"))) == dt.date(2024, 5, 17)


def test_epoch_conversions_follow_the_session_zone() -> None:
    assert ev(call("FROM_UNIXTIME", i(44))) == "1970-01-01 00:00:44"
    assert ev(call("FROM_UNIXTIME", i(0)), time_zone="Asia/Shanghai") == "1970-01-01 08:00:00"
    assert ev(call("UNIX_TIMESTAMP", s("1970-01-01 08:00:00")), time_zone="Asia/Shanghai") == 0
    assert ev(call("TO_TIMESTAMP_LTZ", lit(1500, "BIGINT"), i(3))) == dt.datetime(
        1970, 1, 1, 0, 0, 1, 500000, tzinfo=UTC
    )
    assert ev(call("TO_TIMESTAMP_LTZ", lit(86400, "BIGINT"), i(0))) == dt.datetime(
        1970, 1, 2, tzinfo=UTC
    )
    assert ev(call("CONVERT_TZ", s("1970-01-01 00:00:00"), s("UTC"), s("America/Los_Angeles"))) == (
        "1969-12-31 16:00:00"
    )


def test_ltz_fields_are_seen_in_the_session_zone() -> None:
    instant = lit(dt.datetime(2024, 1, 1, 23, 30, tzinfo=UTC), "TIMESTAMP_LTZ(3)")
    assert ev(call("HOUR", instant), time_zone="Europe/Berlin") == 0
    assert ev(call("DAYOFMONTH", instant), time_zone="Europe/Berlin") == 2
    floored = ev(call("FLOOR", instant, unit("DAY")), time_zone="Europe/Berlin")
    assert floored == dt.datetime(2024, 1, 1, 23, 0, tzinfo=UTC)


def test_interval_arithmetic() -> None:
    five_minutes = interval(5 * 60_000, INTERVAL_DAY_TIME)
    x = ts("2024-01-01 10:00:00")
    assert ev(call("+", x, five_minutes)) == dt.datetime(2024, 1, 1, 10, 5)
    assert ev(call("-", x, five_minutes)) == dt.datetime(2024, 1, 1, 9, 55)
    assert ev(call("+", date("2024-01-31"), interval(1, INTERVAL_YEAR_MONTH))) == dt.date(
        2024, 2, 29
    )
    assert ev(call("+", col(0, "TIMESTAMP(3)"), five_minutes), (None,)) is None


def test_dynamic_functions_read_the_clock() -> None:
    before = dt.datetime.now(UTC) - dt.timedelta(seconds=1)
    now = ev(call("NOW"))
    assert before <= now <= dt.datetime.now(UTC) and now.microsecond % 1000 == 0
    assert ev(call("CURRENT_DATE"), time_zone="UTC") == dt.datetime.now(UTC).date()
    assert ev(call("LOCALTIMESTAMP")).tzinfo is None


def test_intervals_print_as_flink_does() -> None:
    assert ev(cast(interval(5 * 60_000, INTERVAL_DAY_TIME), "STRING")) == "+0 00:05:00.000"
    assert ev(cast(interval(-(86_400_000 + 1), INTERVAL_DAY_TIME), "STRING")) == "-1 00:00:00.001"
    assert ev(cast(interval(14, INTERVAL_YEAR_MONTH), "STRING")) == "+1-02"
