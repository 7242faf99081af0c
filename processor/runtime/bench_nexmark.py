"""Nexmark-shaped operator micro benchmarks: ``python -m deltaflow.processor.runtime.bench_nexmark``.

- **q16 aggregate**: Nexmark q16's GroupAggregate (per channel and day: MAX of the
  minute, COUNT(*) with and without FILTER, COUNT(DISTINCT bidder) and
  COUNT(DISTINCT auction) each with the same three FILTERs; 13 aggregates) over
  100,000 appended bids on 4 channels and 2 days, in batches of 1,000, real LMDB.
- **window aggregate**: a TUMBLE of 10 s per auction with MAX(price) and
  COUNT(DISTINCT bidder) (q7's and q5's shapes) over the same bids at 1,000 per second
  of event time, with a watermark after every batch (so windows fire as time passes).
- **q10 projection**: a Calc of ``DATE_FORMAT(ts, 'yyyy-MM-dd')`` and
  ``DATE_FORMAT(ts, 'HH:mm')`` over 100,000 TIMESTAMP(3) values spread over two days.

Figures are rows per second of this process's CPU time, best of 3, so that other work
on a shared machine skews them less.
"""

from __future__ import annotations

import datetime as dt
import random
import sys
import tempfile
import time
from pathlib import Path

from deltaflow.formats.changelog import Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.exprs.compile import EvalContext, compile_calc
from deltaflow.processor.exprs.functions import infer_call, literal
from deltaflow.processor.exprs.nodes import Expr, InputRef
from deltaflow.processor.plan import (
    AggCall,
    Field,
    GroupAggregate,
    TableSourceScan,
    WindowAggregate,
    WindowSpec,
)
from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.processor.runtime.bench import _drive
from deltaflow.processor.runtime.group_agg import GroupAggOperator
from deltaflow.processor.runtime.window import WindowAggOperator
from deltaflow.state.backend import StateBackend

_T = parse_type
BIDS = (
    Field("channel", _T("STRING")),
    Field("day", _T("STRING")),
    Field("minute", _T("STRING")),
    Field("price", _T("BIGINT")),
    Field("bidder", _T("BIGINT")),
    Field("auction", _T("BIGINT")),
    Field("rank1", _T("BOOLEAN")),
    Field("rank2", _T("BOOLEAN")),
    Field("rank3", _T("BOOLEAN")),
)


def bids(n: int, seed: int = 16) -> Batch:
    """``n`` appended bids, the columns q16's Calc gives its aggregate (filters evaluated)."""
    rnd = random.Random(seed)
    out = Batch()
    for _ in range(n):
        price = rnd.randrange(20_000_000)
        minute = rnd.randrange(1440)
        out.append(
            0,
            (
                rnd.choice(("apple", "google", "facebook", "baidu")),
                f"2015-07-1{rnd.randrange(5, 7)}",
                f"{minute // 60:02d}:{minute % 60:02d}",
                price,
                rnd.randrange(10_000),
                rnd.randrange(1_000),
                price < 10_000,
                10_000 <= price < 1_000_000,
                price >= 1_000_000,
            ),
        )
    return out


def q16_node() -> GroupAggregate:
    bigint = _T("BIGINT")
    aggs = [AggCall("MAX", (2,), _T("STRING"), "minute"), AggCall("COUNT", (), bigint, "n")]
    aggs += [AggCall("COUNT", (), bigint, f"n{f}", filter_arg=f) for f in (6, 7, 8)]
    for column in (4, 5):
        aggs.append(AggCall("COUNT", (column,), bigint, f"d{column}", distinct=True))
        aggs += [
            AggCall("COUNT", (column,), bigint, f"d{column}_{f}", distinct=True, filter_arg=f)
            for f in (6, 7, 8)
        ]
    scan = TableSourceScan(
        node_id=1, fields=BIDS, changelog_mode=frozenset({0}), table="bid", options={},
        physical=BIDS,
    )  # fmt: skip
    out = (BIDS[0], BIDS[1], *(Field(a.name, a.type) for a in aggs))
    return GroupAggregate(
        node_id=2, inputs=(scan,), fields=out, changelog_mode=frozenset({0, 1, 2, 3}),
        group_keys=(0, 1), aggs=tuple(aggs),
    )  # fmt: skip


