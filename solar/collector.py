"""Python's cyclic garbage collector around a batch of analyses (a definition's workloads, the
points of a sweep).

A workload's analysis keeps hundreds of thousands of objects alive at once (fx nodes, fake
tensors, the IR, the einsum graph), so CPython starts full collections during a batch, each
walking every object of the process: PyTorch's and torch._dynamo's (~300,000) and the Bounds
the batch has made so far. A library caller bounding the corpus's 248 workloads on one GPU
paid 5 such collections, 1.2 s of 12.5 s on a 2-core machine (``solar bound`` freezes the
imports first, :func:`~solar.definition.commandline.freeze_imports`, and a caller doing the
same still paid 10 smaller ones, 1.0 s, walking what the batch had made so far). With full
collections deferred to the batch's end the same batch paid none; the young generations'
collections, which walk new objects only, run as before (0.5 s over that batch).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: the oldest generation's threshold inside a batch: no full collection starts
DEFERRED = 1_000_000_000


@contextmanager
def full_collections_deferred() -> Iterator[None]:
    """Inside the block, no full collection starts on its own (the oldest generation's
    threshold raised); at its end the caller's thresholds are put back as they were, and
    nothing else of the collector is touched (enabled or not, frozen objects, the young
    generations' thresholds).

    What it costs: cyclic garbage of the batch's analyses that reached the oldest generation
    waits for the caller's next full collection (one instead of one every few workloads):
    +27 MB of peak memory over the corpus's 248 workloads. The collector is process-wide:
    another thread's full collections wait too while the block runs."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], DEFERRED)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
