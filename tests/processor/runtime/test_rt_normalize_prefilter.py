"""The pre-filter of a source taking before-images from state (normalize_source.py):
decoding with it, normalizing and running the Calc gives batch by batch what decoding
every image whole, normalizing and running the Calc gives, over random Debezium streams
(creates, snapshot reads, updates with and without before-images, key moves, deletes of
unknown keys, TOAST placeholders, truncates) on real LMDB, with restarts from a
checkpoint in between."""

from __future__ import annotations

import json
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from deltaflow.formats.changelog import DELETE, INSERT, UPDATE_AFTER, RawBatch
from deltaflow.formats.debezium_json import DebeziumJsonDecoder
from deltaflow.formats.prefilter import Check, PreFilter, Rejected
from deltaflow.formats.spec import FormatSpec
from deltaflow.processor.exprs.compile import compile_calc
from deltaflow.processor.plan import Calc, TableSourceScan
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.planner.prefilter import state_prefilters
from deltaflow.processor.runtime.normalize import PLACEHOLDER, Normalizer
from deltaflow.processor.runtime.normalize_source import NormalizingDecoder, TableStore
from deltaflow.state.backend import StateBackend

ORDERS = """
CREATE TABLE orders (
  order_id BIGINT, merchant_id INT, amount DECIMAL(10, 2), status STRING, note STRING,
  PRIMARY KEY (order_id) NOT ENFORCED
) WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = 'b:1',
        'format' = 'debezium-json');
CREATE TABLE out1 (k BIGINT, v INT, a DECIMAL(10, 2), n STRING, PRIMARY KEY (k) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = 'o', 'properties.bootstrap.servers' = 'b:1',
      'key.format' = 'json', 'value.format' = 'json');
"""
SELECT = "INSERT INTO out1 SELECT order_id, merchant_id, amount, note FROM orders WHERE "
WHERES = [
    "status = 'PAID'",
    "status IN ('PAID', 'NEW') AND merchant_id >= 2",
    "merchant_id <> 3 AND status IS NOT NULL AND note LIKE 'n%'",
    "note IS NULL AND merchant_id BETWEEN 1 AND 3 AND amount > 1.00",
]


def _nodes(p):
    seen, stack, out = set(), list(p.sinks), []
    while stack:
        node = stack.pop()
        if node.node_id not in seen:
            seen.add(node.node_id)
            out.append(node)
            stack.extend(node.inputs)
    return out


def planned(where: str):
    p = plan_job(ORDERS + SELECT + where + ";").plan
    calc = next(n for n in _nodes(p) if isinstance(n, Calc))
    scan = calc.inputs[0]
    assert isinstance(scan, TableSourceScan) and scan.normalize
    return p, calc, scan


def test_state_mode_gets_its_pre_filter_outside_the_plan() -> None:
    p, _, scan = planned("status = 'PAID'")
    assert scan.prefilter is None  # the plan, its EXPLAIN and fingerprint are unchanged
    assert state_prefilters(p.sinks) == {scan.node_id: PreFilter((Check("status", "=", "PAID"),))}


class Side:
    """One source's decoder and normalizer over an LMDB environment, with or without the
    pre-filter."""

    def __init__(self, path, scan: TableSourceScan, prefilter: PreFilter | None) -> None:
        self.backend = StateBackend(path)
        physical = [(f.name, f.type) for f in scan.physical]
        demanded = None if scan.project is None else frozenset(scan.project)
        inner = DebeziumJsonDecoder(FormatSpec(physical, demanded=demanded, on_error="skip"))
        inner.accept_partial_images(list(scan.primary_key), prefilter)
        key_at = [0]
        store = TableStore(self.backend, "n:last", key_at, [t for _, t in physical])
        norm = Normalizer(store, key_at)
        deleted = self.backend.table("n:deleted")
        self.decoder = NormalizingDecoder(inner, norm, "skip", deleted, "normalized")

    def decode(self, raw: RawBatch):
        return self.decoder.decode(raw)


def image(i: int, m: int | None, s: str | None, note: str | None, amount: object) -> dict:
    return {"order_id": i, "merchant_id": m, "amount": amount, "status": s, "note": note}


keys = st.integers(1, 3)
key_only = st.builds(lambda i: image(i, None, None, None, None), keys)


