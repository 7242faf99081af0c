"""``python -m bench.windows``: the window aggregate operator alone, its windows kept per
slice (``processor/runtime/window_slices.py``) against kept per window, side by side.

Rows of ``(key, value, time)`` with times going forward at ``--rate`` rows a second of
event time over ``--keys`` keys, in batches of 5,000, a watermark after each batch
(5 s behind the last time), a commit to LMDB every ``--commit`` batches, then the end of
input. Each shape runs per slice and per window (the same operator with slicing turned
off) in turn, ``--repeat`` times; the fired rows of both are compared. Prints events/s
(rows in over the operator's time: process CPU of the loop) and the peak RSS of the
process.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from deltaflow.formats.changelog import INSERT, Batch
from deltaflow.formats.types import parse_type
from deltaflow.processor.plan import AggCall, Field, TableSourceScan, WindowAggregate, WindowSpec
from deltaflow.processor.runtime import window as window_module
from deltaflow.processor.runtime.base import RuntimeContext, epoch_ms
from deltaflow.processor.runtime.window import WindowAggOperator
from deltaflow.state.backend import StateBackend

BATCH = 5_000
MIN = 60_000
SHAPES = {  # name -> window
    "hop-10s-2s": WindowSpec("HOP", 2, 10_000, slide_ms=2_000),
    "hop-1h-5min": WindowSpec("HOP", 2, 60 * MIN, slide_ms=5 * MIN),
    "cumulate-1h-1min": WindowSpec("CUMULATE", 2, 60 * MIN, step_ms=MIN),
    "cumulate-1d-1h": WindowSpec("CUMULATE", 2, 24 * 60 * MIN, step_ms=60 * MIN),
}


def node(spec: WindowSpec) -> WindowAggregate:
    bigint, stamp = parse_type("BIGINT"), parse_type("TIMESTAMP(3)")
    columns = (Field("k", bigint), Field("v", bigint), Field("ts", stamp))
    scan = TableSourceScan(
        node_id=1, fields=columns, changelog_mode=frozenset({INSERT}), table="t", options={},
        physical=columns,
    )  # fmt: skip
    out = (Field("k", bigint), Field("n", bigint), Field("s", bigint),
           *(Field(c, stamp) for c in ("ws", "we", "wt")))  # fmt: skip
    return WindowAggregate(
        node_id=2, inputs=(scan,), fields=out, changelog_mode=frozenset({INSERT}),
        window=spec, group_keys=(0,),
        aggs=(AggCall("COUNT", (), bigint, "n"), AggCall("SUM", (1,), bigint, "s")),
    )  # fmt: skip


def rows(n: int, keys: int, rate: float, seed: int = 1) -> list[tuple]:
    rnd, start = random.Random(seed), dt.datetime(2024, 1, 1)
    step = 1000.0 / rate
    return [
        (rnd.randrange(keys), rnd.randrange(1000), start + dt.timedelta(milliseconds=int(i * step)))
        for i in range(n)
    ]


def run(spec: WindowSpec, data: list[tuple], sliced: bool, commit: int) -> tuple[float, int, list]:
    """(CPU s, fired rows, the fired rows) of one pass over ``data``."""
    saved = window_module.can_slice
    if not sliced:
        window_module.can_slice = lambda *_: False  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        backend = StateBackend(Path(tmp) / "state")
        try:
            op = WindowAggOperator(node(spec), backend, RuntimeContext())
        finally:
            window_module.can_slice = saved
        assert (op.sliced is not None) == sliced
        fired: list = []
        t0 = time.process_time()
        for i, at in enumerate(range(0, len(data), BATCH)):
            chunk = data[at : at + BATCH]
            op.process(Batch([INSERT] * len(chunk), chunk))
            fired += op.on_watermark(epoch_ms(chunk[-1][2]) - 5_000).rows
            if (i + 1) % commit == 0:
                backend.commit({})
        fired += op.on_watermark(1 << 62).rows
        backend.commit({})
        seconds = time.process_time() - t0
        backend.close()
    return seconds, len(fired), fired


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.windows", description=__doc__)
    p.add_argument("--rows", type=int, default=500_000)
    p.add_argument("--keys", type=int, default=1_000)
    p.add_argument("--rate", type=float, default=200.0, help="rows a second of event time")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--commit", type=int, default=20, help="batches between commits")
    p.add_argument("--shapes", default=",".join(SHAPES))
    args = p.parse_args(argv)
    data = rows(args.rows, args.keys, args.rate)
    print("| window | kept | events/s (runs) | CPU s | rows fired |")
    print("|---|---|---|---|---|")
    for name in args.shapes.split(","):
        spec = SHAPES[name]
        results: dict[bool, list[float]] = {True: [], False: []}
        fired: dict[bool, list] = {}
        for _ in range(args.repeat):  # the two ways in turn
            for sliced in (False, True):
                seconds, _, out = run(spec, data, sliced, args.commit)
                results[sliced].append(seconds)
                fired[sliced] = out
        if fired[True] != fired[False]:
            print(f"{name}: the fired rows differ", file=sys.stderr)
            return 1
        for sliced in (False, True):
            runs = results[sliced]
            rates = ", ".join(f"{args.rows / s:,.0f}" for s in runs)
            print(f"| {name} | {'per slice' if sliced else 'per window'} | {rates} "
                  f"| {min(runs):.2f} | {len(fired[sliced]):,} |")  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"peak RSS {peak} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
