"""Nexmark's table, views and the 23 published Flink SQL queries q0..q22, as text.

The table is Nexmark's nested ``datagen`` table (``event_type`` and the ``person``,
``auction``, ``bid`` ROWs, each with its ``dateTime`` field, the computed event time and its
4-second watermark) and the three views over it are Nexmark's ``person``, ``auction``, ``bid``;
DDL written here from the published definitions. DATETIME is a reserved word in Flink 2.x, so
the computed column and the views' time column are ``customTime``, as in the Nexmark
repository's current texts (older ones say ``dateTime``); the ROW fields keep ``dateTime``. Each query is the published text (sink DDL and INSERT), with
placeholders where an engine-specific part goes:

- ``WITH (@sink)`` for the sink's connector (Nexmark's blackhole, q10's partitioned
  filesystem sink); q10's ``PARTITIONED BY (dt, hm)`` is dropped with it;
- ``WITH (@side)`` for q13's side input (a legacy ``connector.type = filesystem`` CSV table
  in the published text; that connector is gone from Flink 2.x);
- ``@udf`` for q14's ``count_char`` (a Java class there, ``bench/nexmark_udfs.py`` here).

q20's published text declares ``discard_sink`` but inserts into ``nexmark_q20``; here the
sink is ``nexmark_q20``. Nothing else differs from the published queries.
"""

from __future__ import annotations

import re

SOURCE = """CREATE TABLE datagen (
    event_type INT,
    person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR,
               city VARCHAR, state VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>,
    auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT,
                reserve BIGINT, `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT,
                category BIGINT, extra VARCHAR>,
    bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
            `dateTime` TIMESTAMP(3), extra VARCHAR>,
    customTime AS CASE WHEN event_type = 0 THEN person.`dateTime`
                       WHEN event_type = 1 THEN auction.`dateTime`
                       ELSE bid.`dateTime` END,
    WATERMARK FOR customTime AS customTime - INTERVAL '4' SECOND
) WITH (@source)"""

VIEWS = [
    "CREATE VIEW person AS SELECT person.id, person.name, person.emailAddress, "
    "person.creditCard, person.city, person.state, customTime, person.extra "
    "FROM datagen WHERE event_type = 0",
    "CREATE VIEW auction AS SELECT auction.id, auction.itemName, auction.description, "
    "auction.initialBid, auction.reserve, customTime, auction.expires, auction.seller, "
    "auction.category, auction.extra FROM datagen WHERE event_type = 1",
    "CREATE VIEW bid AS SELECT bid.auction, bid.bidder, bid.price, bid.channel, bid.url, "
    "customTime, bid.extra FROM datagen WHERE event_type = 2",
]

_BID_COLS = "auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, customTime TIMESTAMP(3), extra VARCHAR"
_STATS = ("total_bids BIGINT, rank1_bids BIGINT, rank2_bids BIGINT, rank3_bids BIGINT, "
          "total_bidders BIGINT, rank1_bidders BIGINT, rank2_bidders BIGINT, rank3_bidders BIGINT, "
          "total_auctions BIGINT, rank1_auctions BIGINT, rank2_auctions BIGINT, rank3_auctions BIGINT")  # fmt: skip
_STATS_SELECT = """count(*) AS total_bids,
    count(*) filter (where price < 10000) AS rank1_bids,
    count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
    count(*) filter (where price >= 1000000) AS rank3_bids,
    count(distinct bidder) AS total_bidders,
    count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
    count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
    count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
    count(distinct auction) AS total_auctions,
    count(distinct auction) filter (where price < 10000) AS rank1_auctions,
    count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
    count(distinct auction) filter (where price >= 1000000) AS rank3_auctions"""

