"""How each bound level's time splits over the kernels (for per-kernel tables and plots).

A level's time is ``max(compute, DRAM bytes / bandwidth)``. When DRAM binds, a kernel's share
is its DRAM bytes at that level over the bandwidth (graph inputs charged to their first reader,
graph outputs to their last writer, cache-aware extra traffic to the node that forces it); when
a unit binds, the level's time is split in proportion to the kernels' time on that unit; when
latency binds (:mod:`solar.backend.latency`), in proportion to the kernels' latency floors (a
launch, their own critical path). Shares add up to the level's time exactly (the unfused
level: unless the program's critical path across kernels exceeds the sum of the kernels').

:func:`kernel_shares` runs inside the analysis (it reads the graph); the shares are stored on
each :class:`~solar.backend.result.KernelRow`, so a Bound loaded from JSON has them too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from solar.algebra.size import to_real
from solar.graph.types import Graph


@dataclass(frozen=True)
class KernelShare:
    """One kernel's share of the fused and cache-aware levels (seconds and DRAM bytes)."""

    fused_s: float
    cache_aware_s: float
    fused_bytes: float
    cache_aware_bytes: float
    cold_bytes: float  # first reads of inputs, weights and constants since the program began


def kernel_shares(
    g: Graph,
    spec,
    per_unit: Sequence[dict[str, float]],
    latency_s: Sequence[float],
    extra: dict[str, float],
    levels: dict[str, tuple[float, str]],
) -> list[KernelShare]:
    """Per kernel of ``g``: its shares (see the module docstring). ``per_unit``: each kernel's
    compute seconds per unit; ``latency_s``: its latency floor; ``extra``: cache-aware bytes
    beyond the fused ones per node; ``levels``: ``fused`` and ``cache_aware`` -> (seconds,
    bound by)."""
    info = g.info
    kernels = info.kernels
    n = len(kernels)
    if n == 0:
        return []
    first_reader: dict[str, int] = {}
    last_writer: dict[str, int] = {}
    for j in range(n - 1, -1, -1):  # backwards: the first reader is the last one assigned
        first_reader.update(dict.fromkeys(kernels[j].reads, j))
    for j, k in enumerate(kernels):
        last_writer.update(dict.fromkeys(k.writes, j))
    fio = info.fused_io
    counts: list[int] = [0] * n  # integer sums: a symbolic size keeps its expression
    for base, nbytes in fio.reads.items():
        counts[first_reader.get(base, 0)] += nbytes
    for base, nbytes in fio.writes.items():
        counts[last_writer.get(base, n - 1)] += nbytes
    fused = [to_real(x) for x in counts]
    index = {k.name: i for i, k in enumerate(kernels)}
    ca_bytes = list(fused)
    for node, x in extra.items():
        op = g.op(node)
        ca_bytes[index.get(op.kernel if op else None, 0)] += x

    def shares(time: float, by: str, nbytes: list[float]) -> list[float]:
        if by == "dram":
            return [x / spec.dram_bandwidth for x in nbytes]
        # latency: in proportion to each kernel's launch floor / critical path
        w = list(latency_s) if by == "latency" else [pu.get(by, 0.0) for pu in per_unit]
        total = sum(w)
        if total <= 0:
            return [time / n] * n
        return [time * x / total for x in w]

    f_sh = shares(*levels["fused"], fused)
    c_sh = shares(*levels["cache_aware"], ca_bytes)
    cold = _cold_bytes(g, first_reader)
    return [KernelShare(*row) for row in zip(f_sh, c_sh, fused, ca_bytes, cold, strict=True)]


def _cold_bytes(g: Graph, first_reader: dict[str, int]) -> list[float]:
    """Per kernel: bytes of its first reads of inputs, weights and constants (what a device
    measurement after a cache flush must fetch from DRAM; :mod:`solar.gpu.violations`)."""
    info = g.info
    kernels = info.kernels
    out: list[int] = [0] * len(kernels)
    for t, tensor in info.tensors.items():
        j = first_reader.get(t)
        if j is not None and tensor.role in ("input", "weight", "constant"):
            out[j] += kernels[j].reads[t]
    return [to_real(x) for x in out]


def kernel_attribution(b) -> list[dict]:
    """Per kernel of a Bound: ``unfused_s`` (its own bound), ``fused_s`` and
    ``cache_aware_s`` (its share of those levels), ``fused_bytes`` and ``cache_aware_bytes``
    (its share of their DRAM bytes), as stored by the analysis."""
    return [
        {
            "kernel": k.name,
            "unfused_s": k.unfused_s,
            "fused_s": k.fused_s,
            "cache_aware_s": k.cache_aware_s,
            "fused_bytes": k.fused_bytes,
            "cache_aware_bytes": k.cache_aware_bytes,
        }
        for k in b.kernels
    ]
