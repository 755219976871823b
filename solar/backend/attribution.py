"""How each bound level's time splits over the kernels (for per-kernel tables and plots).

A level's time is ``max(compute, DRAM bytes / bandwidth)``. When DRAM binds, a kernel's share
is its DRAM bytes at that level over the bandwidth (graph inputs charged to their first reader,
graph outputs to their last writer, cache-aware extra traffic to the node that forces it); when
a unit binds, the level's time is split in proportion to the kernels' time on that unit; when
latency binds (:mod:`solar.backend.latency`), in proportion to the kernels' latency floors (a
launch, their own critical path). Shares add up to the level's time exactly (the unfused
level: unless the program's critical path across kernels exceeds the sum of the kernels').
"""

from __future__ import annotations

from solar.backend.cache_aware import CacheAwareModel
from solar.backend.roofline import graph_ops
from solar.backend.units import compute_time
from solar.graph.types import graph_info, op_node
from solar.hw import load_spec


def spec_of(b, hw=None):
    """The HardwareSpec a Bound was computed on (``hw`` overrides)."""
    if hw is not None:
        return load_spec(hw)
    spec = getattr(b, "spec", None)
    if spec is not None:
        return spec
    try:
        return load_spec(b.hw_key)
    except ValueError as e:
        raise ValueError(
            f"cannot find the spec {b.hw_key!r} this bound was computed on; pass hw=<spec>"
        ) from e


def kernel_attribution(b, hw=None) -> list[dict]:
    """Per kernel: ``unfused_s`` (its own bound), ``fused_s`` and ``cache_aware_s`` (its share
    of those levels), ``fused_bytes`` and ``cache_aware_bytes`` (its share of their DRAM
    bytes). See the module docstring
    for the rule."""
    g = b.graph
    spec = spec_of(b, hw)
    kernels = graph_info(g).kernels
    index = {k.name: i for i, k in enumerate(kernels)}
    fio = graph_info(g).fused_io
    fused = [0.0] * len(kernels)
    for base, nbytes in fio.reads.items():
        i = next((j for j, k in enumerate(kernels) if base in k.reads), 0)
        fused[i] += nbytes
    for base, nbytes in fio.writes.items():
        hits = [j for j, k in enumerate(kernels) if base in k.writes]
        fused[hits[-1] if hits else len(kernels) - 1] += nbytes
    extra = [0.0] * len(kernels)
    ca = CacheAwareModel(g).at(spec.on_chip_capacity)
    for node, x in ca.extra.items():
        extra[index.get(op_node(g, node).kernel, 0)] += x
    per_unit = [compute_time(graph_ops(g, k.statements), spec).per_unit for k in kernels]

    def shares(time: float, by: str, nbytes: list[float]) -> list[float]:
        if by == "dram":
            return [x / spec.dram_bandwidth for x in nbytes]
        if by == "latency":  # in proportion to each kernel's launch floor / critical path
            w = [getattr(k, "latency_s", 0.0) for k in b.kernels]
        else:
            w = [pu.get(by, 0.0) for pu in per_unit]
        total = sum(w)
        if total <= 0:
            return [time / len(kernels)] * len(kernels)
        return [time * x / total for x in w]

    ca_bytes = [f + x for f, x in zip(fused, extra)]
    f_sh = shares(b.fused, b.fused_bound_by, fused)
    c_sh = shares(b.cache_aware, b.cache_aware_bound_by, ca_bytes)
    rows = []
    for i, k in enumerate(b.kernels):
        rows.append(
            {
                "kernel": k.name,
                "unfused_s": max(k.time_s, getattr(k, "latency_s", 0.0)),
                "fused_s": f_sh[i],
                "cache_aware_s": c_sh[i],
                "fused_bytes": fused[i],
                "cache_aware_bytes": ca_bytes[i],
            }
        )
    return rows
