"""Fixtures of the broker-fault tests: a broker behind a cuttable proxy, and job processes
that are killed if a test ends (fails) while they still run."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from cut_proxy import broker_behind_proxy

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


class Jobs:
    """Starts ``deltaflow run`` processes; each one's stderr goes to a file (librdkafka logs
    every failed reconnect during an outage, and a pipe nobody drains would fill and block
    the job: it would look like a hang)."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[subprocess.Popen] = []

    def start(self, job: Path, state: Path) -> subprocess.Popen:
        log_path = self.tmp_path / f"stderr-{len(self.started)}.log"
        cmd = [sys.executable, "-m", "deltaflow.processor", "run", str(job), "--quiet"]
        with open(log_path, "w") as log:
            proc = subprocess.Popen([*cmd, "--state-dir", str(state)], stderr=log, text=True)
        proc.log_path = log_path
        self.started.append(proc)
        return proc

    def kill_leftovers(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def stderr_of(proc: subprocess.Popen) -> str:
    return proc.log_path.read_text()


@pytest.fixture
def jobs(tmp_path):
    """Started job processes; any still running when the test ends (a failure) is killed."""
    started = Jobs(tmp_path)
    yield started
    started.kill_leftovers()
