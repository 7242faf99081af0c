"""PROCTIME() computed in a view's or a subquery's SELECT is a processing-time attribute
(Nexmark q12/q13 write it so), as in Flink; a plain column is not."""

from __future__ import annotations

import pytest

from deltaflow.formats.errors import SqlError
from deltaflow.processor.planner.api import plan_job

DDL = """
CREATE TABLE bid (auction BIGINT, price BIGINT) WITH ('connector' = 'kafka', 'topic' = 'b',
  'properties.bootstrap.servers' = 'x:1', 'format' = 'json');
CREATE TABLE side (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'kafka',
  'topic' = 's', 'properties.bootstrap.servers' = 'x:1', 'format' = 'debezium-json');
CREATE VIEW bids AS SELECT auction, price, PROCTIME() AS p_time, price AS not_time FROM bid;
CREATE TABLE out (auction BIGINT, v STRING) WITH ('connector' = 'print');
"""


def test_proctime_of_a_view_is_a_lookup_joins_time_attribute():
    sql = DDL + (
        "INSERT INTO out SELECT B.auction, S.v FROM bids B "
        "JOIN side FOR SYSTEM_TIME AS OF B.p_time AS S ON B.auction % 100 = S.k;"
    )
    explain = plan_job(sql).explain()
    assert (
        "LookupJoin(table=[default_catalog.default_database.side], joinType=[InnerJoin], lookup=[k=$f4]"
        in explain
    )


def test_a_plain_column_is_not_a_time_attribute():
    sql = DDL + (
        "INSERT INTO out SELECT B.auction, S.v FROM bids B "
        "JOIN side FOR SYSTEM_TIME AS OF B.not_time AS S ON B.auction = S.k;"
    )
    with pytest.raises(SqlError, match="processing-time attribute"):
        plan_job(sql)
