"""An operator's mistakes meet one line and exit status 2, never a traceback or silence.

Each test runs `deltaflow run` (or `explain`) as a subprocess, as a user does, and
checks the exit status and the line on stderr: a metrics port that is taken or no
port at all, a state directory that cannot be created, a job file with nothing to
run, unknown or wrongly typed settings, and SQL mistakes whose position was wrong.
The jobs read a datagen table: no broker is involved before these checks.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

CMD = [sys.executable, "-m", "deltaflow.processor"]
JOB = """{settings}
CREATE TABLE src (x INT) WITH ('connector' = 'datagen', 'number-of-rows' = '3');
CREATE TABLE out1 (x INT) WITH ('connector' = 'print');
INSERT INTO out1 SELECT x FROM src;
"""


def deltaflow(*args: str, cwd: Path | None = None, prefix: list[str] | None = None):
    return subprocess.run([*(prefix or []), *CMD, *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd)  # fmt: skip


def one_error(done: subprocess.CompletedProcess) -> str:
    """The single line of a refused command."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("deltaflow: error: "), done.stderr
    return lines[0]


def job_file(tmp_path: Path, text: str, name: str = "job.sql") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_datagen_job_itself_runs(tmp_path):
    done = deltaflow("run", str(job_file(tmp_path, JOB.format(settings=""))),
                     "--state-dir", str(tmp_path / "state"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 3


def test_a_metrics_port_in_use_is_one_line(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        job = job_file(tmp_path, JOB.format(settings=""))
        line = one_error(deltaflow("run", str(job), "--state-dir", str(tmp_path / "state"),
                                   "--metrics-port", str(port)))  # fmt: skip
    finally:
        taken.close()
    assert f"cannot serve metrics on 127.0.0.1:{port} (--metrics-port)" in line
    assert "already in use" in line
    assert not (tmp_path / "state").exists()  # refused before the job opened anything


@pytest.mark.parametrize("port", ["70000", "0", "-5"])
def test_a_metrics_port_out_of_range_is_one_line(tmp_path, port):
    job = job_file(tmp_path, JOB.format(settings=""))
    line = one_error(
        deltaflow("run", str(job), "--state-dir", str(tmp_path / "s"), "--metrics-port", port)
    )
    assert f"--metrics-port {port} is not a TCP port; pass a number from 1 to 65535" in line


def read_only(path: Path) -> tuple[list[str], str]:
    """Makes ``path`` a directory nothing can be created in, for the command run after the
    returned prefix, and the reason the job should give. As root (which permissions do
    not stop) the command runs in a mount namespace where ``path`` is a read-only tmpfs;
    otherwise ``path`` is mode 0500."""
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o500)
        return [], "permission denied"
    script = f'mount -t tmpfs -o ro tmpfs "{path}" && exec "$0" "$@"'
    return ["unshare", "--mount", "sh", "-c", script], "the file system is read-only"


def test_a_state_directory_that_cannot_be_created_is_one_line(tmp_path):
    job = job_file(tmp_path, JOB.format(settings=""))
    locked = tmp_path / "locked"
    prefix, reason = read_only(locked)
    state = locked / "jobs" / "state"
    line = one_error(deltaflow("run", str(job), "--state-dir", str(state), prefix=prefix))
    assert f"cannot create state directory {state}: {reason}" in line
    assert "pass --state-dir with a writable location" in line


def test_the_default_state_directory_in_a_read_only_working_directory(tmp_path):
    job = job_file(tmp_path, JOB.format(settings=""))
    cwd = tmp_path / "cwd"
    prefix, reason = read_only(cwd)
    line = one_error(deltaflow("run", str(job), cwd=cwd, prefix=prefix))
    assert f"cannot create state directory {cwd / 'deltaflow-state' / 'job'}: {reason}" in line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "holds no SQL statements"),
        ("-- nothing yet\n/* still nothing */\n", "holds no SQL statements"),
        (
            "CREATE TABLE src (x INT) WITH ('connector' = 'datagen');",
            "has no INSERT INTO statement",
        ),
    ],
)
def test_a_job_file_with_nothing_to_run_is_refused(tmp_path, text, expected):
    job = job_file(tmp_path, text)
    line = one_error(deltaflow("run", str(job), "--state-dir", str(tmp_path / "state")))
    assert f"job file {str(job)!r} {expected}" in line
    assert not (tmp_path / "state").exists()
    assert expected in one_error(deltaflow("explain", str(job)))


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        (
            "SET 'deltaflow.broker-timeout' = '1 min';",
            "SQL line 2, column 1: unknown setting 'deltaflow.broker-timeout'; the deltaflow "
            "settings are 'deltaflow.broker.timeout', 'deltaflow.progress.interval', "
            "'deltaflow.unknown-key-delete'",
        ),
        (
            "SET 'deltaflow.unknown-key-delete' = 'skip';",
            "SQL line 2, column 1: SET 'deltaflow.unknown-key-delete' = 'skip': the value must "
            "be one of 'ignore', 'count', 'policy'",
        ),
        (
            "SET 'table.exec.mini-batch.enabled' = 'yes';",
            "SQL line 2, column 1: SET 'table.exec.mini-batch.enabled' = 'yes': the value must "
            "be 'true' or 'false'",
        ),
        (
            "SET 'table.exec.source.cdc-events-duplicate' = '1';",
            "SET 'table.exec.source.cdc-events-duplicate' = '1': the value must be 'true' or 'false'",
        ),
    ],
)
def test_unknown_settings_and_non_boolean_values_are_refused(tmp_path, setting, expected):
    job = job_file(tmp_path, JOB.format(settings="\n" + setting))
    assert expected in one_error(deltaflow("run", str(job), "--state-dir", str(tmp_path / "s")))


