from __future__ import annotations

import pytest

from deltaflow.processor.runtime.base import RuntimeContext
from deltaflow.state.backend import StateBackend


@pytest.fixture
def backend(tmp_path):
    """A real LMDB state backend in a fresh directory."""
    b = StateBackend(tmp_path / "state")
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def ctx():
    return RuntimeContext()
