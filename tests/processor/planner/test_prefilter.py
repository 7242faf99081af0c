"""Filter pushdown into the decoder: which WHERE conjuncts reach a source's format, when
pushdown is refused, and that decoding with them then running the Calc gives what the
Calc alone gives. The tables take before-images from the messages: with before-images from
state (the default with a primary key) the source's normalizer follows every change."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import RawBatch
from deltaflow.formats.debezium_json import DebeziumJsonDecoder
from deltaflow.formats.prefilter import Check, PreFilter
from deltaflow.formats.spec import FormatSpec
from deltaflow.processor.exprs.compile import compile_calc
from deltaflow.processor.job_tables import scans_of
from deltaflow.processor.plan import Calc, TableSourceScan
from deltaflow.processor.planner.api import plan_job


def prefilters(planned) -> dict:
    """Scan node_id -> the pre-filter the physical rules recorded on it."""
    return {s.node_id: s.prefilter for s in scans_of(planned) if s.prefilter is not None}


def demanded(scan: TableSourceScan) -> frozenset | None:
    return None if scan.project is None else frozenset(scan.project)


ORDERS = """
CREATE TABLE orders (
  order_id BIGINT, merchant_id INT, amount DECIMAL(10, 2), status STRING, note STRING{extra},
  PRIMARY KEY (order_id) NOT ENFORCED
) WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = 'b:1',
        'format' = 'debezium-json', 'debezium-json.before-image' = 'message');
CREATE TABLE out1 (k BIGINT, v INT, a DECIMAL(10, 2), PRIMARY KEY (k) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = 'o', 'properties.bootstrap.servers' = 'b:1',
      'key.format' = 'json', 'value.format' = 'json');
CREATE TABLE out2 (v INT, c BIGINT, PRIMARY KEY (v) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = 'o2', 'properties.bootstrap.servers' = 'b:1',
      'key.format' = 'json', 'value.format' = 'json');
