"""Per-partition watermarks of a Kafka source, end to end on the real broker.

A TUMBLE window job over a 2-partition topic: the source's watermark is the minimum
over its partitions (each the largest ``ts - 1 s`` it gave), so rows of a lagging
partition land in their windows; a partition without any data holds the windows
back until the idle timeout (table option or job setting). Expected windows are
computed from these rules (Flink's Kafka source and window semantics).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import threading
import time
from collections import Counter

import pytest
from confluent_kafka import Producer

from deltaflow.connectors.broker import ensure_topics
from deltaflow.formats.printing import format_timestamp
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

JOB = """{settings}
CREATE TABLE clicks (name STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bs}',
      'scan.startup.mode' = 'earliest-offset', 'format' = 'json'{extra});
CREATE TABLE counts (window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT)
WITH ('connector' = 'print');
INSERT INTO counts SELECT window_start, window_end, COUNT(*)
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
"""
T0 = dt.datetime(2024, 1, 1)
DELAY_S = 1
SIZE_S = 10


class Running:
    """A job in a thread of its own (its state opened there), stopped by ``close``."""

    def __init__(self, sql: str, broker: str, tmp_path) -> None:
        self.out = io.StringIO()
        self.stop = threading.Event()
        self.job: Job | None = None
        self.error: BaseException | None = None
        plan = plan_job(sql).plan
        options = JobOptions(state_dir=tmp_path / "state", bootstrap=broker, out=self.out)
        self.thread = threading.Thread(target=self._run, args=(plan, options), daemon=True)
        self.thread.start()

    def _run(self, plan, options) -> None:
        try:
            self.job = Job(plan, options, stop=self.stop)
            self.job.run()
        except BaseException as err:  # re-raised in the test by close()
            self.error = err

    def wait(self, done, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert self.error is None, self.error
            assert time.monotonic() < deadline, "the job did not get there in time"
            time.sleep(0.02)

    def wait_read(self, count: int) -> None:
        self.wait(lambda: self.job is not None and self.job.stats.total_in >= count)

    def lines(self) -> list[str]:
        return sorted(ln for ln in self.out.getvalue().splitlines() if ln)

    def close(self) -> list[str]:
        self.stop.set()
        self.thread.join(60)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error
        return self.lines()


def produce(broker: str, topic: str, events: list[tuple[int, int]]) -> None:
    """(partition, seconds after T0) events, in this order."""
    producer = Producer({"bootstrap.servers": broker})
    for part, sec in events:
        value = {"name": f"u{sec}", "ts": (T0 + dt.timedelta(seconds=sec)).isoformat(" ")}
        producer.produce(topic, json.dumps(value).encode(), partition=part)
    producer.flush(10)


def expected_windows(events: list[tuple[int, int]], watermark_s: float) -> list[str]:
    """Every event in its tumbling window, windows that the watermark closed (a window
    fires when the watermark reaches its end minus 1 ms)."""
    counts = Counter(sec // SIZE_S * SIZE_S for _, sec in events)
    return sorted(
        f"+I[{format_timestamp(T0 + dt.timedelta(seconds=start))}, "
        f"{format_timestamp(T0 + dt.timedelta(seconds=start + SIZE_S))}, {n}]"
        for start, n in counts.items()
        if start + SIZE_S - 0.001 <= watermark_s
    )


def source_watermark(events: list[tuple[int, int]], partitions=(0, 1)) -> float:
    """The minimum over the partitions of each one's largest ``ts - delay``."""
    return min(max(s for p, s in events if p == part) - DELAY_S for part in partitions)


def test_rows_of_a_lagging_partition_are_counted_in_their_windows(broker, new_topic, tmp_path):
    topic = new_topic("clicks")
    ensure_topics(broker, [topic], partitions=2)
    job = Running(JOB.format(settings="", topic=topic, bs=broker, extra=""), broker, tmp_path)
    ahead = [(0, 1), (0, 12), (0, 25)]
    lagging = [(1, 3), (1, 14)]
    final = [(1, 40), (0, 41)]
    try:
        produce(broker, topic, ahead)
        job.wait_read(3)
        # a watermark over all partitions would now be 24 s: [0, 10) and [10, 20)
        # would have fired with partition 0's rows alone and 3 s, 14 s be dropped late
        assert job.lines() == []
        produce(broker, topic, lagging)
        job.wait_read(5)
        produce(broker, topic, final)
        events = ahead + lagging + final
        want = expected_windows(events, source_watermark(events))
        job.wait(lambda: len(job.lines()) >= len(want))
    finally:
        lines = job.close()
    assert want == [
        "+I[2024-01-01T00:00, 2024-01-01T00:00:10, 2]",
        "+I[2024-01-01T00:00:10, 2024-01-01T00:00:20, 2]",
        "+I[2024-01-01T00:00:20, 2024-01-01T00:00:30, 1]",
    ]
    assert lines == want


def test_a_partition_without_data_holds_the_windows_back(broker, new_topic, tmp_path):
    topic = new_topic("clicks")
    ensure_topics(broker, [topic], partitions=2)
    job = Running(JOB.format(settings="", topic=topic, bs=broker, extra=""), broker, tmp_path)
    try:
        job.wait(lambda: job.job is not None)
        time.sleep(1.0)
        produce(broker, topic, [(0, 1), (0, 12), (0, 25)])
        job.wait_read(3)
        time.sleep(1.5)  # well past any poll: partition 1 still holds the watermark
    finally:
        lines = job.close()
    assert lines == []


@pytest.mark.parametrize(
    ("settings", "extra"),
    [
        ("", ", 'scan.watermark.idle-timeout' = '300 ms'"),
        ("SET 'table.exec.source.idle-timeout' = '300 ms';", ""),
    ],
    ids=["table-option", "job-setting"],
)
def test_after_the_idle_timeout_the_empty_partition_no_longer_holds_windows_back(
    broker, new_topic, tmp_path, settings, extra
):
    topic = new_topic("clicks")
    ensure_topics(broker, [topic], partitions=2)
    sql = JOB.format(settings=settings, topic=topic, bs=broker, extra=extra)
    job = Running(sql, broker, tmp_path)
    events = [(0, 1), (0, 12), (0, 25)]
    want = expected_windows(events, source_watermark(events, partitions=(0,)))
    try:
        # both partitions go idle 300 ms after assignment; partition 0's records make
        # it active again while the empty partition 1 stays idle (with every partition
        # idle the watermark would not move, as in Flink)
        job.wait(lambda: job.job is not None)
        time.sleep(1.0)
        produce(broker, topic, events)
        job.wait(lambda: len(job.lines()) >= len(want))
    finally:
        lines = job.close()
    assert len(want) == 2
    assert lines == want


def test_a_bounded_read_fires_every_window_at_its_end(broker, new_topic, tmp_path):
    topic = new_topic("clicks")
    ensure_topics(broker, [topic], partitions=2)
    events = [(0, 1), (0, 12), (0, 25), (1, 3)]
    produce(broker, topic, events)
    out = io.StringIO()
    extra = ", 'scan.bounded.mode' = 'latest-offset'"
    plan = plan_job(JOB.format(settings="", topic=topic, bs=broker, extra=extra)).plan
    Job(plan, JobOptions(state_dir=tmp_path / "state", bootstrap=broker, out=out)).run()
    lines = sorted(ln for ln in out.getvalue().splitlines() if ln)
    assert lines == expected_windows(events, float("inf"))
