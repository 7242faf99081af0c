"""The garbage collector while a job runs."""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def quiet_collector(young: int = 200_000):
    """The loop allocates rows and tuples by the million and reference counting frees
    them; the cyclic collector's young-generation pass every 700 allocations (Python's
    default) costs 10-15% of a batch for nothing. While the job runs, the objects made
    before it (modules, plan, compiled code) are frozen out of its scans and the pass
    runs every ``young`` allocations; both are restored afterwards.

    A young pass costs about its survivors (the kept rows, index lists and memo entries
    of the job's state, scanned once before they age), so fewer, larger passes let more of
    a batch's short-lived objects die first: W3 at 1M orders in one process spent 0.86-0.90
    s in 24-27 young passes at 50,000 and 0.38-0.49 s in 2-6 at 200,000 to 500,000, with
    the same peak RSS; 200,000 keeps each pass near 0.1 s (docs/PERFORMANCE.md, issue 19,
    fifth pass)."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(young, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
