"""Python's cyclic garbage collector, tuned by the processes that own it: the command line's
commands, the benchmark, the batch executors' worker processes. The collector is
process-wide (its thresholds, on or off, its frozen objects), so a library call never
changes it: ``solar.bound``, ``bound_definition``, a sweep's ``values`` and ``along`` run
under whatever collector their caller has. These are the entry points' tools.

Why tune it at all: a workload's analysis keeps hundreds of thousands of objects alive at
once (fx nodes, fake tensors, the IR, the einsum graph), so CPython starts full collections
during a batch, each walking every object of the process: PyTorch's and torch._dynamo's
(~300,000) and the Bounds the batch has made so far. A caller bounding the corpus's 248
workloads on one GPU with the collector as it comes paid 5 such collections, 1.2 s of 12.5 s
on a 2-core machine (``solar bound`` freezes the imports first,
:func:`solar.cli.targets.definitions.freeze_imports`, and with only that it still paid 10
smaller ones, 1.0 s, walking what the batch had made so far). With full collections deferred
to the batch's end (:func:`full_collections_deferred`) the same batch paid none; the young
generations' collections, which walk new objects only, run as before (0.5 s over that batch).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager

#: the oldest generation's threshold inside a batch: no full collection starts
DEFERRED = 1_000_000_000

#: environment variable: ``1`` pauses the collector for each analysis of an entry point
PAUSE_GC = "SOLAR_PAUSE_GC"


@contextmanager
def full_collections_deferred() -> Iterator[None]:
    """Inside the block, no full collection starts on its own (the oldest generation's
    threshold raised); at its end the thresholds are put back as they were, and nothing else
    of the collector is touched (enabled or not, frozen objects, the young generations'
    thresholds). For an entry point's batch (a command, a worker process's task).

    What it costs: cyclic garbage of the batch's analyses that reached the oldest generation
    waits for the next full collection after the block (one instead of one every few
    workloads): +27 MB of peak memory over the corpus's 248 workloads."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], DEFERRED)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def pause_gc_wanted(default: bool = False) -> bool:
    """Whether an entry point pauses the collector for its analysis: ``SOLAR_PAUSE_GC``
    (``1`` or ``0``) when set, else ``default``."""
    value = os.environ.get(PAUSE_GC, "").strip()
    return default if value == "" else value not in ("0", "false", "no")


@contextmanager
def gc_paused(default: bool = False) -> Iterator[None]:
    """Pause the collector for the block where asked (:func:`pause_gc_wanted`): with
    ``SOLAR_PAUSE_GC=1`` in the environment, or ``default=True`` (``solar bound FILE``, whose
    process is its own). A collector its owner turned off stays off.

    What the pause saves: an analysis keeps hundreds of thousands of objects alive at once
    (fx nodes and fake tensors, the IR, the einsum graph), CPython starts a full collection
    whenever those promoted to its oldest generation exceed a quarter of it, and each full
    collection walks every object of the process (0.15-0.4 s with a framework imported). The
    library keeps its own share small (equal Affines, index tuples and Dims are one object
    each; the structure cache's keys and facts are strings and tuples of numbers, which the
    collector does not track). Full collections during ``solar.bound`` in a fresh process
    (``python -m solar.bench`` models, after building the model; the bare make_fx trace's in
    brackets): GPT-2 small 0 (0), LLaMA-7B 1 (1), LLaMA-70B 3 (1), a LLaMA-7B training step
    4 (2). Paused → on, on the project's 2-core machine: GPT-2 small 0.42 → 0.42 s, LLaMA-7B
    1.66 → 1.80 s. The objects are collected once the block is done."""
    with paused(pause_gc_wanted(default)):
        yield


@contextmanager
def paused(pause: bool = True) -> Iterator[None]:
    """The collector off for the block when ``pause`` (and it is on), on again after."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
