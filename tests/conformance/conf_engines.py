"""Running cases on both engines; each gives ``{"plan", "plan_error", "lines", "run_error"}``.

Flink runs in a subprocess with the Python of a PyFlink venv (``.venv/flink``, made by
``make conformance``; ``DELTAFLOW_FLINK_PYTHON`` overrides it). The JVM and Beam's pins
stay out of deltaflow's venv, and one subprocess (one JVM) serves every case of a
session. Its results are cached by the hash of the request and of the runner, so an
unchanged suite does not start Flink again.

Paths in the DDL are relative to the work directory and both engines run with it as
the current directory: the SQL text of a case does not depend on where it runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import tempfile
import traceback
from pathlib import Path

from deltaflow.formats.errors import DeltaflowError
from deltaflow.processor import job as job_module
from deltaflow.processor.job import Job, JobOptions
from deltaflow.processor.planner.api import plan_job

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
RUNNER = HERE / "flink_runner.py"
FLINK_VENV = REPO / ".venv" / "flink"
FLINK_SETUP_HINT = "run `make conformance` (it creates .venv/flink with apache-flink==2.3.0)"


def flink_python() -> Path:
    path = Path(os.environ.get("DELTAFLOW_FLINK_PYTHON", FLINK_VENV / "bin" / "python"))
    if not path.exists():
        raise RuntimeError(f"no PyFlink interpreter at {path}; {FLINK_SETUP_HINT}")
    return path


class FlinkSession:
    """One runner subprocess (one JVM), started on first use, serving requests in turn."""

    def __init__(self, workdir: Path, settings: dict[str, str]) -> None:
        self.workdir, self.settings = workdir, settings
        self.proc: subprocess.Popen | None = None
        self.count = 0

    def _start(self) -> None:
        ack_read, ack_write = os.pipe()
        self.stderr = open(self.workdir / "flink-runner.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [str(flink_python()), str(RUNNER), str(self.workdir / "flink-stdout.txt"), str(ack_write)],
            cwd=self.workdir, stdin=subprocess.PIPE, stderr=self.stderr, text=True,
            pass_fds=(ack_write,),
        )  # fmt: skip
        os.close(ack_write)
        self.ack = os.fdopen(ack_read)

    def run(self, requests: list[dict], cache: bool = True) -> dict[str, dict]:
        """Every request (case) on Flink; results by case id, cached by content."""
        request = {"settings": self.settings, "cases": requests, "chunk": 40}
        text = json.dumps(request, sort_keys=True)
        key = hashlib.sha256((text + RUNNER.read_text()).encode()).hexdigest()[:20]
        cache_dir = Path(os.environ.get("DELTAFLOW_FLINK_CACHE", FLINK_VENV / "cache"))
        cached = cache_dir / f"flink-{key}.json"
        if cache and cached.exists():
            return json.loads(cached.read_text())["cases"]
        if self.proc is None:
            self._start()
        self.count += 1
        path = self.workdir / f"flink-request-{self.count}.json"
        path.write_text(text)
        self.proc.stdin.write(f"{path}\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        if not self.ack.readline():
            log = (self.workdir / "flink-runner.log").read_text()[-4000:]
            raise RuntimeError(f"the Flink runner stopped:\n{log}")
        result = Path(f"{path}.result").read_text()
        if cache:
            cache_dir.mkdir(parents=True, exist_ok=True)
            cached.write_text(result)
        return json.loads(result)["cases"]

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout=120)
            self.ack.close()
            self.stderr.close()
            self.proc = None


@contextlib.contextmanager
def _cwd(path: Path):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def run_deltaflow(sql: str, workdir: Path, runs: bool, poll_records: int | None = None) -> dict:
    """Plans ``sql`` (one INSERT into a print sink) and, if ``runs``, runs it over the files,
    in batches of at most ``poll_records`` changes per source poll if given."""
    result: dict = {"plan": None, "plan_error": None, "lines": None, "run_error": None}
    with _cwd(workdir):
        try:
            planned = plan_job(sql)
        except DeltaflowError as err:
            result["plan_error"] = str(err)
            return result
        except Exception:  # noqa: BLE001 - a crash is a finding, recorded as such
            result["plan_error"] = "CRASH " + traceback.format_exc()
            return result
        result["plan"] = planned.explain()
        if runs:
            with _poll_records(poll_records):
                result["lines"], result["run_error"] = _run(planned)
    return result


@contextlib.contextmanager
def _poll_records(n: int | None):
    """The job polls each source for at most ``n`` records (the default if None)."""
    before = job_module.POLL_RECORDS
    job_module.POLL_RECORDS = n or before
    try:
        yield
    finally:
        job_module.POLL_RECORDS = before


def _run(planned) -> tuple[list[str] | None, str | None]:
    out = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="df-conf-") as state:
        try:
            Job(planned.plan, JobOptions(state_dir=Path(state), out=out)).run()
        except DeltaflowError as err:
            return None, str(err)
        except Exception:  # noqa: BLE001 - a crash is a finding, recorded as such
            return None, "CRASH " + traceback.format_exc()
    lines = [ln.partition("> ")[2] for ln in out.getvalue().splitlines() if ln]
    return lines, None
