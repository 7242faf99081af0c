"""test_tpch_flink.py needs PyFlink 2.3 and a JVM: it is collected only when
DELTAFLOW_FLINK_PYTHON names the PyFlink interpreter (``make tpch-flink`` sets it)."""

from __future__ import annotations

import os

collect_ignore = [] if os.environ.get("DELTAFLOW_FLINK_PYTHON") else ["test_tpch_flink.py"]
