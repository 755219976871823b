"""Pipeline stages: where to cut a program's kernel order, and what crosses each cut.

A pipeline plan of ``p`` stages cuts the kernel order into ``p`` contiguous ranges, one per
GPU (or per tensor-parallel group). A tensor made before a cut and read after it crosses the
cut: the stage that makes it sends it to the next (graph outputs stay where they are made,
graph inputs and weights are placed on every stage that reads them).

Cuts are chosen among the kernel boundaries that the least data crosses (between layers of a
stack: the residual stream and what every layer reads), balancing a per-kernel cost (compute
time plus the time to read the stage's weights, per GPU) by bisection on the bottleneck with
a greedy fill, which is optimal for contiguous ranges with positive costs. The bound of the
chosen cuts is exact for them (:mod:`solar.backend.parallel.model`); other cuts may be faster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import accumulate

from solar.graph.types import Graph

RESIDENT = ("input", "weight", "constant")


def crossings(
    g: Graph, sizes: Mapping[str, float], batch: set[str] = frozenset()
) -> tuple[list[float], list[float]]:
    """``(cross, cross_batch)``: per boundary ``c`` (between kernels ``c - 1`` and ``c``;
    index 0 unused) the per-GPU bytes that must cross it, and the part of them with a batch
    axis (it shrinks with micro-batches). A tensor made before the cut crosses it with what
    the kernels after the cut read of it: at least the largest of their footprints (a slice
    read later needs only its part sent)."""
    tensors = g.info.tensors
    kernels = g.info.kernels
    made: dict[str, int] = {}
    reads: dict[str, list[tuple[int, int]]] = {}
    for i, k in enumerate(kernels):
        for b in k.writes:
            made.setdefault(b, i)
        for b, nbytes in k.reads.items():
            reads.setdefault(b, []).append((i, nbytes))
    n = len(kernels)
    delta = [0.0] * (n + 1)
    delta_b = [0.0] * (n + 1)
    for b, i in made.items():
        info = tensors[b]
        if info.role in (*RESIDENT, "local") or not info.bytes:
            continue
        scale = sizes.get(b, info.bytes) / info.bytes
        later = sorted(((k, f) for k, f in reads.get(b, ()) if k > i), reverse=True)
        # from the last reader back: boundaries (k_prev, k] need the largest footprint read
        # at or after them
        need, upper = 0.0, None
        for k, f in later:
            if upper is not None and need:
                _add(delta, delta_b, b in batch, k + 1, upper + 1, need * scale)
            need = max(need, f)
            upper = k
        if upper is not None and need:
            _add(delta, delta_b, b in batch, i + 1, upper + 1, need * scale)
    cross = list(accumulate(delta[:n]))
    cross_b = list(accumulate(delta_b[:n]))
    return cross, cross_b


def _add(delta, delta_b, is_batch: bool, lo: int, hi: int, v: float) -> None:
    """Add ``v`` to boundaries ``lo .. hi-1``."""
    delta[lo] += v
    delta[hi] -= v
    if is_batch:
        delta_b[lo] += v
        delta_b[hi] -= v


def candidate_cuts(cross: Sequence[float], stages: int, slack: float = 0.01) -> list[int]:
    """Boundaries (1 .. n-1) the least data crosses (within ``slack`` of the least); all
    boundaries when there are too few of those for ``stages``."""
    inner = list(range(1, len(cross)))
    if not inner:
        return []
    least = min(cross[c] for c in inner)
    best = [c for c in inner if cross[c] <= least * (1 + slack) + 1e-9]
    return best if len(best) >= stages - 1 else inner


def partition(costs: Sequence[float], cuts: Sequence[int], stages: int) -> tuple[int, ...] | None:
    """The first kernel of each of ``stages`` contiguous ranges, cut only at ``cuts``, that
    minimise the largest sum of ``costs`` in a range; None when there are too few cuts."""
    if stages == 1:
        return (0,)
    cuts = sorted(set(cuts))
    if len(cuts) < stages - 1:
        return None
    prefix = [0.0, *accumulate(costs)]
    total = prefix[-1]

    def fill(limit: float) -> list[int] | None:
        """Greedy: extend each range to the last cut that keeps it within ``limit``."""
        starts, prev = [0], None
        for c in [*cuts, len(costs)]:
            if prefix[c] - prefix[starts[-1]] <= limit:
                prev = c
                continue
            if prev is None or prev == starts[-1] or prefix[c] - prefix[prev] > limit:
                return None
            starts.append(prev)
            prev = c
        return starts

    lo, hi = total / stages, total
    best = fill(hi)
    for _ in range(60):
        mid = (lo + hi) / 2
        got = fill(mid)
        if got is not None and len(got) <= stages:
            hi, best = mid, got
        else:
            lo = mid
    if best is None:
        return None
    return _spread(best, cuts, stages, prefix)


def _spread(starts: list[int], cuts: list[int], stages: int, prefix) -> tuple[int, ...] | None:
    """Split the costliest ranges at their best cut until there are ``stages`` ranges."""
    starts = list(starts)
    n = len(prefix) - 1
    while len(starts) < stages:
        bounds = [*starts, n]
        options = []
        for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
            inside = [c for c in cuts if a < c < b]
            if inside:
                c = min(inside, key=lambda c: max(prefix[c] - prefix[a], prefix[b] - prefix[c]))
                options.append((prefix[b] - prefix[a], i, c))
        if not options:
            return None
        _, _, c = max(options)
        starts = sorted([*starts, c])
    return tuple(starts)


def stage_paths(g: Graph, r: range) -> tuple[list[int], list[int]]:
    """``(to_next, to_end)``: the kernels of stage ``r`` that a micro-batch must pass on its way
    through: those that depend on what the stage receives (every kernel of the first stage)
    and that what it sends to the next stage (``to_next``), or that and its graph outputs
    (``to_end``), depend on. Other kernels (work on weights alone, side outputs) may run
    while other stages fill or drain the pipeline."""
    tensors = g.info.tensors
    kernels = g.info.kernels
    made: dict[str, int] = {}
    for i, k in enumerate(kernels):
        for b in k.writes:
            made.setdefault(b, i)
    later = {b for k in kernels[r.stop :] for b in k.reads}
    tainted: set[str] = set()
    after_arrival = []
    for i in r:
        k = kernels[i]
        received = any(
            made.get(b, i) < r.start and tensors[b].role not in (*RESIDENT, "local")
            for b in k.reads
        )
        if r.start == 0 or received or tainted & set(k.reads):
            after_arrival.append(i)
            tainted |= set(k.writes)
    sent = {b for i in r for b in kernels[i].writes if b in later}
    outputs = {b for i in r for b in kernels[i].writes if tensors[b].role == "output"}
    arrival = set(after_arrival)

    def feeding(targets: set[str]) -> list[int]:
        needed, out = set(targets), []
        for i in reversed(r):
            if needed & set(kernels[i].writes):
                needed |= set(kernels[i].reads)
                if i in arrival:
                    out.append(i)
        return sorted(out)

    return feeding(sent), feeding(sent | outputs)


def stage_ranges(starts: Sequence[int], n_kernels: int) -> list[range]:
    """Kernel ranges of the stages beginning at ``starts``."""
    bounds = [*starts, n_kernels]
    return [range(a, b) for a, b in zip(bounds, bounds[1:])]