def changes(placeholders: bool):
    """One change; with ``placeholders`` its character columns may be TOAST placeholders
    (a batch with one is decoded without the pre-filter, so most batches hold none)."""
    more = [PLACEHOLDER] if placeholders else []
    statuses = st.one_of(st.none(), st.sampled_from(["PAID", "NEW", "SHIPPED", *more]))
    notes = st.one_of(st.none(), st.sampled_from(["n1", "x", *more]))
    images = st.builds(
        image, keys, st.one_of(st.none(), st.integers(0, 4)), statuses, notes,
        st.sampled_from([None, "1.25", 0.995, -2, "7"]),
    )  # fmt: skip
    create = st.builds(
        lambda op, a: {"op": op, "before": None, "after": a}, st.sampled_from("cr"), images
    )
    # REPLICA IDENTITY DEFAULT (no before-image), the key alone (a key move when it differs)
    update = st.builds(
        lambda b, a: {"op": "u", "before": b, "after": a}, st.none() | key_only, images
    )
    delete = st.builds(lambda b: {"op": "d", "before": b, "after": None}, key_only)
    truncate = st.just({"op": "t", "before": None, "after": None})
    kinds = [create, update, update, create, update, delete] * 3 + [truncate]  # truncates: rare
    return st.sampled_from(kinds).flatmap(lambda kind: kind)


batches = st.booleans().flatmap(lambda ph: st.lists(changes(ph), min_size=1, max_size=10))
# a stream: batches of changes, each followed by a restart from a checkpoint or not
streams = st.lists(st.tuples(batches, st.booleans()), max_size=8)


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(WHERES), streams)
def test_state_mode_pre_filter_equals_the_unfiltered_path(tmp_path_factory, where, stream) -> None:
    p, calc, scan = planned(where)
    pre = state_prefilters(p.sinks).get(scan.node_id)
    assert pre is not None
    fn = compile_calc(list(calc.projection), calc.condition)
    root = tmp_path_factory.mktemp("s")
    sides = [Side(root / "full", scan, None), Side(root / "pre", scan, pre)]
    offset = 0
    try:
        for batch, restart in stream:
            values = [json.dumps(c).encode() for c in batch]
            raw = RawBatch("orders", 0, list(range(offset, offset + len(values))), values)
            offset += len(values)
            full, filtered = (side.decode(raw) for side in sides)
            assert fn(full.kinds, full.rows) == fn(filtered.kinds, filtered.rows)
            assert not any(type(r) is Rejected for r in filtered.rows)
            for side in sides:
                side.backend.commit()
            if restart:
                for side in sides:
                    side.backend.close()
                sides = [Side(root / "full", scan, None), Side(root / "pre", scan, pre)]
    finally:
        for side in sides:
            side.backend.close()


def test_a_key_outside_the_filter_is_stored_and_never_emitted(tmp_path) -> None:
    """A key that never passed gives nothing downstream, but its later update into the
    filter is an update (-U of nothing that passed, +U), its delete is no unknown key, and
    a TOAST placeholder coming back into the filter takes the stored character column."""
    p, calc, scan = planned("status = 'PAID'")
    side = Side(tmp_path / "s", scan, state_prefilters(p.sinks)[scan.node_id])
    dec = side.decoder

    def run(*events: dict) -> list[tuple[int, tuple]]:
        values = [json.dumps(e).encode() for e in events]
        out = dec.decode(RawBatch("orders", 0, list(range(len(values))), values))
        return list(zip(out.kinds, out.rows, strict=True))

    long = "a long TOASTed note"
    assert run({"op": "c", "before": None, "after": image(1, 2, "NEW", long, "3.5")}) == []
    assert dec.withheld == 1 and dec.filtered == 1
    stored = dec.normalizer.store.rows([1])[1]
    assert type(stored) is Rejected and stored == (1, 2, None, "NEW", long)
    # the placeholder batch is decoded whole; the note comes from the stored row
    got = run({"op": "u", "before": None, "after": image(1, 2, "PAID", PLACEHOLDER, "4")})
    assert got == [(UPDATE_AFTER, (1, 2, Decimal("4.00"), "PAID", long))]  # -U(Rejected) left out
    got = run({"op": "u", "before": None, "after": image(1, 2, "SHIPPED", "n", "5")})
    assert [k for k, _ in got] == [1]  # -U of the row that passed, the +U left out
    assert got[0][1] == (1, 2, Decimal("4.00"), "PAID", long)
    assert run({"op": "d", "before": image(1, None, None, None, None), "after": None}) == []
    assert dec.unknown == 0  # the key was known
    assert run({"op": "c", "before": None, "after": image(2, 1, "PAID", "x", "1")}) == [
        (INSERT, (2, 1, Decimal("1.00"), "PAID", "x"))
    ]
    assert run({"op": "t", "before": None, "after": None}) == [
        (DELETE, (2, 1, Decimal("1.00"), "PAID", "x"))
    ]
    side.backend.close()
