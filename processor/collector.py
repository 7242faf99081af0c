"""The garbage collector while a job runs."""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def quiet_collector(young: int = 50_000):
    """The loop allocates rows and tuples by the million and reference counting frees
    them; the cyclic collector's young-generation pass every 700 allocations (Python's
    default) costs 10-15% of a batch for nothing. While the job runs, the objects made
    before it (modules, plan, compiled code) are frozen out of its scans and the pass
    runs every ``young`` allocations; both are restored afterwards."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(young, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
