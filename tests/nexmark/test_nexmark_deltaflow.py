"""Four Nexmark queries on deltaflow over the session broker, against answers computed here from
the events by the queries' semantics (make test; the full comparison with Flink is
``test_nexmark_flink.py``). Rows are printed as Flink's print sink prints them."""

from __future__ import annotations

import json

import nexmark_run as nr
import pytest

from bench.nexmark_gen import CHANNELS

CHANNEL_IDS = {"Apple": "0", "Google": "1", "Facebook": "2", "Baidu": "3"}
assert set(CHANNEL_IDS) == set(CHANNELS)


def flink_time(stamp: str) -> str:
    """``2024-01-01 10:00:05.000`` as Flink prints a TIMESTAMP(3): ``2024-01-01T10:00:05``."""
    day, clock = stamp.split(" ")
    hms, millis = clock.split(".")
    if millis == "000":
        return f"{day}T{hms[:5] if hms.endswith(':00') else hms}"
    return f"{day}T{hms}.{millis}"


def bids(events) -> list[dict]:
    lines = (json.loads(line) for line in events.read_text().splitlines())
    return [e["bid"] for e in lines if e["event_type"] == 2]


def expected(name: str, rows: list[dict]) -> list[str]:
    out = []
    for b in rows:
        head = f"{b['auction']}, {b['bidder']}, {b['price']}"
        if name == "q2" and b["auction"] % 123 == 0:
            out.append(f"+I[{b['auction']}, {b['price']}]")
        elif name == "q13":
            value = f"v{b['auction'] % nr.SIDE_KEYS}"
            out.append(f"+I[{head}, {flink_time(b['dateTime'])}, {value}]")
        elif name == "q21":
            channel_id = CHANNEL_IDS.get(b["channel"]) or b["url"].rsplit("channel_id=", 1)[1]
            out.append(f"+I[{head}, {b['channel']}, {channel_id}]")
        elif name == "q22":
            dirs = ", ".join(b["url"].split("/")[3:6])
            out.append(f"+I[{head}, {b['channel']}, {dirs}]")
    return sorted(out)


@pytest.mark.parametrize("name", ["q2", "q13", "q21", "q22"])
def test_query_gives_the_answer_of_its_semantics(
    name, nexmark_inputs, broker, nexmark_topics, new_topic, tmp_path
):
    want = expected(name, bids(nexmark_inputs[0]))
    assert want
    sink = new_topic(f"nexmark-{name}")
    assert nr.run_deltaflow(name, broker, nexmark_topics, sink, tmp_path / "state") == want


def test_flink_time_prints_as_javas_local_date_time():
    assert flink_time("2024-01-01 10:00:00.000") == "2024-01-01T10:00"
    assert flink_time("2024-01-01 10:00:05.000") == "2024-01-01T10:00:05"
    assert flink_time("2024-01-01 10:00:05.120") == "2024-01-01T10:00:05.120"
