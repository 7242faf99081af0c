"""Per-partition source watermarks (Flink's Kafka source semantics) without a broker.

The scan's watermark is the minimum over its assigned partitions' watermarks; a
partition without data holds it at the minimum, an idle one (no record for the idle
timeout) and a finished one (end of a bounded read) do not count, and an idle
partition receiving records counts again. Watermarks never go back.
"""

from __future__ import annotations

import datetime as dt

import pytest

from deltaflow.formats.changelog import Batch, RowKind
from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.runtime.base import MAX_WATERMARK, MIN_WATERMARK
from deltaflow.processor.runtime.source_marks import SourceMarks, idle_timeout_ms
from deltaflow.state.backend import StateBackend


@pytest.fixture
def backend(tmp_path):
    """A real LMDB state backend in a fresh directory."""
    b = StateBackend(tmp_path / "state")
    try:
        yield b
    finally:
        b.close()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_assigned_partition_without_data_holds_the_watermark_at_its_minimum():
    marks = SourceMarks()
    marks.assign([("t", 0), ("t", 1)])
    marks.observe(("t", 0), 5_000)
    assert marks.combined() == MIN_WATERMARK
    marks.observe(("t", 1), 3_000)
    assert marks.combined() == 3_000


def test_a_partition_watermark_is_the_largest_value_it_gave():
    marks = SourceMarks()
    marks.observe(0, 5_000)
    marks.observe(0, 2_000)  # out of order within the partition: its watermark stays
    marks.observe(0, None)  # records without a rowtime value leave it as it is
    assert marks.combined() == 5_000


def test_an_idle_partition_stops_holding_back_and_counts_again_on_new_records():
    clock = Clock()
    marks = SourceMarks(idle_ms=500, clock=clock)
    marks.assign([0, 1])
    marks.observe(0, 9_000)
    clock.now += 0.4
    assert marks.combined() == MIN_WATERMARK  # partition 1 not idle yet (400 of 500 ms)
    marks.observe(0, 10_000)
    clock.now += 0.2
    assert marks.combined() == 10_000  # partition 1 silent for 600 ms: idle
    marks.observe(1, 4_000)
    assert marks.combined() == 4_000  # active again: it counts (the graph never goes back)


def test_with_every_partition_idle_the_watermark_does_not_move():
    clock = Clock()
    marks = SourceMarks(idle_ms=100, clock=clock)
    marks.assign([0, 1])
    marks.observe(0, 1_000)
    clock.now += 1
    assert marks.combined() is None


def test_a_finished_partition_stops_holding_back_and_all_finished_is_the_maximum():
    marks = SourceMarks()
    marks.assign([0, 1])
    marks.observe(1, 7_000)
    marks.finish([0])
    assert marks.combined() == 7_000
    marks.finish([1])
    assert marks.combined() == MAX_WATERMARK


def test_the_table_option_takes_precedence_over_the_job_setting():
    table = {"scan.watermark.idle-timeout": "2 s"}
    job = {"table.exec.source.idle-timeout": "500 ms"}
    assert idle_timeout_ms(table, job) == 2_000
    assert idle_timeout_ms({}, job) == 500
    assert idle_timeout_ms({}, {}) == 0
    with pytest.raises(DeltaflowError, match="scan.watermark.idle-timeout"):
        idle_timeout_ms({"scan.watermark.idle-timeout": "soon"}, {})


# -- the graph: batches holding several partitions' rows ---------------------------

JOB = """
CREATE TABLE clicks (name STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'kafka', 'topic' = 'clicks', 'properties.bootstrap.servers' = 'localhost:9',
      'format' = 'json'{extra});
CREATE TABLE counts (window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT)
WITH ('connector' = 'print');
INSERT INTO counts SELECT window_start, window_end, COUNT(*)
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
"""
T0 = dt.datetime(2024, 1, 1)


def _graph(backend, extra=""):
    from deltaflow.processor.job import scans_of
    from deltaflow.processor.planner.api import plan_job
    from deltaflow.processor.runtime.graph import Graph

    plan = plan_job(JOB.format(extra=extra)).plan
    return Graph(plan, backend), scans_of(plan)[0].node_id, plan.sinks[0].node_id


def _rows(*seconds):
    return Batch(
        [RowKind.INSERT] * len(seconds), [("u", T0 + dt.timedelta(seconds=s)) for s in seconds]
    )


def _window(start, n):
    return (T0 + dt.timedelta(seconds=start), T0 + dt.timedelta(seconds=start + 10), n)


def _fired(out, sink):
    return sorted(out[sink].rows) if sink in out else []


def test_a_lagging_partition_in_the_same_batch_holds_the_watermark(backend):
    graph, scan, sink = _graph(backend)
    # partition 0 at 25 s, partition 1 at 3 s: the watermark is 3 - 1 = 2 s, nothing fires
    assert graph.push(scan, _rows(1, 25, 3), runs=[(0, 2), (1, 1)]) == {}
    # partition 1 reaches 14 s: watermark 13 s fires [0, 10) with both partitions' rows
    assert _fired(graph.push(scan, _rows(14), partition=1), sink) == [_window(0, 2)]
    # 12 s is not late for partition 1's watermark: it lands in [10, 20)
    assert graph.push(scan, _rows(12), partition=1) == {}
    assert _fired(graph.finish(), sink) == [_window(10, 2), _window(20, 1)]


def test_an_idle_partition_releases_the_watermark_and_late_rows_stay_late(backend):
    graph, scan, sink = _graph(backend, ", 'scan.watermark.idle-timeout' = '500 ms'")
    clock = Clock()
    marks = graph.partitions(scan)
    marks.clock = clock
    marks.assign([0, 1])
    assert graph.push(scan, _rows(1, 12, 25), partition=0) == {}  # partition 1 holds it back
    clock.now += 0.4
    assert graph.refresh_watermark(scan) == {}  # 400 of 500 ms: not idle yet
    assert graph.push(scan, _rows(27), partition=0) == {}  # partition 0 stays active
    clock.now += 0.2
    assert _fired(graph.refresh_watermark(scan), sink) == [_window(0, 1), _window(10, 1)]
    # partition 1 wakes up with a row behind the watermark (late: dropped, as in Flink)
    # and one in the open window; the watermark does not go back
    assert graph.push(scan, _rows(5, 26), partition=1) == {}
    assert _fired(graph.finish(), sink) == [_window(20, 3)]


def test_an_unreadable_idle_timeout_names_the_option(backend):
    with pytest.raises(DeltaflowError, match=r"scan.watermark.idle-timeout of table \S*clicks"):
        _graph(backend, ", 'scan.watermark.idle-timeout' = 'a while'")
