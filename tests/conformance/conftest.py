"""The conformance suite's session: every case on Flink (one JVM) and on deltaflow, compared.

The Flink-dependent files are collected only with ``DELTAFLOW_CONFORMANCE=1`` (set by
``make conformance``); ``make test`` collects the rest of this folder (the Debezium
aggregate files), which needs no Flink.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

ENABLED = os.environ.get("DELTAFLOW_CONFORMANCE") == "1"
if not ENABLED:
    collect_ignore = ["test_flink_conformance.py", "test_regressions.py"]

SUMMARY_FILE = os.environ.get("DELTAFLOW_CONFORMANCE_SUMMARY")


@pytest.fixture(scope="session")
def conformance_run(tmp_path_factory):
    from conf_suite import Suite

    suite = Suite(tmp_path_factory.mktemp("conformance"))
    try:
        suite.run()
        suite.shrink_failures()
        yield suite
    finally:
        suite.close()
        _SUITES.append(suite)


_SUITES: list = []


def pytest_terminal_summary(terminalreporter):
    for suite in _SUITES:
        for line in suite.summary_lines():
            terminalreporter.write_line(line)
        if SUMMARY_FILE:
            Path(SUMMARY_FILE).write_text("\n".join(suite.summary_lines()) + "\n")
