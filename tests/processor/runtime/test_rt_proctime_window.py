"""Processing-time windows (Nexmark q12's ``GROUP BY bidder, TUMBLE(p_time, ..)`` and the TVF
form), planned and run on real LMDB state with a controlled wall clock: windows take rows by
the clock when they arrive, fire when the clock reaches window_end - 1, ignore watermarks,
and are not fired by the end of a bounded input (Flink 2.3 ends such a job with them open).
Output depends on the clock, so the checks are properties: counts sum to the input, window
bounds are aligned to the size, each window fires once."""

from __future__ import annotations

import datetime as dt
from collections import Counter

from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.processor.planner.api import plan_job
from deltaflow.processor.runtime.base import RuntimeContext, epoch_ms
from deltaflow.processor.runtime.graph import Graph

BID = """CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, `dateTime` TIMESTAMP(3),
  WATERMARK FOR `dateTime` AS `dateTime`) WITH ('connector' = 'datagen');
"""
Q12 = (
    BID
    + """CREATE TABLE out (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)) WITH ('connector' = 'print');
INSERT INTO out SELECT B.bidder, count(*) as bid_count,
  TUMBLE_START(B.p_time, INTERVAL '10' SECOND) as starttime,
  TUMBLE_END(B.p_time, INTERVAL '10' SECOND) as endtime
FROM (SELECT *, PROCTIME() as p_time FROM bid) B
GROUP BY B.bidder, TUMBLE(B.p_time, INTERVAL '10' SECOND);
"""
)
HOP_TVF = """CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, p AS PROCTIME())
  WITH ('connector' = 'datagen');
CREATE TABLE out (auction BIGINT, ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT)
  WITH ('connector' = 'print');
INSERT INTO out SELECT auction, window_start, window_end, COUNT(*) FROM TABLE(HOP(TABLE bid,
  DESCRIPTOR(p), INTERVAL '2' SECOND, INTERVAL '4' SECOND)) GROUP BY auction, window_start, window_end;
"""
T0 = 1_704_067_203_500  # 2024-01-01T00:00:03.5 UTC, in ms


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


def _job(sql: str, backend, clock: Clock):  # noqa: ANN001, ANN202
    plan = plan_job(sql).plan
    graph = Graph(plan, backend, RuntimeContext(clock=clock))
    (sink,) = plan.sinks
    scan = next(iter(graph.source_watermarks))
    return graph, scan, sink.node_id


def _bids(n: int, seconds: int) -> Batch:
    batch = Batch()
    for i in range(n):
        batch.append(RowKind.INSERT, (i % 3, i % 4, i, dt.datetime(2030, 1, 1, 0, 0, seconds)))
    return batch


def _rows(out: dict, sink: int) -> list[tuple]:
    got = out.get(sink)
    assert got is None or all(k == RowKind.INSERT for k in got.kinds)  # insert-only
    return list(got.rows) if got is not None else []


def test_q12_windows_fire_on_the_wall_clock_not_on_watermarks(backend) -> None:
    clock = Clock()
    graph, scan, sink = _job(Q12, backend, clock)
    # event times far ahead: the watermark passes every window, which must not fire them
    assert not _rows(graph.push(scan, _bids(10, 0)), sink)
    clock.now += 3_000  # 00:00:06.5
    assert not _rows(graph.push(scan, _bids(6, 30)), sink)
    assert not _rows(graph.advance_processing_time(), sink)
    clock.now += 2_000  # 00:00:08.5: the first window [0, 10) is still open
    assert not _rows(graph.advance_processing_time(), sink)
    clock.now += 1_499  # 00:00:09.999 = window_end - 1
    fired = _rows(graph.advance_processing_time(), sink)
    assert sorted(fired) == [  # 16 bids by bidder i % 4: 0..9 then 0..5
        (b, n, dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 10))
        for b, n in ((0, 5), (1, 5), (2, 3), (3, 3))
    ]
    clock.now += 60_000
    assert not _rows(graph.advance_processing_time(), sink)  # each window fires once


def test_open_windows_are_not_fired_by_the_end_of_a_bounded_input(backend) -> None:
    clock = Clock()
    graph, scan, sink = _job(Q12, backend, clock)
    graph.push(scan, _bids(5, 0))
    assert not _rows(graph.finish(), sink)  # as Flink 2.3: the job ends with them pending


def test_hop_tvf_counts_sum_to_the_input_in_every_aligned_window(backend) -> None:
    clock = Clock()
    graph, scan, sink = _job(HOP_TVF, backend, clock)
    fired: list[tuple] = []
    pushed = 0
    for step in range(12):  # batches 700 ms apart, the clock polled in between
        graph.push(scan, _bids(step + 1, 0))
        pushed += step + 1
        clock.now += 700
        fired += _rows(graph.advance_processing_time(), sink)
    clock.now += 10_000
    fired += _rows(graph.advance_processing_time(), sink)
    per_window = Counter()
    for _auction, start, end, n in fired:
        assert epoch_ms(start) % 2_000 == 0 and epoch_ms(end) - epoch_ms(start) == 4_000
        per_window[start] += n
    assert len(fired) == len(set((a, s) for a, s, _, _ in fired))  # one row per window and key
    # each bid is in the two windows holding its arrival time: every window is full once
    assert sum(per_window.values()) == 2 * pushed
