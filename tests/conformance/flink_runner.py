"""The Apache Flink side of the conformance suite, run with the Python of a PyFlink venv.

    python flink_runner.py CAPTURE_FILE ACK_FD < request paths, one a line

Serves requests until stdin closes: for each request path it writes ``<path>.result``
and then a line on the file descriptor ACK_FD. One JVM (one TableEnvironment) for every case. Each case gets its own database, so its
tables keep their plain names. For each case the runner records the optimized plan of
its INSERT with changelog modes (or the planning error), then runs the runnable cases
together, many INSERTs to one statement set (one Flink job), each into a ``print`` sink
whose print-identifier is the case id. The print sinks write to the JVM's stdout, which
this script points at a capture file before the JVM starts; the lines are then split by
identifier. A job that fails is retried one case at a time, so one failing case cannot
hide the others' results. Imports only PyFlink and the standard library.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time


def _java_message(err: BaseException) -> str:
    """The Java exception text without stack frames."""
    lines = [ln for ln in str(err).splitlines() if ln.strip() and not ln.lstrip().startswith("at ")]
    return "\n".join(lines)[:4000]


def _environment(settings: dict[str, str]):
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    for key, value in settings.items():
        config.set(key, value)
    return env


def _declare(env, case: dict) -> None:
    db = f"db_{case['id']}"
    env.use_database("default_database")
    env.execute_sql(f"DROP DATABASE IF EXISTS `{db}` CASCADE")
    env.execute_sql(f"CREATE DATABASE `{db}`")
    env.use_database(db)
    for stmt in case["ddl"]:
        env.execute_sql(stmt)


def _explain(env, case: dict) -> tuple[str | None, str | None]:
    from pyflink.table.explain_detail import ExplainDetail

    try:
        text = env.explain_sql(case["insert"], ExplainDetail.CHANGELOG_MODE)
        return _physical_section(text), None
    except Exception as err:  # noqa: BLE001 - a planning error is a result here
        return None, _java_message(err)


class _Settings:
    """A case's own settings for the duration of a ``with`` block, then the session's again."""

    def __init__(self, env, settings: dict[str, str], defaults: dict[str, str]) -> None:
        self.config, self.settings, self.defaults = env.get_config(), settings, defaults

    def __enter__(self):
        for key, value in self.settings.items():
            self.config.set(key, value)

    def __exit__(self, *exc):
        for key in self.settings:
            self.config.set(key, self.defaults.get(key, _FLINK_DEFAULTS[key]))


_FLINK_DEFAULTS = {
    "pipeline.auto-watermark-interval": "3650 d",
    "table.optimizer.non-deterministic-update.strategy": "IGNORE",
    "table.exec.sink.require-on-conflict": "true",
    "table.exec.mini-batch.enabled": "false",
    "table.exec.mini-batch.allow-latency": "0 ms",
    "table.exec.mini-batch.size": "-1",
}


def _physical_section(text: str) -> str:
    match = re.search(r"== Optimized Physical Plan ==\n(.*?)\n\n", text, re.S)
    return match.group(1) if match else text


def _run_chunk(env, cases: list[dict]) -> str | None:
    statements = env.create_statement_set()
    for case in cases:
        env.use_database(f"db_{case['id']}")
        statements.add_insert_sql(case["insert"])
    try:
        statements.execute().wait()
        return None
    except Exception as err:  # noqa: BLE001 - recorded per case by the caller
        return _java_message(err)


def _run_isolating(env, chunk: list[dict], results: dict, capture) -> None:
    """Runs a chunk as one job and keeps its print lines; if the job fails, its lines are
    dropped and each case runs alone, so each gets its own output or error."""
    error = _run_chunk(env, chunk)
    lines = _split_output(capture)
    if error is None:
        for case in chunk:
            results[case["id"]]["lines"] = lines.get(case["id"], [])
    elif len(chunk) > 1:
        for case in chunk:
            _run_isolating(env, [case], results, capture)
    else:
        results[chunk[0]["id"]]["run_error"] = error


def run(env, request: dict, capture) -> dict:
    started = time.monotonic()
    defaults = request.get("settings", {})
    results: dict[str, dict] = {}
    runnable = []
    _split_output(capture)  # skip anything printed before this request
    for case in request["cases"]:
        _declare(env, case)
        with _Settings(env, case.get("settings", {}), defaults):
            plan, error = _explain(env, case)
        results[case["id"]] = {"plan": plan, "plan_error": error, "run_error": None}
        if error is None and case.get("run", True):
            runnable.append(case)
    size = int(request.get("chunk", 40))
    groups: dict[str, list[dict]] = {}
    for case in runnable:  # one job runs cases with the same settings
        groups.setdefault(json.dumps(case.get("settings", {}), sort_keys=True), []).append(case)
    for key, group in groups.items():
        with _Settings(env, json.loads(key), defaults):
            for chunk in (group[i : i + size] for i in range(0, len(group), size)):
                _run_isolating(env, chunk, results, capture)
        print(
            f"flink: {len(group)} case(s) ran, {time.monotonic() - started:.1f}s", file=sys.stderr
        )
    return {"cases": results, "seconds": time.monotonic() - started}


_IDENT = re.compile(r"c\d+(?:x\d+)?")


def _split_output(capture) -> dict[str, list[str]]:
    """The print lines written since the last call, by print-identifier (the case id)."""
    found: dict[str, list[str]] = {}
    for raw in capture.read().splitlines():
        ident, sep, rest = raw.partition("> ")
        if sep and _IDENT.fullmatch(ident):
            found.setdefault(ident, []).append(rest)
    return found


def main(argv: list[str]) -> int:
    capture_path, ack = argv[1], int(argv[2])
    fd = os.open(capture_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)  # the JVM started below inherits this stdout
    env = None
    with open(capture_path, encoding="utf-8", errors="replace") as capture:
        for line in sys.stdin:
            request_path = line.strip()
            with open(request_path, encoding="utf-8") as handle:
                request = json.load(handle)
            if env is None:
                env = _environment(request.get("settings", {}))
            result = run(env, request, capture)
            with open(request_path + ".result", "w", encoding="utf-8") as handle:
                json.dump(result, handle)
            os.write(ack, b"done\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
