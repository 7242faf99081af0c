"""Fixtures of the broker-fault tests: a broker behind a cuttable proxy, and job processes
that are killed if a test ends (fails) while they still run."""

from __future__ import annotations

import time

import pytest
from cut_proxy import broker_behind_proxy
from job_process import Jobs

from deltaflow.connectors.broker import ensure_topics


@pytest.fixture
def proxied():
    """(bootstrap through the proxy, proxy) of a private broker with topics orders, totals."""
    proc, proxy = broker_behind_proxy()
    bootstrap = f"127.0.0.1:{proxy.port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            ensure_topics(bootstrap, ["orders", "totals"])
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    yield bootstrap, proxy
    proxy.close()
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def jobs(tmp_path):
    """Started job processes; any still running when the test ends (a failure) is killed."""
    started = Jobs(tmp_path)
    yield started
    started.kill_leftovers()
