"""Tables with a declared value type (``TypedValues``): exact round trips through LMDB."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from deltaflow.state.backend import StateBackend
from deltaflow.state.values import TypedValues, decode_value

ROW = tuple[int | None, str | None, Decimal | None, dt.datetime | None, dt.date | None,
            dt.time | None, bytes | None, bool | None, float | None]  # fmt: skip
ENTRIES = list[tuple[ROW, int, int]]

ROW_A = (
    7,
    "PAID",
    Decimal("10.50"),
    dt.datetime(2026, 1, 2, 3, 4, 5, 123000),
    dt.date(2026, 1, 2),
    dt.time(23, 59, 59, 999999),
    b"\x00\xff",
    True,
    -0.25,
)
ROW_B = (None, None, Decimal("-0.00"), dt.datetime(2026, 1, 2, tzinfo=dt.UTC), None, None,
         None, False, float("inf"))  # fmt: skip


def test_typed_values_round_trip_through_a_commit(tmp_path) -> None:
    value = [(ROW_A, 2, 0), (ROW_B, 1, 3)]
    with StateBackend(tmp_path / "s") as b:
        b.table("join", TypedValues(ENTRIES)).put((1,), value)
        b.commit()
    with StateBackend(tmp_path / "s") as b:
        got = b.table("join", TypedValues(ENTRIES)).get((1,))
    assert got == [tuple(e) for e in value]
    row_a, row_b = got[0][0], got[1][0]
    assert str(row_a[2]) == "10.50" and str(row_b[2]) == "-0.00"  # the scale is kept
    assert row_a[3].tzinfo is None and row_b[3].tzinfo == dt.UTC
    assert [type(v) for v in row_a] == [type(v) for v in ROW_A]


def test_an_integer_beyond_64_bits_falls_back_to_the_generic_encoding(tmp_path) -> None:
    big = [((1 << 70, None, None, None, None, None, None, None, None), 1, 0)]
    with StateBackend(tmp_path / "s") as b:
        b.table("t", TypedValues(list)).put(("k",), big)
        b.commit()
        assert b.table("t").get(("k",)) == big


def test_decode_value_reads_a_typed_value_untyped() -> None:
    data = TypedValues(ENTRIES).encode([((1, "x", None, None, None, None, None, None, 2.5), 1, 0)])
    assert data[:1] == b"T"
    assert decode_value(data) == [[[1, "x", None, None, None, None, None, None, 2.5], 1, 0]]


def test_a_snapshot_codec_writes_the_live_value_as_it_is_at_the_commit(tmp_path) -> None:
    def listed(entries: dict) -> list:
        return sorted(entries.items())

    live = {"b": 1}
    with StateBackend(tmp_path / "s") as b:
        table = b.table("live", TypedValues(list[tuple[str, int]], listed))
        table.put(("k",), live)
        live["a"] = 2  # changed after the put, before the commit
        assert table.get(("k",)) is live  # reads before the commit see the object
        b.commit()
    with StateBackend(tmp_path / "s") as b:
        got = b.table("live", TypedValues(list[tuple[str, int]])).get(("k",))
    assert got == [("a", 2), ("b", 1)]
