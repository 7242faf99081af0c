"""The broker timeout setting and the crash-point syntax."""

from __future__ import annotations

import pytest

from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor.crash import parse
from deltaflow.processor.settings import broker_timeout_s, checkpoint_interval_s


def test_broker_timeout_defaults_to_three_minutes_and_reads_flink_durations():
    assert broker_timeout_s({}) == 180.0
    assert broker_timeout_s({"deltaflow.broker.timeout": "60 s"}) == 60.0
    assert broker_timeout_s({"deltaflow.broker.timeout": "2 min"}) == 120.0
    assert checkpoint_interval_s({"execution.checkpointing.interval": "200 ms"}) == 0.2


def test_a_bad_broker_timeout_names_the_option():
    with pytest.raises(DeltaflowError, match="'deltaflow.broker.timeout'.*'soon'"):
        broker_timeout_s({"deltaflow.broker.timeout": "soon"})


def test_crash_points_are_name_and_count_pairs():
    assert parse("step2:7, batch:3") == {"step2": 7, "batch": 3}
    assert parse("") == {}
    with pytest.raises(ValueError, match="NAME:N"):
        parse("step2")