def test_boolean_settings_take_true_and_false_in_any_case(tmp_path):
    settings = "SET 'table.exec.mini-batch.enabled' = 'FALSE';\nSET 'deltaflow.unknown-key-delete' = 'Count';"
    job = job_file(tmp_path, JOB.format(settings=settings))
    done = deltaflow("run", str(job), "--state-dir", str(tmp_path / "s"))
    assert done.returncode == 0, done.stderr


def test_an_unclosed_string_is_reported_at_its_opening_quote(tmp_path):
    text = JOB.format(settings="").replace(
        "SELECT x FROM src;", "SELECT x FROM src\n  WHERE x <> 'a;"
    )
    line = one_error(deltaflow("explain", str(job_file(tmp_path, text))))
    # line 5 (the settings line is empty); "  WHERE x <> " is 13 characters
    assert "SQL line 5, column 14: this string is never closed" in line


def test_an_unclosed_comment_is_reported_where_it_opens(tmp_path):
    text = "/* the job\n" + JOB.format(settings="")
    line = one_error(deltaflow("explain", str(job_file(tmp_path, text))))
    assert "SQL line 1, column 1: this comment is never closed" in line


def test_an_unknown_aggregate_is_an_unknown_function_not_an_ungrouped_column(tmp_path):
    text = """CREATE TABLE src (k INT, x INT) WITH ('connector' = 'datagen');
CREATE TABLE out1 (k INT, s BIGINT) WITH ('connector' = 'print');
INSERT INTO out1 SELECT k,
  SUMM(x) FROM src GROUP BY k;
"""
    line = one_error(deltaflow("explain", str(job_file(tmp_path, text))))
    assert "SQL line 4, column 3: unknown function SUMM" in line
    assert "did you mean 'SUM'" in line
    assert "not being grouped" not in line
    # a column that really is not grouped keeps Flink's message
    grouped = text.replace("SUMM(x)", "x")
    line = one_error(deltaflow("explain", str(job_file(tmp_path, grouped))))
    assert "Expression 'x' is not being grouped" in line
