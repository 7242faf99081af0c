"""The garbage collector while a job runs."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

# Seconds between full collections of a running job (see ``JobCollector``).
FULL_COLLECTION_S = 600.0


class JobCollector:
    """The cyclic collector's settings for a job's run, restored when it ends.

    The loop allocates rows and tuples by the million and reference counting frees
    them; what a batch leaves alive is the job's state (kept rows, index lists, memo
    and cache entries), and the job makes no reference cycles of its own. Python's
    collector would still scan every such object at least twice (a young pass, then
    the middle generation's) at a cost that grows with the state: W3R at 1M orders
    spent 1.4-1.8 s in 9-12 young passes of 130-150 ms each, q7 1.2-1.9 s (issue 19,
    seventh pass, docs/PERFORMANCE.md).

    So ``settle``, called after each batch, freezes what the batch left alive
    (``gc.freeze``: the objects move to the permanent generation, which the collector
    never scans, and the young count starts again from 0; it is a list splice, not a
    pass over the objects). A young pass then only runs within a batch that keeps more
    than ``young`` new objects alive, and only over that batch's objects. Frozen
    objects are still freed by reference counting as soon as nothing holds them.
    Every ``full_every_s`` seconds ``settle`` runs one full collection over
    everything first, so a cycle made by library code (an exception's traceback, a
    client callback) is freed within that time rather than never. A bench run of the
    W-workloads found 175-233 objects in cycles at the end of a whole run.
    """

    def __init__(
        self,
        young: int = 200_000,
        full_every_s: float = FULL_COLLECTION_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.young = young
        self.full_every_s = full_every_s
        self.clock = clock
        self.full_collections = 0
        self._before = gc.get_threshold()
        self._next_full = 0.0

    def __enter__(self) -> JobCollector:
        self._before = gc.get_threshold()
        gc.freeze()  # the modules, the plan and the compiled code
        gc.set_threshold(self.young, *self._before[1:])
        self._next_full = self.clock() + self.full_every_s
        return self

    def settle(self) -> None:
        """After a batch: freeze what it left alive (a full collection first, when due)."""
        if self.clock() >= self._next_full:
            gc.unfreeze()
            gc.collect()
            self.full_collections += 1
            self._next_full = self.clock() + self.full_every_s
        gc.freeze()

    def __exit__(self, *exc: object) -> None:
        gc.set_threshold(*self._before)
        gc.unfreeze()
