"""TemporalJoin on event time: each left row joins the version of its key valid at its time
(Flink's semantics, checked against Flink 2.3 on the same rows: orders 1, 3, 5 get the
rates 10, 11, 12; USD's delete retracts its only version; GBP never had one)."""

from __future__ import annotations

from rt_helpers import INSERT_ONLY, fields, parse_changelog, scan, show, types

from deltaflow.processor.plan import TemporalJoin
from deltaflow.processor.runtime.base import MAX_WATERMARK, epoch_ms
from deltaflow.processor.runtime.temporal_join import TemporalJoinOperator

LEFT = types("INT", "STRING", "TIMESTAMP(3)")  # id, cur, ts
RIGHT = types("STRING", "INT", "TIMESTAMP(3)")  # cur, rate, ts
OUT = LEFT + RIGHT

RATES = """
+I[EUR, 10, 2024-01-01T00:00:00]
+I[USD, 20, 2024-01-01T00:00:01]
-U[EUR, 10, 2024-01-01T00:00:00]
+U[EUR, 11, 2024-01-01T00:00:05]
-D[USD, 20, 2024-01-01T00:00:01]
-U[EUR, 11, 2024-01-01T00:00:05]
+U[EUR, 12, 2024-01-01T00:00:09]
"""
ORDERS = """
+I[1, EUR, 2024-01-01T00:00:02]
+I[2, USD, 2024-01-01T00:00:03]
+I[3, EUR, 2024-01-01T00:00:06]
+I[4, USD, 2024-01-01T00:00:07]
+I[5, EUR, 2024-01-01T00:00:10]
+I[6, GBP, 2024-01-01T00:00:10]
+I[7, EUR, 2023-12-31T23:59:59]
"""


def node(join_type):
    return TemporalJoin(
        node_id=3, inputs=(scan(1, LEFT, INSERT_ONLY), scan(2, RIGHT)), fields=fields(OUT),
        changelog_mode=INSERT_ONLY, join_type=join_type, left_keys=(1,), right_keys=(0,),
        condition=None, left_time=2, right_time=2,
    )  # fmt: skip


def test_each_order_joins_the_rate_valid_at_its_time(backend, ctx):
    op = TemporalJoinOperator(node("LEFT"), backend, ctx)
    op.process(parse_changelog(RATES, RIGHT), 1)
    assert not op.process(parse_changelog(ORDERS, LEFT), 0)  # they wait for the watermark
    out = sorted(show(op.on_watermark(MAX_WATERMARK), OUT))
    assert [line.split(",")[0] + "," + line.split(",")[4] for line in out] == [
        "+I[1, 10", "+I[2, null", "+I[3, 11", "+I[4, null", "+I[5, 12", "+I[6, null", "+I[7, null",
    ]  # fmt: skip


def test_versions_no_left_row_can_choose_are_forgotten(backend, ctx):
    op = TemporalJoinOperator(node("INNER"), backend, ctx)
    op.process(parse_changelog(RATES, RIGHT), 1)
    op.process(parse_changelog("+I[9, EUR, 2024-01-01T00:00:06]", LEFT), 0)
    w = epoch_ms(parse_changelog("+I[0, x, 2024-01-01T00:00:06]", LEFT).rows[0][2])
    out = show(op.on_watermark(w), OUT)
    assert out == ["+I[9, EUR, 2024-01-01T00:00:06, EUR, 11, 2024-01-01T00:00:05]"]
    versions = dict(backend.table("3:TemporalJoin:versions").items())[("EUR",)]
    assert [v[0] for v in versions] == [w - 1000, w + 3000]  # 00:00:05 (valid at 06) and 09