QUERIES: dict[str, list[str]] = {
    "q0": ["CREATE TABLE nexmark_q0 (auction BIGINT, bidder BIGINT, price BIGINT, customTime TIMESTAMP(3), extra VARCHAR) WITH (@sink)",
           "INSERT INTO nexmark_q0 SELECT auction, bidder, price, customTime, extra FROM bid"],
    "q1": ["CREATE TABLE nexmark_q1 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), customTime TIMESTAMP(3), extra VARCHAR) WITH (@sink)",
           """INSERT INTO nexmark_q1
SELECT auction, bidder, 0.908 * price as price, customTime, extra FROM bid"""],
    "q2": ["CREATE TABLE nexmark_q2 (auction BIGINT, price BIGINT) WITH (@sink)",
           "INSERT INTO nexmark_q2 SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0"],
    "q3": ["CREATE TABLE nexmark_q3 (name VARCHAR, city VARCHAR, state VARCHAR, id BIGINT) WITH (@sink)",
           """INSERT INTO nexmark_q3
SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P on A.seller = P.id
WHERE A.category = 10 and (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')"""],
    "q4": ["CREATE TABLE nexmark_q4 (id BIGINT, final BIGINT) WITH (@sink)",
           """INSERT INTO nexmark_q4
SELECT Q.category, AVG(Q.final)
FROM (
    SELECT MAX(B.price) AS final, A.category
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.customTime BETWEEN A.customTime AND A.expires
    GROUP BY A.id, A.category
) Q
GROUP BY Q.category"""],
    "q5": ["CREATE TABLE nexmark_q5 (auction BIGINT, num BIGINT) WITH (@sink)",
           """INSERT INTO nexmark_q5
SELECT AuctionBids.auction, AuctionBids.num
 FROM (
   SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
     FROM TABLE(HOP(TABLE bid, DESCRIPTOR(customTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
     GROUP BY auction, window_start, window_end
 ) AS AuctionBids
 JOIN (
   SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
   FROM (
     SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
     FROM TABLE(HOP(TABLE bid, DESCRIPTOR(customTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
     GROUP BY auction, window_start, window_end
     ) AS CountBids
   GROUP BY CountBids.starttime, CountBids.endtime
 ) AS MaxBids
 ON AuctionBids.starttime = MaxBids.starttime AND
    AuctionBids.endtime = MaxBids.endtime AND
    AuctionBids.num >= MaxBids.maxn"""],
    "q6": ["CREATE TABLE nexmark_q6 (seller VARCHAR, avg_price BIGINT) WITH (@sink)",
           """INSERT INTO nexmark_q6
SELECT Q.seller,
    AVG(Q.price) OVER (PARTITION BY Q.seller ORDER BY Q.customTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price DESC) AS rownum
    FROM (SELECT A.id, A.seller, B.price, B.customTime
        FROM auction AS A, bid AS B
        WHERE A.id = B.auction and B.customTime between A.customTime and A.expires)
    WHERE rownum <= 1
) AS Q"""],
    "q7": ["CREATE TABLE nexmark_q7 (auction BIGINT, bidder BIGINT, price BIGINT, customTime TIMESTAMP(3), extra VARCHAR) WITH (@sink)",
           """INSERT INTO nexmark_q7
SELECT B.auction, B.bidder, B.price, B.customTime, B.extra
from bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end as customTime
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(customTime), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.customTime BETWEEN B1.customTime - INTERVAL '10' SECOND AND B1.customTime"""],
    "q8": ["CREATE TABLE nexmark_q8 (id BIGINT, name VARCHAR, stime TIMESTAMP(3)) WITH (@sink)",
           """INSERT INTO nexmark_q8
SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, name, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(customTime), INTERVAL '10' SECOND))
  GROUP BY id, name, window_start, window_end
) P
JOIN (
  SELECT seller, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(customTime), INTERVAL '10' SECOND))
  GROUP BY seller, window_start, window_end
) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime"""],
    "q9": ["CREATE TABLE nexmark_q9 (id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, customTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR, auction BIGINT, bidder BIGINT, price BIGINT, bid_customTime TIMESTAMP(3), bid_extra VARCHAR) WITH (@sink)",
           """INSERT INTO nexmark_q9
SELECT id, itemName, description, initialBid, reserve, customTime, expires, seller, category, extra,
    auction, bidder, price, bid_customTime, bid_extra
FROM (
   SELECT A.*, B.auction, B.bidder, B.price, B.customTime AS bid_customTime, B.extra AS bid_extra,
     ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.customTime ASC) AS rownum
   FROM auction A, bid B
   WHERE A.id = B.auction AND B.customTime BETWEEN A.customTime AND A.expires
)
WHERE rownum <= 1"""],
    "q10": ["CREATE TABLE nexmark_q10 (auction BIGINT, bidder BIGINT, price BIGINT, customTime TIMESTAMP(3), extra VARCHAR, dt STRING, hm STRING) WITH (@sink)",
            """INSERT INTO nexmark_q10
SELECT auction, bidder, price, customTime, extra, DATE_FORMAT(customTime, 'yyyy-MM-dd'), DATE_FORMAT(customTime, 'HH:mm')
FROM bid"""],
    "q11": ["CREATE TABLE nexmark_q11 (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3)) WITH (@sink)",
            """INSERT INTO nexmark_q11
SELECT B.bidder, count(*) as bid_count,
    SESSION_START(B.customTime, INTERVAL '10' SECOND) as starttime,
    SESSION_END(B.customTime, INTERVAL '10' SECOND) as endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.customTime, INTERVAL '10' SECOND)"""],
    "q12": ["CREATE TABLE nexmark_q12 (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3)) WITH (@sink)",
            "CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid",
            """INSERT INTO nexmark_q12
SELECT bidder, count(*) as bid_count, window_start AS starttime, window_end AS endtime
FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end"""],
    "q13": ["CREATE TABLE side_input (key BIGINT, `value` VARCHAR) WITH (@side)",
            "CREATE TABLE nexmark_q13 (auction BIGINT, bidder BIGINT, price BIGINT, customTime TIMESTAMP(3), `value` VARCHAR) WITH (@sink)",
            """INSERT INTO nexmark_q13
SELECT B.auction, B.bidder, B.price, B.customTime, S.`value`
FROM (SELECT *, PROCTIME() as p_time FROM bid) B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON mod(B.auction, 10000) = S.key"""],
    "q14": ["@udf",
            "CREATE TABLE nexmark_q14 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), bidTimeType VARCHAR, customTime TIMESTAMP(3), extra VARCHAR, c_counts BIGINT) WITH (@sink)",
            """INSERT INTO nexmark_q14
SELECT auction, bidder, 0.908 * price as price,
    CASE
        WHEN HOUR(customTime) >= 8 AND HOUR(customTime) <= 18 THEN 'dayTime'
        WHEN HOUR(customTime) <= 6 OR HOUR(customTime) >= 20 THEN 'nightTime'
        ELSE 'otherTime'
    END AS bidTimeType,
    customTime, extra, count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000"""],
    "q15": [f"CREATE TABLE nexmark_q15 (`day` VARCHAR, {_STATS}) WITH (@sink)",
            f"""INSERT INTO nexmark_q15
SELECT DATE_FORMAT(customTime, 'yyyy-MM-dd') as `day`,
    {_STATS_SELECT}
FROM bid
GROUP BY DATE_FORMAT(customTime, 'yyyy-MM-dd')"""],
    "q16": [f"CREATE TABLE nexmark_q16 (channel VARCHAR, `day` VARCHAR, `minute` VARCHAR, {_STATS}) WITH (@sink)",
            f"""INSERT INTO nexmark_q16
SELECT channel, DATE_FORMAT(customTime, 'yyyy-MM-dd') as `day`,
    max(DATE_FORMAT(customTime, 'HH:mm')) as `minute`,
    {_STATS_SELECT}
FROM bid
GROUP BY channel, DATE_FORMAT(customTime, 'yyyy-MM-dd')"""],
    "q17": ["CREATE TABLE nexmark_q17 (auction BIGINT, `day` VARCHAR, total_bids BIGINT, rank1_bids BIGINT, rank2_bids BIGINT, rank3_bids BIGINT, min_price BIGINT, max_price BIGINT, avg_price BIGINT, sum_price BIGINT) WITH (@sink)",
            """INSERT INTO nexmark_q17
SELECT auction, DATE_FORMAT(customTime, 'yyyy-MM-dd') as `day`,
     count(*) AS total_bids,
     count(*) filter (where price < 10000) AS rank1_bids,
     count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
     count(*) filter (where price >= 1000000) AS rank3_bids,
     min(price) AS min_price, max(price) AS max_price, avg(price) AS avg_price, sum(price) AS sum_price
FROM bid
GROUP BY auction, DATE_FORMAT(customTime, 'yyyy-MM-dd')"""],
    "q18": [f"CREATE TABLE nexmark_q18 ({_BID_COLS}) WITH (@sink)",
            """INSERT INTO nexmark_q18
SELECT auction, bidder, price, channel, url, customTime, extra
 FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY customTime DESC) AS rank_number
       FROM bid)
 WHERE rank_number <= 1"""],
    "q19": [f"CREATE TABLE nexmark_q19 ({_BID_COLS}, rank_number BIGINT) WITH (@sink)",
            """INSERT INTO nexmark_q19
SELECT * FROM
(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
WHERE rank_number <= 10"""],
    "q20": ["CREATE TABLE nexmark_q20 (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, bid_customTime TIMESTAMP(3), bid_extra VARCHAR, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, auction_customTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, auction_extra VARCHAR) WITH (@sink)",
            """INSERT INTO nexmark_q20
SELECT auction, bidder, price, channel, url, B.customTime, B.extra,
    itemName, description, initialBid, reserve, A.customTime, expires, seller, category, A.extra
FROM bid AS B INNER JOIN auction AS A on B.auction = A.id
WHERE A.category = 10"""],
    "q21": ["CREATE TABLE nexmark_q21 (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, channel_id VARCHAR) WITH (@sink)",
            """INSERT INTO nexmark_q21
SELECT auction, bidder, price, channel,
    CASE
        WHEN lower(channel) = 'apple' THEN '0'
        WHEN lower(channel) = 'google' THEN '1'
        WHEN lower(channel) = 'facebook' THEN '2'
        WHEN lower(channel) = 'baidu' THEN '3'
        ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
        END
    AS channel_id FROM bid
    where REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) is not null or
          lower(channel) in ('apple', 'google', 'facebook', 'baidu')"""],
    "q22": ["CREATE TABLE nexmark_q22 (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, dir1 VARCHAR, dir2 VARCHAR, dir3 VARCHAR) WITH (@sink)",
            """INSERT INTO nexmark_q22
SELECT auction, bidder, price, channel,
    SPLIT_INDEX(url, '/', 3) as dir1,
    SPLIT_INDEX(url, '/', 4) as dir2,
    SPLIT_INDEX(url, '/', 5) as dir3 FROM bid"""],
}  # fmt: skip

NAMES = list(QUERIES)
PROCESSING_TIME = {"q12", "q13"}  # output depends on the wall clock (q12) or has no Flink oracle
_SINK = re.compile(r"CREATE TABLE (\w+) \((.*)\) WITH \(@sink\)", re.S)


def statements(name: str, source: str, sink: str, side: str = "", udf: str = "") -> list[str]:
    """The query's statements for one engine: ``source``/``sink``/``side`` are the WITH options
    of the datagen table, the sink and q13's side input; ``udf`` is q14's CREATE FUNCTION."""
    out = [SOURCE.replace("@source", source), *VIEWS]
    for stmt in QUERIES[name]:
        if stmt == "@udf":
            out.append(udf)
            continue
        out.append(
            stmt.replace("WITH (@sink)", f"WITH ({sink})").replace("WITH (@side)", f"WITH ({side})")
        )
    return out


def sink_of(name: str) -> tuple[str, list[str]]:
    """The sink table's name and its column definitions."""
    for stmt in QUERIES[name]:
        found = _SINK.match(stmt)
        if found:
            return found.group(1), [c.strip() for c in re.split(r",(?![^(]*\))", found.group(2))]
    raise KeyError(name)
