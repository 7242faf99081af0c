"""A processing-time window job (Nexmark q12's shape) on the real broker, end to end: the
windows fire on the wall clock while the job waits for more input, with no watermark and
no further record. The output depends on when rows arrive, so the checks are properties:
the counts per key sum to what was produced, each window is 1 s long and aligned to 1 s.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter

from test_watermarks_kafka import Running, produce

from deltaflow.connectors.broker import ensure_topics

JOB = """CREATE TABLE clicks (name STRING, ts TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bs}',
      'scan.startup.mode' = 'earliest-offset', 'format' = 'json');
CREATE TABLE counts (name STRING, n BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3))
WITH ('connector' = 'print');
INSERT INTO counts SELECT C.name, COUNT(*), TUMBLE_START(C.p, INTERVAL '1' SECOND),
  TUMBLE_END(C.p, INTERVAL '1' SECOND)
FROM (SELECT *, PROCTIME() AS p FROM clicks) C GROUP BY C.name, TUMBLE(C.p, INTERVAL '1' SECOND);
"""
_LINE = re.compile(r"^\+I\[(\w+), (\d+), ([\d\-T:.]+), ([\d\-T:.]+)\]$")


def _parsed(lines: list[str]) -> list[tuple[str, int, dt.datetime, dt.datetime]]:
    out = []
    for line in lines:
        m = _LINE.match(line)
        assert m is not None, line
        name, n, start, end = m.groups()
        out.append((name, int(n), dt.datetime.fromisoformat(start), dt.datetime.fromisoformat(end)))
    return out


def test_processing_time_windows_fire_on_the_wall_clock(broker, new_topic, tmp_path):
    topic = new_topic("proctime")
    ensure_topics(broker, [topic], partitions=1)
    job = Running(JOB.format(topic=topic, bs=broker), broker, tmp_path)
    events = [(0, s) for s in (1, 2, 1, 3, 2, 1, 9)]  # names u1, u2, u1, u3, u2, u1, u9
    try:
        produce(broker, topic, events)
        job.wait_read(len(events))
        # no more input: only the wall clock can fire the windows
        job.wait(lambda: sum(n for _, n, _, _ in _parsed(job.lines())) >= len(events), 20.0)
    finally:
        rows = _parsed(job.close())
    per_name: Counter = Counter()
    for name, n, start, end in rows:
        per_name[name] += n
        assert end - start == dt.timedelta(seconds=1) and start.microsecond == 0
    assert per_name == Counter(u1=3, u2=2, u3=1, u9=1)
    assert len(rows) == len({(name, start) for name, _, start, _ in rows})  # once per window
