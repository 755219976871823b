"""Assemble the three bounds of docs/bounds.md for one einsum graph and one hardware spec."""

from __future__ import annotations

import networkx as nx

from solar.backend.cache_aware import cache_aware_bytes
from solar.backend.latency import latency_bound, unfused_bound_by
from solar.backend.memory import peak_memory
from solar.backend.narrow import recharge_narrow
from solar.backend.phases import phase_split
from solar.backend.result import Bound, KernelRow
from solar.backend.roofline import fused_bytes, graph_ops, kernel_times
from solar.backend.units import compute_time
from solar.fmt import fmt_bytes
from solar.graph.types import graph_info, op_nodes
from solar.ir.dtypes import is_complex
from solar.ir.extern import routine_assumptions


def _level(compute, nbytes: float, spec) -> tuple[float, str]:
    memory = nbytes / spec.dram_bandwidth
    if memory >= compute.seconds:
        return memory, "dram"
    return compute.seconds, compute.bound_by


def analyze(g: nx.MultiDiGraph, spec, *, notes: list[str] | None = None) -> Bound:
    """Unfused, fused and cache-aware bounds of graph ``g`` on ``spec``."""
    narrow = recharge_narrow(g)
    kernels = kernel_times(g, spec)
    ops = graph_ops(g)
    compute = compute_time(ops, spec)
    fused_b = fused_bytes(g)
    fused, fused_by = _level(compute, fused_b, spec)
    capacity = spec.on_chip_capacity
    ca = cache_aware_bytes(g, capacity)
    cache_aware, cache_by = _level(compute, ca.bytes, spec)
    unfused = sum(k.time_s for k in kernels)
    unfused_bytes = sum(k.bytes_read + k.bytes_written for k in kernels)
    by_level = {}
    for k in kernels:
        by_level[k.bound_by] = by_level.get(k.bound_by, 0.0) + k.time_s
    unfused_by = max(by_level, key=by_level.__getitem__) if by_level else "none"
    throughput = {"unfused": unfused, "fused": fused, "cache_aware": cache_aware}
    lat = latency_bound(g, spec, kernels, throughput)
    if lat.binds("unfused"):
        unfused_by = unfused_bound_by(kernels, lat.kernel_s, lat.critical_path_s)
    fused_by = "latency" if lat.binds("fused") else fused_by
    cache_by = "latency" if lat.binds("cache_aware") else cache_by
    unfused, fused, cache_aware = (lat.final[lv] for lv in ("unfused", "fused", "cache_aware"))

    rates = sorted({r for k in kernels for r in k.compute.rates_used.values()})
    assumptions = [
        f"peaks: per-SM per-clock dense rates x {spec.sm_count} SMs x max boost clock "
        f"{spec.max_clock_hz / 1e6:.0f} MHz ({', '.join(f'{r} {spec.peak(r) / 1e12:.1f} T/s' for r in rates)}); "  # noqa: E501
        "an FMA counts 2 flops and CUDA-core ops are assumed to pair into FMAs",
        f"DRAM bandwidth {spec.dram_bandwidth / 1e12:.3g} TB/s "
        + ("(the spec's peak; see its notes below)" if spec.notes else "(datasheet peak)"),
        "unfused: one kernel per source operator, each reading its inputs and writing its "
        "outputs once through DRAM, no cache reuse between kernels",
        "fused: one pass over graph inputs, weights and outputs; intermediates stay on chip",
        f"cache-aware: on-chip capacity {fmt_bytes(capacity)} = L2 + {spec.sm_count} SMs x "
        "(combined L1/shared memory + registers); traffic forced by that capacity, from proven I/O "
        "lower bounds "
        + (
            f"({', '.join(sorted(set(ca.rules.values())))}) adds {fmt_bytes(ca.bytes - fused_b)}"
            if ca.extra
            else "(none binding at this capacity)"
        ),
        "SFU work may be emulated on the FMA pipe at 8 flops per op where that is faster",
        "peak memory: live bytes in the traced kernel order (inputs and weights resident, "
        "every other tensor from the first kernel touching it to the last reading it); "
        "allocator overhead, library workspaces and the CUDA context come on top",
    ]
    fallbacks = {
        cls: r for k in kernels for cls, r in k.compute.rates_used.items() if not r.startswith(cls)
    }
    if fallbacks:
        assumptions.append(
            "no native unit, ran on: " + ", ".join(f"{c} -> {r}" for c, r in fallbacks.items())
        )
    precisions = sorted({d.precision for d in op_nodes(g) if d.precision})
    if precisions:
        assumptions.append(f"fp32 contractions run as: {', '.join(precisions)}")
    if not all(k.exact for k in kernels) or not graph_info(g).fused_io.exact:
        assumptions.append("some footprints are proven lower bounds, not exact counts (marked ≥)")
    assumptions.extend(narrow)
    routines = {d.extern for d in op_nodes(g) if d.extern}
    assumptions.extend(routine_assumptions(routines))
    if any(is_complex(t.dtype) for t in graph_info(g).tensors.values()):
        assumptions.append(
            "complex arithmetic in real operations: a complex multiply 4 multiplies and 2 adds, "
            "a complex contraction 3 real multiply-adds per product (the 3M algorithm)"
        )
    assumptions.extend(lat.assumptions())
    assumptions.extend(spec.notes)  # a what-if GPU: what changed, which figures were dropped
    assumptions.extend(notes or [])
    rows = [
        KernelRow(
            k.name,
            k.op,
            k.source,
            k.module,
            k.ops,
            k.bytes_read,
            k.bytes_written,
            k.compute.seconds,
            k.memory_s,
            k.time_s,
            k.bound_by,
            k.exact,
            src.phase,
            src.origin,
            latency_s,
        )
        for k, src, latency_s in zip(kernels, graph_info(g).kernels, lat.kernel_s, strict=True)
    ]
    return Bound(
        program=graph_info(g).name,
        hw=spec.name,
        hw_key=spec.key,
        unfused=unfused,
        fused=fused,
        cache_aware=cache_aware,
        unfused_bound_by=unfused_by,
        fused_bound_by=fused_by,
        cache_aware_bound_by=cache_by,
        flops=ops,
        bytes_unfused=unfused_bytes,
        bytes_fused=fused_b,
        bytes_cache_aware=ca.bytes,
        compute_s=compute.per_unit,
        kernels=rows,
        assumptions=assumptions,
        memory=peak_memory(g),
        phases=phase_split(rows, spec),
        dram_capacity=spec.dram_capacity,
        latency=lat,
        graph=g,
        spec=spec,
    )