"""
SELECT = "INSERT INTO out1 SELECT order_id, merchant_id, amount FROM orders WHERE "


def plan(sql: str, extra: str = "", settings_sql: str = ""):
    return plan_job(settings_sql + ORDERS.format(extra=extra) + sql).plan


def pushed(where: str, **kw) -> tuple[Check, ...] | None:
    found = list(prefilters(plan(SELECT + where + ";", **kw)).values())
    assert len(found) <= 1
    return found[0].tests if found else None


def test_the_w1_filter_is_pushed() -> None:
    assert pushed("status = 'PAID'") == (Check("status", "=", "PAID"),)


def test_no_pushdown_under_before_images_from_state() -> None:
    sql = ORDERS.format(extra="").replace(", 'debezium-json.before-image' = 'message'", "", 1)
    planned = plan_job(sql + SELECT + "status = 'PAID';").plan
    assert prefilters(planned) == {}


def test_conjuncts_constants_on_the_left_between_and_in() -> None:
    got = pushed(
        "'PAID' = status AND 3 < merchant_id AND merchant_id BETWEEN 1 AND 9 "
        "AND status IN ('a', NULL, 'b') AND note IS NULL"
    )
    assert got == (
        Check("status", "=", "PAID"),
        Check("merchant_id", ">", 3),
        Check("merchant_id", ">=", 1),
        Check("merchant_id", "<=", 9),
        Check("status", "IN", frozenset({"a", "b"})),
        Check("note", "IS NULL"),
    )


def test_safe_conjuncts_stay_with_the_calc() -> None:
    # OR, LIKE and column comparisons are not pushed but cannot raise: the rest is pushed
    got = pushed("status = 'PAID' AND (merchant_id = 1 OR note LIKE 'x%') AND note <> status")
    assert got == (Check("status", "=", "PAID"),)


@pytest.mark.parametrize(
    "where",
    [
        "status = 'PAID' AND merchant_id / (merchant_id - 1) > 0",  # may divide by zero
        "status = 'PAID' AND CAST(note AS INT) > 1",  # may fail to cast
        "merchant_id NOT IN (1, NULL)",  # never TRUE: nothing to push
        "merchant_id + 1 = 2",  # no plain column
    ],
)
def test_nothing_is_pushed_when_another_conjunct_may_raise_or_none_fits(where: str) -> None:
    assert pushed(where) is None


def test_refused_with_a_watermark() -> None:
    extra = ", ts TIMESTAMP(3), WATERMARK FOR ts AS ts"
    assert pushed("status = 'PAID'", extra=extra) is None


def test_refused_when_unknown_keys_are_checked() -> None:
    on = "SET 'deltaflow.unknown-key-delete' = 'count';\n"
    assert pushed("status = 'PAID'", settings_sql=on) is None


def test_refused_when_the_scan_has_another_consumer() -> None:
    both = (
        "EXECUTE STATEMENT SET BEGIN "
        + SELECT
        + "status = 'PAID'; "
        + "INSERT INTO out2 SELECT merchant_id, COUNT(*) FROM orders GROUP BY merchant_id; END;"
    )
    p = plan(both)
    scans = {n.node_id for n in _nodes(p) if isinstance(n, TableSourceScan)}
    assert len(scans) == 1  # one shared scan: its rows feed the aggregate too
    assert prefilters(p) == {}


def test_a_filter_under_an_aggregate_is_pushed() -> None:
    p = plan(
        "INSERT INTO out2 SELECT merchant_id, COUNT(*) FROM orders "
        "WHERE status = 'PAID' GROUP BY merchant_id;"
    )
    assert list(prefilters(p).values()) == [PreFilter((Check("status", "=", "PAID"),))]


def _nodes(p):
    seen, stack, out = set(), list(p.sinks), []
    while stack:
        node = stack.pop()
        if node.node_id not in seen:
            seen.add(node.node_id)
            out.append(node)
            stack.extend(node.inputs)
    return out


# ---------------------------------------------------------------------------
# exactness: decode with the pre-filter then the Calc == decode then the Calc

WHERES = [
    "status = 'PAID'",
    "status IN ('PAID', 'NEW') AND merchant_id >= 2",
    "merchant_id <> 3 AND status IS NOT NULL AND note LIKE 'n%'",
    "status IS NULL OR merchant_id = 1",  # nothing pushable: the Calc alone
    "note IS NULL AND merchant_id BETWEEN 1 AND 3 AND amount > 1.00",
]


def calc_and_scan(where: str) -> tuple[Calc, TableSourceScan, PreFilter | None, frozenset]:
    p = plan(SELECT + where + ";")
    calc = next(n for n in _nodes(p) if isinstance(n, Calc))
    scan = calc.inputs[0]
    assert isinstance(scan, TableSourceScan)
    return calc, scan, prefilters(p).get(scan.node_id), demanded(scan)


def image(i: int, m: int | None, s: str | None, note: str | None, amount: object) -> dict:
    return {"order_id": i, "merchant_id": m, "amount": amount, "status": s, "note": note}


images = st.builds(
    image,
    st.integers(1, 3),
    st.one_of(st.none(), st.integers(0, 4)),
    st.one_of(st.none(), st.sampled_from(["PAID", "NEW", "SHIPPED"])),
    st.one_of(st.none(), st.sampled_from(["n1", "x"])),
    st.sampled_from([None, "1.25", 0.995, -2, "1e3", 1e20]),  # 1e20: too long, NULL
)
changes = st.one_of(
    st.builds(lambda a: {"op": "c", "before": None, "after": a}, images),
    st.builds(lambda b, a: {"op": "u", "before": b, "after": a}, images, images),
    st.builds(lambda b: {"op": "d", "before": b, "after": None}, images),
)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(WHERES), st.lists(changes, max_size=40))
def test_pushdown_equals_the_unfused_plan(where: str, history: list[dict]) -> None:
    calc, scan, pre, demanded = calc_and_scan(where)
    fn = compile_calc(list(calc.projection), calc.condition)
    physical = [(f.name, f.type) for f in scan.physical]
    values = [json.dumps(c).encode() for c in history]
    raw = RawBatch("orders", 0, list(range(len(values))), values)
    outputs = []
    for prefilter in (None, pre):
        dec = DebeziumJsonDecoder(FormatSpec(physical, demanded=demanded, prefilter=prefilter))
        batch = dec.decode(raw)
        outputs.append(fn(batch.kinds, batch.rows))
    assert outputs[0] == outputs[1]
    assert all(r[2] is None or type(r[2]) is Decimal for r in outputs[1][1])


ITEMS = """
CREATE TABLE items (merchant_id INT, item_name STRING, PRIMARY KEY (merchant_id) NOT ENFORCED)
WITH ('connector' = 'kafka', 'topic' = 'items', 'properties.bootstrap.servers' = 'b:1',
      'format' = 'debezium-json', 'debezium-json.before-image' = 'message');
CREATE TABLE joined (k BIGINT, n STRING, PRIMARY KEY (k) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = 'j', 'properties.bootstrap.servers' = 'b:1',
      'key.format' = 'json', 'value.format' = 'json');
"""
JOIN = (
    "INSERT INTO joined SELECT o.order_id, i.item_name FROM orders AS o "
    "JOIN items AS i ON o.merchant_id = i.merchant_id WHERE o.status = 'PAID';"
)


def test_refused_under_a_delta_join_whose_mirror_reads_the_scan() -> None:
    force = "SET 'table.optimizer.delta-join.strategy' = 'FORCE';\n"
    p = plan(ITEMS + JOIN, settings_sql=force)
    assert any(type(n).__name__ == "DeltaJoin" for n in _nodes(p))
    assert prefilters(p) == {}


def test_pushed_below_a_regular_join() -> None:
    regular = "SET 'table.optimizer.delta-join.strategy' = 'NONE';\n"
    p = plan(ITEMS + JOIN, settings_sql=regular)
    assert list(prefilters(p).values()) == [PreFilter((Check("status", "=", "PAID"),))]
