"""Job processes of the exactly-once tests, each one's stderr in a file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


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
