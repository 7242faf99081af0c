"""Which ROW_NUMBER queries keep the last of equal sort keys (issue 18 item 7).

Flink 2.3 plans Deduplicate keep-last (a row replaces the kept one when its time is >= the
kept one's) only for rank 1 of an insert-only input ordered by one time attribute DESC;
Nexmark q18 is that shape. Every other Rank keeps the first arrival. Checked against Flink
2.3 by the conformance templates ``topn_ties_*``; here the planner's decision.
"""

from __future__ import annotations

import pytest

from deltaflow.processor.plan import Rank
from deltaflow.processor.planner.api import plan_job

SOURCE = """
CREATE TABLE bid (auction INT, bidder INT, price INT, dateTime TIMESTAMP(3){extra})
WITH ('connector' = 'filesystem', 'path' = '/nonexistent', 'format' = '{fmt}');
CREATE TABLE out (auction INT, bidder INT, price INT, dateTime TIMESTAMP(3){rn_col})
WITH ('connector' = 'print');
INSERT INTO out SELECT {select} FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction
  ORDER BY {order}) AS rank_number FROM bid) WHERE {where};
"""
ROWTIME = ", WATERMARK FOR dateTime AS dateTime - INTERVAL '1' SECOND"
COLUMNS = "auction, bidder, price, dateTime"


def rank_of(sql: str) -> Rank:
    node = plan_job(sql).plan.sinks[0]
    while not isinstance(node, Rank):
        node = node.inputs[0]
    return node


def job(extra=ROWTIME, fmt="json", order="dateTime DESC", where="rank_number <= 1", rn=False):
    select = COLUMNS + (", rank_number" if rn else "")
    rn_col = ", rank_number BIGINT" if rn else ""
    return SOURCE.format(extra=extra, fmt=fmt, order=order, where=where, select=select,
                         rn_col=rn_col)  # fmt: skip


@pytest.mark.parametrize(
    "sql",
    [
        job(),  # Nexmark q18
        job(where="rank_number = 1"),
        job(rn=True),  # rn is the constant 1 here: Flink still deduplicates
        job(extra=", pt AS PROCTIME()", order="pt DESC"),
    ],
    ids=["q18", "rn_eq_1", "with_rn", "proctime"],
)
def test_rank_1_by_a_time_attribute_desc_over_insert_only_input_keeps_the_last(sql):
    assert rank_of(sql).later_first


@pytest.mark.parametrize(
    "sql",
    [
        job(extra=""),  # dateTime is no time attribute
        job(order="dateTime ASC"),
        job(order="dateTime DESC, price"),  # two sort keys: a Rank
        job(where="rank_number <= 2"),
        job(fmt="debezium-json"),  # an updating input
    ],
    ids=["plain_column", "asc", "two_keys", "top_2", "updating"],
)
def test_every_other_rank_keeps_the_first_of_equal_keys(sql):
    assert not rank_of(sql).later_first


def test_rank_1_by_a_rowtime_asc_over_insert_only_input_waits_for_the_watermark():
    """Flink's Deduplicate keep-first on event time: insert-only, emitted on the watermark."""
    assert rank_of(job(order="dateTime ASC")).first_on_watermark
    for other in (
        job(extra=", pt AS PROCTIME()", order="pt ASC"),  # proctime: kept at once
        job(extra="", order="dateTime ASC"),
        job(fmt="debezium-json", order="dateTime ASC"),
        job(order="dateTime ASC", where="rank_number <= 2"),
    ):
        assert not rank_of(other).first_on_watermark
