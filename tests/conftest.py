"""Shared fixtures: one real embedded broker (tansu) per test session, unique topic names."""

from __future__ import annotations

import itertools
import uuid

import pytest

from deltaflow.connectors.broker import EmbeddedBroker

_counter = itertools.count()
_session = uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def broker():
    """The bootstrap address of an embedded broker on a free loopback port."""
    embedded = EmbeddedBroker(port=0).start()
    try:
        yield embedded.bootstrap
    finally:
        embedded.stop()


def unique_topic(prefix: str = "t") -> str:
    return f"{prefix}-{_session}-{next(_counter)}"


@pytest.fixture
def new_topic():
    """A function returning a fresh, unique topic name each call."""
    return unique_topic
