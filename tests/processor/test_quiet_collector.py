"""The job loop's collector settings are scoped to the run."""

from __future__ import annotations

import gc

from deltaflow.processor.job import quiet_collector


def test_quiet_collector_freezes_and_restores_the_collector():
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    with quiet_collector(young=12_345):
        assert gc.get_threshold() == (12_345, *before[1:])
        assert gc.get_freeze_count() > frozen_before
        assert gc.isenabled()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_quiet_collector_restores_after_an_error():
    before = gc.get_threshold()
    try:
        with quiet_collector():
            raise RuntimeError("job failed")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
