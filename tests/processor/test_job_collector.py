"""The job's collector: settings scoped to the run, what a batch leaves alive frozen, and a
full collection when it is due that frees cycles the freezing kept."""

from __future__ import annotations

import gc
import weakref

import pytest

from deltaflow.processor.collector import JobCollector


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def make_cycle() -> weakref.ref:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_run_changes_the_collector_and_restores_it():
    before = gc.get_threshold()
    with JobCollector(young=12_345):
        assert gc.get_threshold() == (12_345, *before[1:])
        assert gc.get_freeze_count() > 0
        assert gc.isenabled()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_the_collector_is_restored_after_an_error():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), JobCollector():
        raise RuntimeError("job failed")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_settle_freezes_what_a_batch_left_alive_and_starts_the_young_count_again():
    with JobCollector(clock=Clock()) as collector:
        frozen = gc.get_freeze_count()
        kept = [[i] for i in range(5_000)]  # a batch's state: 5,001 new containers
        assert gc.get_count()[0] > 0
        collector.settle()
        assert gc.get_freeze_count() >= frozen + len(kept)
        assert gc.get_count()[0] == 0
        assert collector.full_collections == 0


def test_a_cycle_frozen_by_settle_is_freed_by_the_full_collection_when_it_is_due():
    clock = Clock()
    with JobCollector(full_every_s=60.0, clock=clock) as collector:
        cycle = make_cycle()
        collector.settle()  # frozen: no young pass will see it
        gc.collect()
        assert cycle() is not None
        clock.now += 59.0
        collector.settle()
        assert cycle() is not None and collector.full_collections == 0
        clock.now += 1.0
        collector.settle()
        assert cycle() is None
        assert collector.full_collections == 1
        assert gc.get_freeze_count() > 0  # frozen again after the full collection
