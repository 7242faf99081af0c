"""The bench package (``bench/``, beside the deltaflow package) on the import path."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench.handoff, bench.second_core
