"""Query templates of the conformance suite: one INSERT each, over ``orders`` / ``customers``.

``compare`` says how a case's output is compared with Flink's:

- ``changelog``: the printed changelog line for line, in order. Used where the job has
  one source and Flink's order is deterministic at parallelism 1.
- ``final``: the final table (the changelog applied, as a multiset), plus per-key
  properties that hold whatever the interleaving. Used with two sources (Flink does not
  control how a join or union interleaves its inputs) and for window aggregates (rows of
  windows fired by one watermark come out in state order).
- ``plan``: planning only (the expected outcome is an error, or running would not be
  deterministic); the EXPLAIN decisions or the error are compared.

Sink column types are the types Flink derives for the SELECT (so no implicit cast
hides a type difference).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

ORDERS, BOTH = ("orders",), ("orders", "customers")


@dataclass(frozen=True)
class Template:
    name: str
    category: str
    select: str
    sink: tuple[str, ...]
    tables: tuple[str, ...] = ORDERS
    compare: str = "changelog"
    pk: tuple[str, ...] = ()
    watermark: bool = False
    settings: dict[str, str] = field(default_factory=dict)
    sink_connector: str = "print"
    seeds: int = 9
    scale: int = 1  # histories this many times longer than the default 8-40 / 5-18 events
    source_pk: bool = False  # the sources declare PRIMARY KEY (id / cid / pid) NOT ENFORCED
    # append_only: the sources are plain 'json' rows, one per insert and per update's new
    # image (an insert-only changelog); tie_ms: orders' ts rounded down to this many ms, so
    # that many rows share a timestamp
    append_only: bool = False
    tie_ms: int = 0
    append: bool = False  # orders append-only: the history's inserts as plain JSON rows
    # late: a watermark after every row in both engines (Flink emits one whenever event time
    # moves on by more than the 1 ms interval; deltaflow reads one row per batch), so rows
    # behind it are late as they would be in a stream
    late: bool = False


def T(name, category, select, sink, **kw) -> Template:  # noqa: N802 - a table constructor
    return Template(name, category, " ".join(select.split()), tuple(sink), **kw)


# fmt: off
CALC = [
    T("calc_case_filter", "calc",
      "SELECT id, UPPER(product), amt * qty, CASE WHEN amt > 50 THEN 'big' WHEN amt IS NULL THEN 'none' "
      "ELSE 'small' END FROM orders WHERE qty > 1",
      ["id INT", "p STRING", "total DECIMAL(21, 2)", "size VARCHAR(5)"]),
    T("calc_strings", "calc",
      "SELECT id, COALESCE(note, 'n/a'), CHAR_LENGTH(note), SUBSTRING(product FROM 2 FOR 3), "
      "CONCAT(product, '-', CAST(cust AS STRING)), TRIM(note) FROM orders",
      ["id INT", "note STRING", "len INT", "sub STRING", "tag STRING", "trimmed STRING"]),
    T("calc_math", "calc",
      "SELECT id, CAST(amt AS INT), ROUND(amt, 1), ABS(amt - 50), MOD(qty, 2), FLOOR(amt), CEIL(amt), "
      "amt / qty FROM orders",
      ["id INT", "i INT", "r DECIMAL(10, 1)", "a DECIMAL(13, 2)", "m INT", "f DECIMAL(10, 0)",
       "c DECIMAL(10, 0)", "d DECIMAL(21, 13)"]),
    T("calc_temporal", "calc",
      "SELECT id, EXTRACT(MINUTE FROM ts), DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm'), CAST(ts AS DATE), "
      "TIMESTAMPADD(MINUTE, 5, ts), FLOOR(ts TO MINUTE) FROM orders",
      ["id INT", "mi BIGINT", "txt STRING", "d DATE", "later TIMESTAMP(3)", "fl TIMESTAMP(3)"]),
    T("calc_in_double", "calc",
      "SELECT id, CAST(qty AS DOUBLE) / 4, POWER(qty, 2), LOWER(product), qty * 3 + 1 FROM orders "
      "WHERE amt IS NOT NULL AND product IN ('apple', 'fig', 'plum')",
      ["id INT", "q DOUBLE", "p DOUBLE", "lp STRING", "n INT"]),
    T("calc_if_nullif", "calc",
      "SELECT id, IF(cust IS NULL, -1, cust), NULLIF(qty, 3), CAST(amt AS STRING), "
      "REPLACE(product, 'p', 'P'), LPAD(product, 6, '*') FROM orders",
      ["id INT", "c INT", "q INT", "s STRING", "r STRING", "l STRING"]),
    T("calc_like_between", "calc",
      "SELECT id, product, amt FROM orders WHERE product LIKE '%p%' OR amt BETWEEN 10 AND 40",
      ["id INT", "product STRING", "amt DECIMAL(10, 2)"]),
]

AGG = [
    T("agg_basic", "aggregate",
      "SELECT cust, COUNT(*), SUM(amt), AVG(amt), MIN(amt), MAX(amt) FROM orders GROUP BY cust",
      ["cust INT", "n BIGINT", "s DECIMAL(38, 2)", "a DECIMAL(38, 6)", "mi DECIMAL(10, 2)",
       "ma DECIMAL(10, 2)"]),
    T("agg_distinct", "aggregate",
      "SELECT product, COUNT(DISTINCT cust), COUNT(note), SUM(qty), AVG(qty) FROM orders GROUP BY product",
      ["product STRING", "dc BIGINT", "nn BIGINT", "sq INT", "aq INT"]),
    T("agg_listagg", "aggregate",
      "SELECT cust, LISTAGG(product), LISTAGG(note, ';') FROM orders GROUP BY cust",
      ["cust INT", "ps STRING", "ns STRING"]),
    T("agg_first_last", "aggregate",
      "SELECT cust, FIRST_VALUE(product), LAST_VALUE(amt), LAST_VALUE(note) FROM orders GROUP BY cust",
      ["cust INT", "fp STRING", "la DECIMAL(10, 2)", "lnote STRING"]),
    T("agg_having", "aggregate",
      "SELECT cust, SUM(qty), COUNT(*) FROM orders GROUP BY cust HAVING COUNT(*) > 1",
      ["cust INT", "sq INT", "n BIGINT"]),
    T("agg_over_agg", "aggregate",
      "SELECT cnt, COUNT(*) FROM (SELECT cust, COUNT(*) AS cnt FROM orders GROUP BY cust) GROUP BY cnt",
      ["cnt BIGINT", "n BIGINT"]),
    T("agg_global", "aggregate",
      "SELECT COUNT(*), SUM(amt), MAX(ts), MIN(product), COUNT(DISTINCT product) FROM orders",
      ["n BIGINT", "s DECIMAL(38, 2)", "mt TIMESTAMP(3)", "mp STRING", "dp BIGINT"]),
    T("agg_two_keys", "aggregate",
      "SELECT product, cust, AVG(amt), MIN(note), MAX(note), SUM(amt * qty) FROM orders GROUP BY product, cust",
      ["product STRING", "cust INT", "a DECIMAL(38, 6)", "mn STRING", "mx STRING", "s DECIMAL(38, 2)"]),
    T("agg_expr_key", "aggregate",
      "SELECT qty > 2, COUNT(DISTINCT product), MAX(amt) - MIN(amt) FROM orders GROUP BY qty > 2",
      ["big BOOLEAN", "dp BIGINT", "spread DECIMAL(11, 2)"]),
    T("agg_filter_where", "aggregate",
      "SELECT cust, COUNT(*) FILTER (WHERE qty > 2), SUM(amt) FROM orders WHERE product <> 'kiwi' GROUP BY cust",
      ["cust INT", "nb BIGINT", "s DECIMAL(38, 2)"]),
]

JOIN = [
    T("join_inner", "join",
      "SELECT o.id, o.amt, c.name, c.region FROM orders o JOIN customers c ON o.cust = c.cid",
      ["id INT", "amt DECIMAL(10, 2)", "name STRING", "region STRING"], tables=BOTH, compare="final"),
    T("join_left", "join",
      "SELECT o.id, o.product, c.name FROM orders o LEFT JOIN customers c ON o.cust = c.cid",
      ["id INT", "product STRING", "name STRING"], tables=BOTH, compare="final"),
    T("join_right", "join",
      "SELECT o.id, c.cid, c.tier FROM orders o RIGHT JOIN customers c ON o.cust = c.cid",
      ["id INT", "cid INT", "tier INT"], tables=BOTH, compare="final"),
    T("join_full", "join",
      "SELECT o.id, o.cust, c.cid, c.name FROM orders o FULL OUTER JOIN customers c ON o.cust = c.cid",
      ["id INT", "cust INT", "cid INT", "name STRING"], tables=BOTH, compare="final"),
    T("join_non_equi", "join",
      "SELECT o.id, c.cid, o.qty, c.tier FROM orders o JOIN customers c ON o.cust = c.cid AND o.qty > c.tier",
      ["id INT", "cid INT", "qty INT", "tier INT"], tables=BOTH, compare="final"),
    T("join_left_non_equi", "join",
      "SELECT o.id, c.name FROM orders o LEFT JOIN customers c ON o.cust = c.cid AND o.amt > c.credit",
      ["id INT", "name STRING"], tables=BOTH, compare="final"),
    T("join_then_agg", "join",
      "SELECT c.region, COUNT(*), SUM(o.amt) FROM orders o JOIN customers c ON o.cust = c.cid GROUP BY c.region",
      ["region STRING", "n BIGINT", "s DECIMAL(38, 2)"], tables=BOTH, compare="final"),
    T("join_self", "join",
      "SELECT a.id, b.id FROM orders a JOIN orders b ON a.cust = b.cust AND a.id < b.id",
      ["a INT", "b INT"], compare="final"),
]

UNION = [
    T("union_all", "union",
      "SELECT id, product FROM orders WHERE qty > 2 UNION ALL SELECT cid, name FROM customers",
      ["k INT", "v STRING"], tables=BOTH, compare="final"),
    T("union_then_agg", "union",
      "SELECT k, COUNT(*) FROM (SELECT cust AS k FROM orders UNION ALL SELECT cid AS k FROM customers) GROUP BY k",
      ["k INT", "n BIGINT"], tables=BOTH, compare="final"),
    T("union_same_source", "union",
      "SELECT id, 'a' FROM orders WHERE qty > 3 UNION ALL SELECT id, 'b' FROM orders WHERE qty < 2",
      ["id INT", "tag CHAR(1)"], compare="final"),
]

RANK = [
    T("topn_rn", "topn",
      "SELECT * FROM (SELECT id, cust, amt, ROW_NUMBER() OVER (PARTITION BY cust ORDER BY amt DESC) AS rn "
      "FROM orders) WHERE rn <= 2",
      ["id INT", "cust INT", "amt DECIMAL(10, 2)", "rn BIGINT"]),
    T("topn_no_rn", "topn",
      "SELECT id, product, qty FROM (SELECT id, product, qty, ROW_NUMBER() OVER (PARTITION BY product "
      "ORDER BY qty ASC, id ASC) AS rn FROM orders) WHERE rn <= 3",
      ["id INT", "product STRING", "qty INT"]),
    T("topn_dedup_first", "topn",
      "SELECT id, cust, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY cust ORDER BY ts ASC) AS rn "
      "FROM orders) WHERE rn = 1",
      ["id INT", "cust INT", "ts TIMESTAMP(3)"]),
    T("topn_global", "topn",
      "SELECT * FROM (SELECT id, amt, ROW_NUMBER() OVER (ORDER BY amt DESC, id) AS rn FROM orders "
      "WHERE amt IS NOT NULL) WHERE rn <= 3",
      ["id INT", "amt DECIMAL(10, 2)", "rn BIGINT"]),
    T("topn_over_agg", "topn",
      "SELECT product, cnt FROM (SELECT product, cnt, ROW_NUMBER() OVER (ORDER BY cnt DESC, product) AS rn "
      "FROM (SELECT product, COUNT(*) AS cnt FROM orders GROUP BY product)) WHERE rn <= 2",
      ["product STRING", "cnt BIGINT"]),
]

# Ties between equal sort keys (issue 18 item 7), each case checked against Flink 2.3: over an
# insert-only input, ROW_NUMBER() = 1 ordered by a time attribute DESC keeps the row that
# arrived last (Flink's Deduplicate keep-last: a row replaces the kept one when its time is
# >= the kept one's); ordered ASC it is Deduplicate keep-first on event time (the row of the
# smallest time, the first of equal times, emitted once the watermark passes it; rows fired
# by one watermark come out in timer order, so the final table is compared); every
# other Rank keeps equal keys in arrival order (the first ranks higher), as do updating
# inputs, where a row retracted and added again goes behind its ties.
_AO = {"append_only": True, "tie_ms": 10_000}
TIES = [
    T("topn_ties_rowtime_last", "topn",
      "SELECT id, cust, amt, ts FROM (SELECT id, cust, amt, ts, ROW_NUMBER() OVER (PARTITION BY cust "
      "ORDER BY ts DESC) AS rn FROM orders) WHERE rn = 1",
      ["id INT", "cust INT", "amt DECIMAL(10, 2)", "ts TIMESTAMP(3)"], watermark=True, **_AO),
    T("topn_ties_rowtime_last_rn", "topn",
      "SELECT * FROM (SELECT id, cust, ts, ROW_NUMBER() OVER (PARTITION BY cust "
      "ORDER BY ts DESC) AS rn FROM orders) WHERE rn <= 1",
      ["id INT", "cust INT", "ts TIMESTAMP(3)", "rn BIGINT"], watermark=True, **_AO),
    T("topn_ties_rowtime_first", "topn",
      "SELECT id, cust, amt, ts FROM (SELECT id, cust, amt, ts, ROW_NUMBER() OVER (PARTITION BY cust "
      "ORDER BY ts ASC) AS rn FROM orders) WHERE rn = 1",
      ["id INT", "cust INT", "amt DECIMAL(10, 2)", "ts TIMESTAMP(3)"], watermark=True, compare="final", **_AO),
    T("topn_ties_rowtime_first_rn", "topn",
      "SELECT * FROM (SELECT id, cust, ts, ROW_NUMBER() OVER (PARTITION BY cust "
      "ORDER BY ts ASC) AS rn FROM orders) WHERE rn <= 1",
      ["id INT", "cust INT", "ts TIMESTAMP(3)", "rn BIGINT"], watermark=True, compare="final", **_AO),
    T("topn_ties_rowtime_top2", "topn",
      "SELECT id, cust, ts FROM (SELECT id, cust, ts, ROW_NUMBER() OVER (PARTITION BY cust "
      "ORDER BY ts DESC) AS rn FROM orders) WHERE rn <= 2",
      ["id INT", "cust INT", "ts TIMESTAMP(3)"], watermark=True, **_AO),
    T("topn_ties_plain_last", "topn",
      "SELECT id, cust, ts FROM (SELECT id, cust, ts, ROW_NUMBER() OVER (PARTITION BY cust "
      "ORDER BY ts DESC) AS rn FROM orders) WHERE rn = 1",
      ["id INT", "cust INT", "ts TIMESTAMP(3)"], **_AO),
    T("topn_ties_plain_first", "topn",
      "SELECT id, cust, ts FROM (SELECT id, cust, ts, ROW_NUMBER() OVER (PARTITION BY cust "
      "ORDER BY ts ASC) AS rn FROM orders) WHERE rn = 1",
      ["id INT", "cust INT", "ts TIMESTAMP(3)"], **_AO),
    T("topn_ties_plain_range", "topn",
      "SELECT * FROM (SELECT id, cust, ts, ROW_NUMBER() OVER (PARTITION BY cust "
      "ORDER BY ts DESC) AS rn FROM orders) WHERE rn BETWEEN 2 AND 3",
      ["id INT", "cust INT", "ts TIMESTAMP(3)", "rn BIGINT"], **_AO),
    T("topn_ties_updating_rowtime", "topn",
      "SELECT id, cust, ts FROM (SELECT id, cust, ts, ROW_NUMBER() OVER (PARTITION BY cust "
      "ORDER BY ts DESC) AS rn FROM orders) WHERE rn = 1",
      ["id INT", "cust INT", "ts TIMESTAMP(3)"], watermark=True, tie_ms=10_000),
    T("topn_ties_updating_rn", "topn",
      "SELECT * FROM (SELECT id, cust, ts, ROW_NUMBER() OVER (PARTITION BY cust "
      "ORDER BY ts ASC) AS rn FROM orders) WHERE rn <= 2",
      ["id INT", "cust INT", "ts TIMESTAMP(3)", "rn BIGINT"], tie_ms=10_000),
]

_WS = "window_start, window_end"
WINDOW = [
    T("window_tumble", "window",
      f"SELECT {_WS}, cust, COUNT(*), SUM(amt) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), "
      f"INTERVAL '10' SECOND)) GROUP BY {_WS}, cust",
      ["ws TIMESTAMP(3)", "we TIMESTAMP(3)", "cust INT", "n BIGINT", "s DECIMAL(38, 2)"],
      watermark=True, compare="final"),
    T("window_hop", "window",
      f"SELECT {_WS}, MAX(qty), MIN(product) FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), "
      f"INTERVAL '5' SECOND, INTERVAL '15' SECOND)) GROUP BY {_WS}",
      ["ws TIMESTAMP(3)", "we TIMESTAMP(3)", "mq INT", "mp STRING"], watermark=True, compare="final"),
    T("window_cumulate", "window",
      f"SELECT {_WS}, product, SUM(qty), COUNT(DISTINCT cust) FROM TABLE(CUMULATE(TABLE orders, "
      f"DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '30' SECOND)) GROUP BY {_WS}, product",
      ["ws TIMESTAMP(3)", "we TIMESTAMP(3)", "product STRING", "sq INT", "dc BIGINT"],
      watermark=True, compare="final"),
    T("window_time_avg", "window",
      "SELECT window_time, AVG(amt), COUNT(note) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), "
      f"INTERVAL '20' SECOND)) GROUP BY {_WS}, window_time",
      ["wt TIMESTAMP(3)", "a DECIMAL(38, 6)", "n BIGINT"], watermark=True, compare="final"),
]

# Flink 2.3 rejects an upsert key other than the sink's primary key unless the INSERT says
# ON CONFLICT; with require-on-conflict off it plans the SinkUpsertMaterializer as before.
_NO_ON_CONFLICT = {"table.exec.sink.require-on-conflict": "false"}
SINKS = [
    T("upsert_agg_key", "sink",
      "SELECT cust, COUNT(*), SUM(qty) FROM orders WHERE cust IS NOT NULL GROUP BY cust",
      ["cust INT", "n BIGINT", "sq INT"], pk=("cust",)),
    T("upsert_materialize", "sink",
      "SELECT cust, product, COUNT(*) FROM orders WHERE product IS NOT NULL GROUP BY cust, product",
      ["cust INT", "product STRING", "n BIGINT"], pk=("product",), settings=_NO_ON_CONFLICT),
    T("upsert_projection", "sink",
      "SELECT id, cust, amt FROM orders",
      ["id INT", "cust INT", "amt DECIMAL(10, 2)"], pk=("id",), settings=_NO_ON_CONFLICT),
    T("upsert_join", "sink",
      "SELECT o.id, c.name FROM orders o LEFT JOIN customers c ON o.cust = c.cid",
      ["id INT", "name STRING"], pk=("id",), tables=BOTH, compare="final", settings=_NO_ON_CONFLICT),
    T("upsert_topn", "sink",
      "SELECT cust, id, amt FROM (SELECT cust, id, amt, ROW_NUMBER() OVER (PARTITION BY cust ORDER BY amt DESC) "
      "AS rn FROM orders WHERE cust IS NOT NULL) WHERE rn = 1",
      ["cust INT", "id INT", "amt DECIMAL(10, 2)"], pk=("cust",)),
    T("sink_pk_not_null", "sink",
      "SELECT cust, COUNT(*) FROM orders GROUP BY cust",
      ["cust INT", "n BIGINT"], pk=("cust",), seeds=3),
]

_NDU = {"table.optimizer.non-deterministic-update.strategy": "TRY_RESOLVE"}
ERRORS = [
    T("error_append_only_agg", "error",
      "SELECT cust, COUNT(*) FROM orders GROUP BY cust",
      ["cust INT", "n BIGINT"], sink_connector="filesystem", compare="plan", seeds=3),
    T("error_append_only_cdc", "error",
      "SELECT id, product FROM orders",
      ["id INT", "product STRING"], sink_connector="filesystem", compare="plan", seeds=3),
    T("error_ndu_now", "error",
      "SELECT id, cust, NOW() FROM orders",
      ["id INT", "cust INT", "seen TIMESTAMP_LTZ(3)"], settings=_NDU, compare="plan", seeds=3),
    T("error_require_on_conflict", "error",
      "SELECT cust, product, COUNT(*) FROM orders GROUP BY cust, product",
      ["cust INT", "product STRING", "n BIGINT"], pk=("product",), compare="plan", seeds=3),
    T("plan_ndu_join_now", "error",
      "SELECT o.id, c.name, CURRENT_TIMESTAMP FROM orders o LEFT JOIN customers c ON o.cust = c.cid",
      ["id INT", "name STRING", "seen TIMESTAMP_LTZ(3)"], tables=BOTH, settings=_NDU, compare="plan",
      seeds=3),
]


# A second round: more functions, aggregate shapes, join shapes, rank ranges and windows.
MORE = [
    T("calc_strings_2", "calc",
      "SELECT id, CONCAT_WS('|', product, note), REGEXP_REPLACE(product, '[aeiou]', '_'), INITCAP(note), "
      "SPLIT_INDEX(note, ' ', 1), REVERSE(product), POSITION('p' IN product) FROM orders",
      ["id INT", "cw STRING", "rr STRING", "ic STRING", "si STRING", "rv STRING", "pos INT"]),
    T("calc_casts", "calc",
      "SELECT id, CAST(amt AS DOUBLE), CAST(qty AS DECIMAL(5, 1)), CAST(amt AS BIGINT), "
      "CAST(cust AS STRING) || '#', TRY_CAST(note AS INT), CAST(ts AS STRING) FROM orders",
      ["id INT", "d DOUBLE", "q DECIMAL(5, 1)", "b BIGINT", "c STRING", "n INT", "t STRING"]),
    T("calc_temporal_2", "calc",
      "SELECT id, TIMESTAMPDIFF(SECOND, TIMESTAMP '2024-01-01 00:00:00', ts), YEAR(ts), HOUR(ts), "
      "DAYOFWEEK(CAST(ts AS DATE)), ts + INTERVAL '90' MINUTE FROM orders WHERE ts > TIMESTAMP '2024-01-01 00:00:10'",
      ["id INT", "secs INT", "y BIGINT", "h BIGINT", "dw BIGINT", "later TIMESTAMP(3)"]),
    T("calc_logic_nulls", "calc",
      "SELECT id, amt > 20 AND qty < 3, note IS NULL OR product = 'fig', NOT (cust = 2), "
      "COALESCE(cust, qty, -1), GREATEST(qty, cust), cust IS DISTINCT FROM 3 FROM orders",
      ["id INT", "a BOOLEAN", "o BOOLEAN", "n BOOLEAN", "c INT", "g INT", "d BOOLEAN"]),
    T("agg_double", "aggregate",
      "SELECT region, SUM(credit), AVG(credit), MAX(credit), COUNT(credit) FROM customers GROUP BY region",
      ["region STRING", "s DOUBLE", "a DOUBLE", "m DOUBLE", "n BIGINT"], tables=("customers",)),
    T("agg_case_key", "aggregate",
      "SELECT CASE WHEN amt >= 50 THEN 'high' ELSE 'low' END, MIN(ts), MAX(ts), SUM(qty * 2), "
      "COUNT(DISTINCT note) FILTER (WHERE qty > 1) FROM orders GROUP BY CASE WHEN amt >= 50 THEN 'high' ELSE 'low' END",
      ["band VARCHAR(4)", "mi TIMESTAMP(3)", "ma TIMESTAMP(3)", "s INT", "dn BIGINT"]),
    T("agg_string_minmax", "aggregate",
      "SELECT cust, MIN(product), MAX(product), LISTAGG(DISTINCT product), COUNT(*) FROM orders GROUP BY cust",
      ["cust INT", "mi STRING", "ma STRING", "ld STRING", "n BIGINT"]),
    T("agg_avg_int_sum0", "aggregate",
      "SELECT product, AVG(qty), SUM(amt) / COUNT(*), MAX(amt * 2) FROM orders GROUP BY product",
      ["product STRING", "a INT", "r DECIMAL(38, 6)", "m DECIMAL(21, 2)"]),
    T("join_anti_filter", "join",
      "SELECT o.id, o.cust FROM orders o LEFT JOIN customers c ON o.cust = c.cid WHERE c.cid IS NULL",
      ["id INT", "cust INT"], tables=BOTH, compare="final"),
    T("join_agg_both", "join",
      "SELECT a.cust, a.n, c.name FROM (SELECT cust, COUNT(*) AS n FROM orders GROUP BY cust) a "
      "JOIN customers c ON a.cust = c.cid",
      ["cust INT", "n BIGINT", "name STRING"], tables=BOTH, compare="final"),
    T("join_two_keys_expr", "join",
      "SELECT o.id, c.cid FROM orders o JOIN customers c ON o.cust = c.cid AND o.qty = c.tier + 1",
      ["id INT", "cid INT"], tables=BOTH, compare="final"),
    T("join_full_agg", "join",
      "SELECT COALESCE(o.cust, c.cid), COUNT(o.id), COUNT(c.cid) FROM orders o FULL JOIN customers c "
      "ON o.cust = c.cid GROUP BY COALESCE(o.cust, c.cid)",
      ["k INT", "n_o BIGINT", "n_c BIGINT"], tables=BOTH, compare="final"),
    T("topn_range", "topn",
      "SELECT * FROM (SELECT id, product, amt, ROW_NUMBER() OVER (PARTITION BY product ORDER BY amt ASC) AS rn "
      "FROM orders WHERE amt IS NOT NULL) WHERE rn BETWEEN 2 AND 3",
      ["id INT", "product STRING", "amt DECIMAL(10, 2)", "rn BIGINT"]),
    T("topn_dedup_last", "topn",
      "SELECT id, cust, ts FROM (SELECT id, cust, ts, ROW_NUMBER() OVER (PARTITION BY cust ORDER BY ts DESC) AS rn "
      "FROM orders) WHERE rn = 1",
      ["id INT", "cust INT", "ts TIMESTAMP(3)"]),
    T("window_tumble_listagg", "window",
      f"SELECT {_WS}, LISTAGG(product), MIN(amt), COUNT(DISTINCT cust) FROM TABLE(TUMBLE(TABLE orders, "
      f"DESCRIPTOR(ts), INTERVAL '15' SECOND)) WHERE qty > 1 GROUP BY {_WS}",
      ["ws TIMESTAMP(3)", "we TIMESTAMP(3)", "lp STRING", "ma DECIMAL(10, 2)", "dc BIGINT"],
      watermark=True, compare="final"),
    T("union_three", "union",
      "SELECT cust AS k, 'o' FROM orders UNION ALL SELECT cid, 'c' FROM customers UNION ALL "
      "SELECT tier, 't' FROM customers WHERE tier IS NOT NULL",
      ["k INT", "src CHAR(1)"], tables=BOTH, compare="final"),
]

# Long histories (200-1,200 orders): state that grows, many retractions per key.
_MINI_BATCH = {
    "table.exec.mini-batch.enabled": "true",
    "table.exec.mini-batch.allow-latency": "1 s",
    "table.exec.mini-batch.size": "1000",
}
LONG = [
    T("long_agg", "aggregate",
      "SELECT cust, COUNT(*), SUM(amt), MAX(amt), LISTAGG(product), COUNT(DISTINCT note) FROM orders GROUP BY cust",
      ["cust INT", "n BIGINT", "s DECIMAL(38, 2)", "m DECIMAL(10, 2)", "lp STRING", "dn BIGINT"],
      scale=30, seeds=3),
    T("long_join_left", "join",
      "SELECT o.id, o.amt, c.name, c.tier FROM orders o LEFT JOIN customers c ON o.cust = c.cid",
      ["id INT", "amt DECIMAL(10, 2)", "name STRING", "tier INT"],
      tables=BOTH, compare="final", scale=30, seeds=3),
    T("long_topn", "topn",
      "SELECT * FROM (SELECT id, cust, amt, ROW_NUMBER() OVER (PARTITION BY cust ORDER BY amt DESC, id) AS rn "
      "FROM orders) WHERE rn <= 3",
      ["id INT", "cust INT", "amt DECIMAL(10, 2)", "rn BIGINT"], scale=30, seeds=3),
    T("long_upsert_materialize", "sink",
      "SELECT cust, product, COUNT(*) FROM orders WHERE product IS NOT NULL GROUP BY cust, product",
      ["cust INT", "product STRING", "n BIGINT"], pk=("product",), settings=_NO_ON_CONFLICT,
      scale=30, seeds=3),
    T("agg_mini_batch", "aggregate",
      "SELECT cust, COUNT(*), SUM(qty), MIN(amt) FROM orders GROUP BY cust",
      ["cust INT", "n BIGINT", "sq INT", "ma DECIMAL(10, 2)"],
      settings=_MINI_BATCH, compare="final", scale=10, seeds=3),
]

# A third table with TIMESTAMP_LTZ, DATE and DOUBLE columns.
PAY, ORDERS_PAY = ("payments",), ("orders", "payments")
LTZ = [
    T("ltz_calc", "calc",
      "SELECT pid, CAST(paid_at AS STRING), EXTRACT(HOUR FROM paid_at), DATE_FORMAT(paid_at, 'yyyy-MM-dd HH:mm'), "
      "CAST(paid_at AS TIMESTAMP(3)), pay_day + INTERVAL '1' DAY, CAST(pay_day AS STRING), fee * 2 FROM payments",
      ["pid INT", "s STRING", "h BIGINT", "f STRING", "t TIMESTAMP(3)", "d DATE", "ds STRING", "fee DOUBLE"],
      tables=PAY, seeds=6),
    T("ltz_agg_by_day", "aggregate",
      "SELECT pay_day, COUNT(*), SUM(fee), MIN(paid_at), MAX(channel) FROM payments GROUP BY pay_day",
      ["pay_day DATE", "n BIGINT", "s DOUBLE", "mp TIMESTAMP_LTZ(3)", "mm STRING"], tables=PAY, seeds=6),
    T("ltz_window", "window",
      "SELECT window_start, window_end, window_time, channel, COUNT(*), AVG(fee) FROM TABLE(TUMBLE(TABLE payments, "
      "DESCRIPTOR(paid_at), INTERVAL '1' HOUR)) GROUP BY window_start, window_end, window_time, channel",
      ["ws TIMESTAMP(3)", "we TIMESTAMP(3)", "wt TIMESTAMP_LTZ(3)", "channel STRING", "n BIGINT", "a DOUBLE"],
      tables=PAY, watermark=True, compare="final", seeds=6),
    T("ltz_join", "join",
      "SELECT o.id, p.pid, p.paid_at, o.amt FROM orders o JOIN payments p ON o.id = p.oid",
      ["id INT", "pid INT", "paid_at TIMESTAMP_LTZ(3)", "amt DECIMAL(10, 2)"],
      tables=ORDERS_PAY, compare="final", seeds=6),
    T("ltz_topn_last_payment", "topn",
      "SELECT oid, pid, paid_at FROM (SELECT oid, pid, paid_at, ROW_NUMBER() OVER (PARTITION BY oid "
      "ORDER BY paid_at DESC) AS rn FROM payments) WHERE rn = 1",
      ["oid INT", "pid INT", "paid_at TIMESTAMP_LTZ(3)"], tables=PAY, seeds=6),
]

# Join trees written with commas, CROSS JOIN plus WHERE and mixed: every conjunct is pushed to
# the lowest join or input holding its columns, equalities become keys at every level.
THREE = ("orders", "customers", "payments")
JOIN_PUSH = [
    T("join_commas_three", "join",
      "SELECT o.id, c.name, p.pid FROM orders o, customers c, payments p "
      "WHERE o.cust = c.cid AND p.oid = o.id AND c.tier > 1",
      ["id INT", "name STRING", "pid INT"], tables=THREE, compare="final", seeds=6),
    T("join_cross_where", "join",
      "SELECT o.id, c.name FROM orders o CROSS JOIN customers c WHERE o.cust = c.cid AND o.qty > 1",
      ["id INT", "name STRING"], tables=BOTH, compare="final", seeds=6),
    T("join_mixed_three", "join",
      "SELECT o.id, c.name, p.fee FROM orders o JOIN payments p ON p.oid = o.id, customers c "
      "WHERE c.cid = o.cust AND p.fee > 1",
      ["id INT", "name STRING", "fee DOUBLE"], tables=THREE, compare="final", seeds=6),
    T("join_or_common_key", "join",
      "SELECT o.id, c.cid FROM orders o, customers c WHERE (o.cust = c.cid AND o.product = 'apple' "
      "AND c.tier >= 1) OR (o.cust = c.cid AND o.qty > 2 AND c.region = 'north')",
      ["id INT", "cid INT"], tables=BOTH, compare="final", seeds=6),
    T("join_left_where_strict", "join",
      "SELECT o.id, c.name FROM orders o LEFT JOIN customers c ON o.cust = c.cid AND o.qty > 1 "
      "WHERE c.region = 'north'",
      ["id INT", "name STRING"], tables=BOTH, compare="final", seeds=6),
    T("join_left_on_sides", "join",
      "SELECT o.id, o.qty, c.name FROM orders o LEFT JOIN customers c ON o.cust = c.cid AND o.qty > 1 "
      "AND c.tier > 0 WHERE o.amt IS NOT NULL",
      ["id INT", "qty INT", "name STRING"], tables=BOTH, compare="final", seeds=6),
    T("join_commas_cross_order", "join",
      "SELECT c.name, p.pid, o.id, o.qty FROM customers c, payments p, orders o "
      "WHERE o.cust = c.cid AND p.oid = o.id",
      ["name STRING", "pid INT", "id INT", "qty INT"], tables=THREE, compare="final", seeds=6),
    T("join_full_where_one_side", "join",
      "SELECT o.id, c.cid FROM orders o FULL JOIN customers c ON o.cust = c.cid WHERE o.qty > 1",
      ["id INT", "cid INT"], tables=BOTH, compare="final", seeds=6),
]

# ORDER BY ... LIMIT: a Top-N without partition keys (Flink's SortLimit). A range starting above
# rank 1 without the rank number is compared as a final table (docs/FLINK_COMPATIBILITY.md).
SORT_LIMIT = [
    T("sortlimit_agg", "topn",
      "SELECT cust, SUM(qty) AS s FROM orders GROUP BY cust ORDER BY s DESC, cust LIMIT 2",
      ["cust INT", "s INT"]),
    T("sortlimit_offset", "topn",
      "SELECT id, product, amt FROM orders WHERE amt IS NOT NULL ORDER BY amt, id LIMIT 3 OFFSET 1",
      ["id INT", "product STRING", "amt DECIMAL(10, 2)"], compare="final"),
    T("sortlimit_position_alias", "topn",
      "SELECT product AS p, COUNT(*) AS n FROM orders GROUP BY product ORDER BY 2 DESC, p LIMIT 3",
      ["p STRING", "n BIGINT"]),
    T("topn_range_no_rn", "topn",
      "SELECT id, product FROM (SELECT id, product, ROW_NUMBER() OVER (PARTITION BY product "
      "ORDER BY qty DESC, id) AS rn FROM orders) WHERE rn BETWEEN 2 AND 3",
      ["id INT", "product STRING"], compare="final"),
    T("sortlimit_join", "topn",
      "SELECT o.id, c.name FROM orders o JOIN customers c ON o.cust = c.cid ORDER BY o.id DESC LIMIT 4",
      ["id INT", "name STRING"], tables=BOTH, compare="final"),
]

# Aggregates Flink reduces (STDDEV / VAR through $WELFORD_M2$1 and COUNT) and UNION (distinct).
SQL17 = [
    T("agg_variance", "aggregate",
      "SELECT cust, STDDEV_POP(amt), STDDEV_SAMP(qty), VAR_POP(qty), VAR_SAMP(amt), VARIANCE(amt), "
      "STDDEV(qty) FROM orders GROUP BY cust",
      ["cust INT", "a DECIMAL(38, 6)", "b INT", "c INT", "d DECIMAL(38, 6)", "e DECIMAL(38, 6)", "f INT"]),
    T("agg_variance_double", "aggregate",
      "SELECT region, STDDEV_POP(credit), VAR_SAMP(credit), COUNT(*) FROM customers GROUP BY region",
      ["region STRING", "s DOUBLE", "v DOUBLE", "n BIGINT"], tables=("customers",)),
    T("union_distinct", "union",
      "SELECT cust AS k, product FROM orders UNION SELECT cid, region FROM customers",
      ["k INT", "product STRING"], tables=BOTH, compare="final"),
    T("union_distinct_one_source", "union",
      "SELECT product FROM orders WHERE qty > 2 UNION SELECT product FROM orders WHERE amt > 50",
      ["product STRING"], compare="final"),
    T("subquery_exists", "join",
      "SELECT c.cid, c.name FROM customers c WHERE EXISTS (SELECT * FROM orders o WHERE o.cust = c.cid "
      "AND o.qty > 1)",
      ["cid INT", "name STRING"], tables=BOTH, compare="final"),
    T("subquery_not_exists", "join",
      "SELECT c.cid, c.tier FROM customers c WHERE NOT EXISTS (SELECT * FROM orders o WHERE o.cust = c.cid)",
      ["cid INT", "tier INT"], tables=BOTH, compare="final"),
    T("subquery_exists_other", "join",
      "SELECT o.id, o.product FROM orders o WHERE EXISTS (SELECT * FROM orders p WHERE p.cust = o.cust "
      "AND p.product <> o.product)",
      ["id INT", "product STRING"], compare="final"),
    T("subquery_not_exists_other", "join",
      "SELECT o.id, o.product FROM orders o WHERE NOT EXISTS (SELECT * FROM orders p WHERE p.cust = o.cust "
      "AND p.product <> o.product AND p.qty > 1)",
      ["id INT", "product STRING"], compare="final"),
    T("subquery_in", "join",
      "SELECT id, cust FROM orders WHERE cust IN (SELECT cid FROM customers WHERE region = 'north')",
      ["id INT", "cust INT"], tables=BOTH, compare="final"),
    T("subquery_not_in_nulls", "join",
      "SELECT id, qty FROM orders WHERE qty NOT IN (SELECT tier FROM customers)",
      ["id INT", "qty INT"], tables=BOTH, compare="final"),
    T("subquery_scalar", "join",
      "SELECT id, amt FROM orders WHERE qty > (SELECT AVG(tier) FROM customers)",
      ["id INT", "amt DECIMAL(10, 2)"], tables=BOTH, compare="final"),
    T("subquery_scalar_correlated", "join",
      "SELECT o.id, o.amt FROM orders o WHERE o.amt >= (SELECT MAX(p.amt) FROM orders p WHERE p.cust = o.cust)",
      ["id INT", "amt DECIMAL(10, 2)"], compare="final"),
    T("subquery_in_having", "join",
      "SELECT cust, SUM(qty) AS s FROM orders GROUP BY cust HAVING SUM(qty) > (SELECT AVG(tier) * 4 FROM customers)",
      ["cust INT", "s INT"], tables=BOTH, compare="final"),
    T("subquery_exists_unequal", "join",
      "SELECT o.id, o.qty FROM orders o WHERE EXISTS (SELECT 1 FROM customers c WHERE c.cid = o.cust "
      "AND c.tier > o.qty)",
      ["id INT", "qty INT"], tables=BOTH, compare="final"),
    T("subquery_not_in_correlated", "join",
      "SELECT id, cust FROM orders WHERE cust NOT IN (SELECT cid FROM customers WHERE tier = orders.qty)",
      ["id INT", "cust INT"], tables=BOTH, compare="final"),
    T("subquery_exists_uncorrelated", "join",
      "SELECT id, cust FROM orders WHERE EXISTS (SELECT 1 FROM customers WHERE tier > 2)",
      ["id INT", "cust INT"], tables=BOTH, compare="final"),
    T("subquery_in_grouped", "join",
      "SELECT id, cust FROM orders o WHERE cust IN (SELECT cust FROM orders p GROUP BY cust "
      "HAVING COUNT(*) > 2) AND o.qty > 1",
      ["id INT", "cust INT"], compare="final"),
    T("subquery_not_in_two", "join",
      "SELECT id, qty FROM orders WHERE cust IN (SELECT cid FROM customers) AND qty NOT IN "
      "(SELECT tier FROM customers WHERE region = 'north')",
      ["id INT", "qty INT"], tables=BOTH, compare="final"),
    T("set_intersect_all", "union",
      "SELECT cust, qty FROM orders INTERSECT ALL SELECT cid, tier FROM customers",
      ["cust INT", "qty INT"], tables=BOTH, compare="final"),
    T("set_except_all", "union",
      "SELECT cust, qty FROM orders EXCEPT ALL SELECT cid, tier FROM customers",
      ["cust INT", "qty INT"], tables=BOTH, compare="final"),
    T("set_except_all_one_source", "union",
      "SELECT product FROM orders WHERE qty > 1 EXCEPT ALL SELECT product FROM orders WHERE amt > 50",
      ["product STRING"], compare="final"),
    T("set_intersect_all_one_source", "union",
      "SELECT product FROM orders WHERE qty > 1 INTERSECT ALL SELECT product FROM orders WHERE amt > 50",
      ["product STRING"], compare="final"),
    T("grouping_rollup", "aggregate",
      "SELECT cust, product, COUNT(*), SUM(qty), GROUPING(cust), GROUPING_ID(cust, product) FROM orders "
      "GROUP BY ROLLUP (cust, product)",
      ["cust INT", "product STRING", "n BIGINT", "s INT", "g BIGINT", "gi BIGINT"], compare="final"),
    T("grouping_cube", "aggregate",
      "SELECT cust, product, COUNT(*) FROM orders GROUP BY CUBE (cust, product)",
      ["cust INT", "product STRING", "n BIGINT"], compare="final"),
    T("grouping_sets", "aggregate",
      "SELECT cust, product, MAX(amt) FROM orders WHERE qty > 1 GROUP BY GROUPING SETS ((cust), (product), ())",
      ["cust INT", "product STRING", "m DECIMAL(10, 2)"], compare="final"),
    T("set_intersect", "union",
      "SELECT cust FROM orders INTERSECT SELECT cid FROM customers WHERE tier > 0",
      ["cust INT"], tables=BOTH, compare="final"),
    T("set_except", "union",
      "SELECT cid, name FROM customers EXCEPT SELECT cust, product FROM orders",
      ["cid INT", "name STRING"], tables=BOTH, compare="final"),
    T("set_except_one_source", "union",
      "SELECT product, qty FROM orders WHERE qty > 1 EXCEPT SELECT product, qty FROM orders WHERE amt > 50",
      ["product STRING", "qty INT"], compare="final"),
]

# Streaming SQL over time (issue 18) over append-only sources with a watermark.
_APPEND = {"append": True, "watermark": True, "compare": "final"}
TIME = [
    T("interval_inner", "interval",
      "SELECT a.id, b.id, a.cust FROM orders a JOIN orders b ON a.cust = b.cust "
      "AND a.ts BETWEEN b.ts - INTERVAL '5' SECOND AND b.ts",
      ["a INT", "b INT", "cust INT"], **_APPEND),
    T("interval_left", "interval",
      "SELECT a.id, b.id, b.product FROM orders a LEFT JOIN orders b ON a.cust = b.cust "
      "AND a.ts > b.ts AND a.ts < b.ts + INTERVAL '3' SECOND AND a.id <> b.id",
      ["a INT", "b INT", "p STRING"], **_APPEND),
    T("interval_right", "interval",
      "SELECT a.id, b.id FROM orders a RIGHT JOIN orders b ON a.product = b.product "
      "AND b.ts >= a.ts - INTERVAL '2' SECOND AND b.ts <= a.ts + INTERVAL '1' SECOND",
      ["a INT", "b INT"], **_APPEND),
    T("interval_full", "interval",
      "SELECT a.id, b.id, a.qty, b.qty FROM orders a FULL JOIN orders b ON a.product = b.product "
      "AND a.ts >= b.ts - INTERVAL '2' SECOND AND a.ts <= b.ts + INTERVAL '2' SECOND AND a.qty > b.qty",
      ["a INT", "b INT", "qa INT", "qb INT"], **_APPEND),
    T("interval_where", "interval",
      "SELECT a.id, b.id FROM orders a, orders b WHERE a.cust = b.cust "
      "AND a.ts BETWEEN b.ts AND b.ts + INTERVAL '4' SECOND",
      ["a INT", "b INT"], **_APPEND),
    T("over_rows", "over",
      "SELECT id, cust, COUNT(*) OVER w, SUM(amt) OVER w, MIN(qty) OVER w FROM orders "
      "WINDOW w AS (PARTITION BY cust ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
      ["id INT", "cust INT", "n BIGINT", "s DECIMAL(38, 2)", "mq INT"], **_APPEND),
    T("over_range", "over",
      "SELECT id, product, COUNT(*) OVER (PARTITION BY product ORDER BY ts RANGE BETWEEN "
      "INTERVAL '5' SECOND PRECEDING AND CURRENT ROW), MAX(amt) OVER (PARTITION BY product "
      "ORDER BY ts RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW) FROM orders",
      ["id INT", "product STRING", "n BIGINT", "m DECIMAL(10, 2)"], **_APPEND),
    T("over_unbounded_rows", "over",
      "SELECT id, SUM(qty) OVER (PARTITION BY cust ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING "
      "AND CURRENT ROW), AVG(qty) OVER (PARTITION BY cust ORDER BY ts ROWS BETWEEN UNBOUNDED "
      "PRECEDING AND CURRENT ROW) FROM orders",
      ["id INT", "s INT", "a INT"], **_APPEND),
    T("over_unbounded_range", "over",
      "SELECT id, COUNT(note) OVER (ORDER BY ts) AS n, MAX(product) OVER (ORDER BY ts), qty * 2 "
      "FROM orders WHERE qty > 1",
      ["id INT", "n BIGINT", "mp STRING", "q INT"], **_APPEND),
    T("session_tvf", "session",
      "SELECT cust, window_start, window_end, COUNT(*), SUM(amt), MAX(product) FROM TABLE(SESSION("
      "TABLE orders PARTITION BY cust, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY cust, window_start, window_end",
      ["cust INT", "ws TIMESTAMP(3)", "we TIMESTAMP(3)", "n BIGINT", "s DECIMAL(38, 2)", "mp STRING"],
      **_APPEND),
    T("session_tvf_named", "session",
      "SELECT product, window_start, window_time, AVG(qty), LISTAGG(note) FROM TABLE(SESSION(DATA => TABLE orders "
      "PARTITION BY product, TIMECOL => DESCRIPTOR(ts), GAP => INTERVAL '5' SECOND)) "
      "GROUP BY product, window_start, window_end, window_time",
      ["product STRING", "ws TIMESTAMP(3)", "wt TIMESTAMP(3)", "a INT", "notes STRING"], **_APPEND),
    T("group_window_session", "session",
      "SELECT cust, SESSION_START(ts, INTERVAL '4' SECOND), SESSION_END(ts, INTERVAL '4' SECOND), COUNT(*), "
      "SESSION_ROWTIME(ts, INTERVAL '4' SECOND) FROM orders GROUP BY cust, SESSION(ts, INTERVAL '4' SECOND)",
      ["cust INT", "ws TIMESTAMP(3)", "we TIMESTAMP(3)", "n BIGINT", "wt TIMESTAMP(3)"], **_APPEND),
    T("group_window_tumble", "session",
      "SELECT product, TUMBLE_START(ts, INTERVAL '10' SECOND), TUMBLE_END(ts, INTERVAL '10' SECOND), SUM(qty), "
      "MIN(amt) FROM orders GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), product",
      ["product STRING", "ws TIMESTAMP(3)", "we TIMESTAMP(3)", "sq INT", "ma DECIMAL(10, 2)"], **_APPEND),
    T("group_window_hop", "session",
      "SELECT HOP_START(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND), HOP_END(ts, INTERVAL '5' SECOND, "
      "INTERVAL '15' SECOND), COUNT(DISTINCT cust), MAX(qty) FROM orders "
      "GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND)",
      ["ws TIMESTAMP(3)", "we TIMESTAMP(3)", "dc BIGINT", "mq INT"], **_APPEND),
    T("window_over_window", "window",
      "SELECT window_start, window_end, MAX(n), SUM(n), COUNT(*) FROM (SELECT cust, window_start, window_end, "
      "COUNT(*) AS n FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
      "GROUP BY cust, window_start, window_end) GROUP BY window_start, window_end",
      ["ws TIMESTAMP(3)", "we TIMESTAMP(3)", "mx BIGINT", "s BIGINT", "c BIGINT"],
      watermark=True, compare="final"),
    T("window_over_window_hop", "window",
      "SELECT starttime, endtime, MAX(n) FROM (SELECT product, window_start AS starttime, window_end AS endtime, "
      "COUNT(*) AS n FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '15' SECOND)) "
      "GROUP BY product, window_start, window_end) GROUP BY starttime, endtime",
      ["ws TIMESTAMP(3)", "we TIMESTAMP(3)", "mx BIGINT"], watermark=True, compare="final"),
    T("window_join_inner", "window",
      "SELECT L.cust, L.window_start, L.n, R.mq FROM (SELECT cust, window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY cust, window_start, window_end) L JOIN (SELECT cust, window_start, window_end, MAX(qty) AS mq FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) WHERE qty > 2 GROUP BY cust, window_start, window_end) R "
      "ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.cust = R.cust",
      ["cust INT", "ws TIMESTAMP(3)", "n BIGINT", "mq INT"], **_APPEND),
    T("window_join_full", "window",
      "SELECT L.cust, R.cust, L.n, R.mq FROM (SELECT cust, window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY cust, window_start, window_end) L FULL JOIN (SELECT cust, window_start, window_end, MAX(qty) AS mq FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) WHERE qty > 2 GROUP BY cust, window_start, window_end) R "
      "ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.cust = R.cust AND L.n > 1",
      ["lc INT", "rc INT", "n BIGINT", "mq INT"], **_APPEND),
    T("window_topn", "window",
      "SELECT window_start, cust, n, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
      "ORDER BY n DESC, cust) AS rn FROM (SELECT cust, window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE("
      "TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY cust, window_start, window_end)) WHERE rn <= 2",
      ["ws TIMESTAMP(3)", "cust INT", "n BIGINT", "rn BIGINT"], **_APPEND),
    T("window_topn_partitioned", "window",
      "SELECT window_end, product, cust, s FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, "
      "product ORDER BY s DESC, cust) AS rn FROM (SELECT product, cust, window_start, window_end, SUM(qty) AS s "
      "FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) "
      "GROUP BY product, cust, window_start, window_end)) WHERE rn = 1",
      ["we TIMESTAMP(3)", "product STRING", "cust INT", "s INT"], **_APPEND),
    T("window_topn_tvf", "window",
      "SELECT window_start, window_end, id, amt, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, "
      "window_end ORDER BY amt DESC, id) AS rn FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))) "
      "WHERE rn <= 3",
      ["ws TIMESTAMP(3)", "we TIMESTAMP(3)", "id INT", "amt DECIMAL(10, 2)", "rn BIGINT"], **_APPEND),
    T("window_topn_tvf_hop", "window",
      "SELECT window_end, cust, id, qty FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, cust "
      "ORDER BY qty DESC, id) AS rn FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, "
      "INTERVAL '10' SECOND))) WHERE rn = 1",
      ["we TIMESTAMP(3)", "cust INT", "id INT", "qty INT"], **_APPEND),
    T("temporal_join_inner", "temporal",
      "SELECT o.id, o.cust, r.rate, r.ts FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.cust = r.cur",
      ["id INT", "cust INT", "rate INT", "rts TIMESTAMP(3)"], tables=("orders", "rates"), **_APPEND),
    T("temporal_join_left", "temporal",
      "SELECT o.id, r.rate, o.qty * r.rate FROM orders o LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r "
      "ON o.cust = r.cur AND r.rate > 2",
      ["id INT", "rate INT", "total INT"], tables=("orders", "rates"), **_APPEND),
    T("error_over_cdc", "error",
      "SELECT id, COUNT(*) OVER (PARTITION BY cust ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) "
      "FROM orders", ["id INT", "n BIGINT"], watermark=True, compare="plan", seeds=2),
    T("error_interval_cdc", "error",
      "SELECT a.id, b.id FROM orders a JOIN orders b ON a.cust = b.cust "
      "AND a.ts BETWEEN b.ts - INTERVAL '5' SECOND AND b.ts",
      ["a INT", "b INT"], watermark=True, compare="plan", seeds=2),
]
# fmt: on


# Issue 18, second round: global SESSION windows (no PARTITION BY, no other keys) and window
# deduplication (ROW_NUMBER over a window TVF ordered by the event time alone, rank 1), with
# timestamps tied to whole seconds so equal times decide which row is kept.
# fmt: off
TIME2 = [
    T("session_global_tvf", "session",
      "SELECT window_start, window_end, COUNT(*), SUM(amt), MAX(product) FROM TABLE(SESSION(TABLE orders, "
      "DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY window_start, window_end",
      ["ws TIMESTAMP(3)", "we TIMESTAMP(3)", "n BIGINT", "s DECIMAL(38, 2)", "mp STRING"], **_APPEND),
    T("session_global_group_window", "session",
      "SELECT SESSION_START(ts, INTERVAL '2' SECOND), SESSION_END(ts, INTERVAL '2' SECOND), COUNT(*), "
      "MIN(qty), SESSION_ROWTIME(ts, INTERVAL '2' SECOND) FROM orders GROUP BY SESSION(ts, INTERVAL '2' SECOND)",
      ["ws TIMESTAMP(3)", "we TIMESTAMP(3)", "n BIGINT", "mq INT", "wt TIMESTAMP(3)"], **_APPEND),
    T("window_dedup_first", "window",
      "SELECT window_start, window_end, id, ts, amt FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
      "window_start, window_end ORDER BY ts ASC) AS rn FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), "
      "INTERVAL '10' SECOND))) WHERE rn <= 1",
      ["ws TIMESTAMP(3)", "we TIMESTAMP(3)", "id INT", "ts TIMESTAMP(3)", "amt DECIMAL(10, 2)"],
      tie_ms=2000, **_APPEND),
    T("window_dedup_last", "window",
      "SELECT window_end, cust, id, qty FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, "
      "window_end, cust ORDER BY ts DESC) AS rn FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), "
      "INTERVAL '5' SECOND, INTERVAL '10' SECOND))) WHERE rn = 1",
      ["we TIMESTAMP(3)", "cust INT", "id INT", "qty INT"], tie_ms=2000, **_APPEND),
    T("window_dedup_last_rn", "window",
      "SELECT window_start, product, id, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, "
      "window_end, product ORDER BY ts DESC) AS rn FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), "
      "INTERVAL '5' SECOND, INTERVAL '15' SECOND))) WHERE rn <= 1",
      ["ws TIMESTAMP(3)", "product STRING", "id INT", "rn BIGINT"], tie_ms=1000, **_APPEND),
    T("window_dedup_first_partitioned", "window",
      "SELECT window_start, cust, id, note FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY cust, "
      "window_start, window_end ORDER BY ts) AS rn FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), "
      "INTERVAL '6' SECOND))) WHERE rn = 1",
      ["ws TIMESTAMP(3)", "cust INT", "id INT", "note STRING"], tie_ms=3000, **_APPEND),
    # processing-time group windows (Nexmark q12's shape): plans only, the output follows the clock
    T("proctime_group_window_tumble", "window",
      "SELECT B.cust, COUNT(*) AS n, TUMBLE_START(B.p_time, INTERVAL '10' SECOND) AS starttime, "
      "TUMBLE_END(B.p_time, INTERVAL '10' SECOND) AS endtime FROM (SELECT *, PROCTIME() AS p_time FROM orders) B "
      "GROUP BY B.cust, TUMBLE(B.p_time, INTERVAL '10' SECOND)",
      ["cust INT", "n BIGINT", "ws TIMESTAMP(3)", "we TIMESTAMP(3)"], append=True, compare="plan", seeds=2),
    T("proctime_group_window_hop", "window",
      "SELECT HOP_START(p, INTERVAL '5' SECOND, INTERVAL '20' SECOND), HOP_PROCTIME(p, INTERVAL '5' SECOND, "
      "INTERVAL '20' SECOND), SUM(qty), MAX(product) FROM (SELECT qty, product, PROCTIME() AS p FROM orders) "
      "GROUP BY HOP(p, INTERVAL '5' SECOND, INTERVAL '20' SECOND)",
      ["ws TIMESTAMP(3)", "pt TIMESTAMP_LTZ(3)", "sq INT", "mp STRING"], append=True, watermark=True,
      compare="plan", seeds=2),
    # a window TVF's rows as rows (Flink's WindowTableFunction): projections, filters on the
    # window columns, SESSION rows grouped by other columns, window joins directly over TVFs
    T("window_tvf_session_keys", "session",
      "SELECT cust, window_start, window_end, COUNT(*), SUM(qty) FROM TABLE(SESSION(TABLE orders, DESCRIPTOR(ts), "
      "INTERVAL '3' SECOND)) GROUP BY cust, window_start, window_end",
      ["cust INT", "ws TIMESTAMP(3)", "we TIMESTAMP(3)", "n BIGINT", "s INT"], **_APPEND),
    T("window_tvf_session_keys_where", "session",
      "SELECT product, window_start, MAX(amt) FROM TABLE(SESSION(TABLE orders, DESCRIPTOR(ts), "
      "INTERVAL '2' SECOND)) WHERE qty > 1 GROUP BY product, window_start",
      ["product STRING", "ws TIMESTAMP(3)", "ma DECIMAL(10, 2)"], **_APPEND),
    T("window_tvf_session_rows", "session",
      "SELECT id, cust, window_start, window_end, window_time FROM TABLE(SESSION(TABLE orders, DESCRIPTOR(ts), "
      "INTERVAL '2' SECOND))",
      ["id INT", "cust INT", "ws TIMESTAMP(3)", "we TIMESTAMP(3)", "wt TIMESTAMP(3)"], **_APPEND),
    T("window_tvf_session_partitioned_rows", "session",
      "SELECT id, product, window_start, window_end FROM TABLE(SESSION(TABLE orders PARTITION BY product, "
      "DESCRIPTOR(ts), INTERVAL '4' SECOND)) WHERE qty > 1",
      ["id INT", "product STRING", "ws TIMESTAMP(3)", "we TIMESTAMP(3)"], **_APPEND),
    T("window_tvf_hop_rows", "window",
      "SELECT id, window_start, window_end, window_time, amt FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), "
      "INTERVAL '5' SECOND, INTERVAL '10' SECOND)) WHERE qty > 1",
      ["id INT", "ws TIMESTAMP(3)", "we TIMESTAMP(3)", "wt TIMESTAMP(3)", "amt DECIMAL(10, 2)"], **_APPEND),
    T("window_tvf_filter_bounds", "window",
      "SELECT id, window_end FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, "
      "INTERVAL '15' SECOND)) WHERE window_end > TIMESTAMP '2024-01-01 00:00:10' AND cust > 1",
      ["id INT", "we TIMESTAMP(3)"], **_APPEND),
    T("window_join_tvf_inner", "window",
      "SELECT L.id, R.id, L.window_start FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) L "
      "JOIN TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) R ON L.window_start = R.window_start "
      "AND L.window_end = R.window_end AND L.cust = R.cust AND L.id < R.id",
      ["a INT", "b INT", "ws TIMESTAMP(3)"], **_APPEND),
    T("window_join_tvf_left", "window",
      "SELECT L.id, R.id, R.product FROM (SELECT * FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, "
      "INTERVAL '10' SECOND))) L LEFT JOIN (SELECT * FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, "
      "INTERVAL '10' SECOND)) WHERE qty > 2) R ON L.window_start = R.window_start AND L.window_end = R.window_end "
      "AND L.product = R.product",
      ["a INT", "b INT", "p STRING"], **_APPEND),
    # window semi / anti joins: IN / EXISTS / NOT IN / NOT EXISTS subqueries over window TVFs
    # correlated on both window bounds (Flink's WindowJoin with LeftSemiJoin / LeftAntiJoin)
    T("window_semi_join_in", "window",
      "SELECT L.id, L.cust, L.window_start FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) L "
      "WHERE L.cust IN (SELECT R.cust FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) R "
      "WHERE L.window_start = R.window_start AND L.window_end = R.window_end AND R.qty > 2)",
      ["id INT", "cust INT", "ws TIMESTAMP(3)"], **_APPEND),
    T("window_semi_join_exists", "window",
      "SELECT L.id, L.product, L.window_end FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, "
      "INTERVAL '10' SECOND)) L WHERE EXISTS (SELECT * FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), "
      "INTERVAL '5' SECOND, INTERVAL '10' SECOND)) R WHERE L.window_start = R.window_start "
      "AND L.window_end = R.window_end AND L.cust = R.cust AND R.id <> L.id)",
      ["id INT", "p STRING", "we TIMESTAMP(3)"], **_APPEND),
    T("window_anti_join_not_in", "window",
      "SELECT L.id, L.cust, L.window_start FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) L "
      "WHERE L.cust NOT IN (SELECT R.cust FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) R "
      "WHERE L.window_start = R.window_start AND L.window_end = R.window_end AND R.qty > 3)",
      ["id INT", "cust INT", "ws TIMESTAMP(3)"], **_APPEND),
    T("window_anti_join_not_exists", "window",
      "SELECT L.id, L.amt FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) L "
      "WHERE L.qty > 1 AND NOT EXISTS (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) R "
      "WHERE L.window_start = R.window_start AND L.window_end = R.window_end AND L.product = R.product "
      "AND R.amt > L.amt)",
      ["id INT", "amt DECIMAL(10, 2)"], **_APPEND),
    T("window_semi_join_over_window_agg", "window",
      "SELECT L.id, L.cust FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) L "
      "WHERE L.cust IN (SELECT R.cust FROM (SELECT cust, window_start, window_end, COUNT(*) AS n FROM "
      "TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY cust, window_start, window_end) R "
      "WHERE L.window_start = R.window_start AND L.window_end = R.window_end AND R.n > 1)",
      ["id INT", "cust INT"], **_APPEND),
]

# Late data (issue 18 item 5): a watermark after every row, so the rows the histories put up to
# 1.5 s behind the latest (with a 1 s watermark delay) are late where a window or timer has
# passed them; single-input operators only (a join's two scans interleave as Flink schedules).
_LATE = {"append": True, "watermark": True, "compare": "final", "late": True, "scale": 3}
LATE = [
    T("late_tumble", "late",
      "SELECT window_start, COUNT(*), LISTAGG(CAST(id AS STRING)) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), "
      "INTERVAL '1' SECOND)) GROUP BY window_start, window_end",
      ["ws TIMESTAMP(3)", "n BIGINT", "ids STRING"], **_LATE),
    T("late_hop", "late",
      "SELECT cust, window_end, SUM(qty) FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' SECOND, "
      "INTERVAL '2' SECOND)) GROUP BY cust, window_start, window_end",
      ["cust INT", "we TIMESTAMP(3)", "s INT"], **_LATE),
    T("late_cumulate", "late",
      "SELECT window_end, COUNT(*), MAX(id) FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' SECOND, "
      "INTERVAL '3' SECOND)) GROUP BY window_start, window_end",
      ["we TIMESTAMP(3)", "n BIGINT", "m INT"], **_LATE),
    T("late_group_window", "late",
      "SELECT TUMBLE_START(ts, INTERVAL '1' SECOND), COUNT(*), MIN(id) FROM orders GROUP BY TUMBLE(ts, INTERVAL '1' SECOND)",
      ["ws TIMESTAMP(3)", "n BIGINT", "m INT"], **_LATE),
    T("late_session", "late",
      "SELECT cust, window_start, window_end, COUNT(*) FROM TABLE(SESSION(TABLE orders PARTITION BY cust, "
      "DESCRIPTOR(ts), INTERVAL '0.5' SECOND)) GROUP BY cust, window_start, window_end",
      ["cust INT", "ws TIMESTAMP(3)", "we TIMESTAMP(3)", "n BIGINT"], **_LATE),
    T("late_session_rows", "late",
      "SELECT id, window_start, window_end FROM TABLE(SESSION(TABLE orders, DESCRIPTOR(ts), INTERVAL '0.5' SECOND))",
      ["id INT", "ws TIMESTAMP(3)", "we TIMESTAMP(3)"], **_LATE),
    T("late_window_dedup", "late",
      "SELECT window_start, id FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
      "ORDER BY ts DESC) AS rn FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' SECOND))) WHERE rn = 1",
      ["ws TIMESTAMP(3)", "id INT"], **_LATE),
    T("late_window_topn", "late",
      "SELECT window_start, id, qty FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
      "ORDER BY qty DESC, id) AS rn FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' SECOND))) WHERE rn <= 2",
      ["ws TIMESTAMP(3)", "id INT", "qty INT"], **_LATE),
    T("late_over", "late",
      "SELECT id, COUNT(*) OVER (PARTITION BY product ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM orders",
      ["id INT", "n BIGINT"], **_LATE),
    T("late_window_tvf_rows", "late",
      "SELECT id, window_start FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' SECOND))",
      ["id INT", "ws TIMESTAMP(3)"], **_LATE),
]
# fmt: on


# Nested types built from the orders columns: ROW/ARRAY/MAP constructors, field access through a
# subquery's ROW column, [] (1-based), CARDINALITY and ELEMENT, grouping by a ROW field.
_ROW = "CAST(ROW(product, qty) AS ROW<p STRING, q INT>)"
# fmt: off
NESTED = [
    T("nested_row_fields", "calc",
      f"SELECT id, t.r.p, t.r.q * 2, t.r FROM (SELECT id, {_ROW} AS r FROM orders) AS t "
      "WHERE t.r.q > 1",
      ["id INT", "p STRING", "q2 INT", "r ROW<p STRING, q INT>"]),
    T("nested_array_map", "calc",
      "SELECT id, ARRAY[qty, cust], ARRAY[qty, cust][2], CARDINALITY(ARRAY[qty, cust, id]), "
      "MAP[product, qty], MAP[product, qty][product], ELEMENT(ARRAY[amt]), (id, note) FROM orders",
      ["id INT", "a ARRAY<INT>", "a2 INT", "n INT", "m MAP<STRING, INT>", "mv INT",
       "e DECIMAL(10, 2)", "r ROW<a INT, b STRING>"]),
    T("nested_unnest_ordinality", "calc",
      "SELECT id, e, o FROM orders CROSS JOIN UNNEST(ARRAY[qty, cust, id]) WITH ORDINALITY AS t(e, o) "
      "WHERE o <> 2",
      ["id INT", "e INT", "o INT"]),
    T("nested_unnest_map_ordinality", "calc",
      "SELECT id, k, v, n FROM orders CROSS JOIN UNNEST(MAP[product, qty]) WITH ORDINALITY AS t(k, v, n)",
      ["id INT", "k STRING", "v INT", "n INT"]),
    T("nested_group_by_array", "aggregate",
      "SELECT ARRAY[cust, qty], COUNT(*), SUM(amt) FROM orders GROUP BY ARRAY[cust, qty]",
      ["a ARRAY<INT>", "n BIGINT", "s DECIMAL(38, 2)"]),
    T("nested_distinct_row_of_array", "aggregate",
      "SELECT DISTINCT product, ARRAY[qty] FROM orders WHERE qty > 1",
      ["p STRING", "a ARRAY<INT>"], compare="final"),
    T("nested_group_by_field", "aggregate",
      f"SELECT t.r.p, COUNT(*), SUM(t.r.q) FROM (SELECT {_ROW} AS r FROM orders) AS t "
      "GROUP BY t.r.p",
      ["p STRING", "n BIGINT", "q INT"], pk=("p",)),
]
# fmt: on


def _with_source_pk(t: Template) -> Template:
    return replace(t, name=f"{t.name}_pk", source_pk=True, seeds=min(t.seeds, 6))


# The join and aggregate templates again over sources with a primary key (a Debezium table
# always has one), which the delta rewrites need (conf_delta): up to 6 seeds each.
SOURCE_PK = [
    _with_source_pk(t)
    for t in AGG + JOIN + SINKS + MORE + LONG + LTZ + JOIN_PUSH
    if t.category in ("aggregate", "join") or t.name in ("upsert_agg_key", "upsert_join")
] + [_with_source_pk(t) for t in SQL17 if t.name.startswith("subquery_")]  # semi / anti joins

TEMPLATES: tuple[Template, ...] = tuple(
    CALC
    + AGG
    + JOIN
    + UNION
    + RANK
    + WINDOW
    + SINKS
    + ERRORS
    + MORE
    + LONG
    + LTZ
    + JOIN_PUSH
    + SORT_LIMIT
    + SQL17
    + NESTED
    + SOURCE_PK
    + TIES
    + TIME
    + TIME2
    + LATE
)  # fmt: skip