def bench_q16(path: Path, data: Batch) -> tuple[float, int]:
    with StateBackend(path) as backend:
        op = GroupAggOperator(q16_node(), backend, RuntimeContext())
        return _drive(lambda b, _: op.process(b), data, backend)


def bench_window(path: Path, data: Batch) -> float:
    """Rows per CPU s of the window aggregate (see the module docstring)."""
    start = dt.datetime(2015, 7, 15)
    fields = (BIDS[5], BIDS[3], BIDS[4], Field("ts", _T("TIMESTAMP(3)")))
    rows = [
        (r[5], r[3], r[4], start + dt.timedelta(milliseconds=i)) for i, r in enumerate(data.rows)
    ]
    scan = TableSourceScan(
        node_id=1, fields=fields, changelog_mode=frozenset({0}), table="bid", options={},
        physical=fields,
    )  # fmt: skip
    aggs = (
        AggCall("MAX", (1,), _T("BIGINT"), "top"),
        AggCall("COUNT", (2,), _T("BIGINT"), "bidders", distinct=True),
    )
    stamp = Field("w", _T("TIMESTAMP(3)"))
    node = WindowAggregate(
        node_id=2, inputs=(scan,), fields=(fields[0], *(Field(a.name, a.type) for a in aggs),
        stamp, stamp, stamp), changelog_mode=frozenset({0}), group_keys=(0,), aggs=aggs,
        window=WindowSpec("TUMBLE", 3, 10_000),
    )  # fmt: skip
    epoch = int((start - dt.datetime(1970, 1, 1)).total_seconds() * 1000)
    with StateBackend(path) as backend:
        op = WindowAggOperator(node, backend, RuntimeContext())
        begin = time.process_time()
        for i in range(0, len(rows), 1000):
            op.process(Batch([0] * len(rows[i : i + 1000]), rows[i : i + 1000]))
            op.on_watermark(epoch + i + 999)
            if (i + 1000) % 10_000 == 0:
                backend.commit({"offset": i})
        return len(rows) / (time.process_time() - begin)


def bench_q10(n: int = 100_000, repeat: int = 3) -> float:
    ts = InputRef(_T("TIMESTAMP(3)"), 0)
    string = _T("STRING")
    projection: list[Expr] = [
        infer_call("DATE_FORMAT", [ts, literal("yyyy-MM-dd", string)]),
        infer_call("DATE_FORMAT", [ts, literal("HH:mm", string)]),
    ]
    start = dt.datetime(2015, 7, 15)
    rnd = random.Random(10)
    rows = [(start + dt.timedelta(milliseconds=rnd.randrange(172_800_000)),) for _ in range(n)]
    fn = compile_calc(projection, None, EvalContext())
    kinds = [0] * n
    best = float("inf")
    for _ in range(repeat):
        begin = time.process_time()
        fn(kinds, rows)
        best = min(best, time.process_time() - begin)
    return n / best


def main(runs: int = 3) -> int:
    data = bids(100_000)
    with tempfile.TemporaryDirectory() as tmp:
        q16 = max(bench_q16(Path(tmp) / f"q16-{i}", data) for i in range(runs))
        window = max(bench_window(Path(tmp) / f"w-{i}", data) for i in range(runs))
    print(f"q16 GroupAggregate (13 aggregates, 8 distinct), 100k bids: {q16[0]:,.0f} rows/s")
    print(f"TUMBLE 10 s MAX, COUNT(DISTINCT) per auction, 100k bids:  {window:,.0f} rows/s")
    print(f"q10 two DATE_FORMATs over 100k TIMESTAMP(3):              {bench_q10():,.0f} rows/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
