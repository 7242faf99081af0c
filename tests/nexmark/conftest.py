"""Nexmark's session: the seeded events, written once, and produced once to the session broker.

``test_nexmark_flink.py`` (every query against Flink 2.3) is collected only with
``DELTAFLOW_NEXMARK=1`` (``make nexmark``); ``make test`` runs the rest of this folder, which
needs no Flink (the generator's model, every query's plan, q13 against its semantics).
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))  # bench.nexmark_gen, bench.nexmark_queries

if os.environ.get("DELTAFLOW_NEXMARK") != "1":
    collect_ignore = ["test_nexmark_flink.py"]

EVENTS = int(os.environ.get("DELTAFLOW_NEXMARK_EVENTS", "10000"))


@pytest.fixture(scope="session")
def nexmark_inputs(tmp_path_factory):
    """The events file and q13's side-input file (seed 18, 200 events/s: 50 s of event time)."""
    import nexmark_run as nr

    from bench.nexmark_gen import Config

    folder = tmp_path_factory.mktemp("nexmark")
    return nr.write_inputs(folder, EVENTS, Config(seed=18, rate=200))


@pytest.fixture(scope="session")
def nexmark_topics(broker, nexmark_inputs):
    """The events and the side input on topics of the session broker (one partition each)."""
    import nexmark_run as nr

    tag = uuid.uuid4().hex[:8]
    topics = {"datagen": f"nexmark-{tag}", "side": f"nexmark-side-{tag}"}
    nr.produce_inputs(broker, nexmark_inputs[0], topics)
    return topics


TIES = ["q9", "q18", "q19"]  # ROW_NUMBER queries, run again where sort keys tie often


@pytest.fixture(scope="session")
def nexmark_ties(broker, tmp_path_factory):
    """20,000 events at 10 per millisecond (many equal ``dateTime`` and prices), on topics of
    the session broker, with Flink's results of the ROW_NUMBER queries over them."""
    import nexmark_run as nr

    from bench.nexmark_gen import Config

    folder = tmp_path_factory.mktemp("nexmark-ties")
    events, side = nr.write_inputs(folder, 20000, Config(seed=18, rate=10000))
    tag = uuid.uuid4().hex[:8]
    topics = {"datagen": f"nexmark-ties-{tag}", "side": f"nexmark-ties-side-{tag}"}
    nr.produce_inputs(broker, events, topics)
    return topics, nr.flink_results(events, side, folder, TIES)
