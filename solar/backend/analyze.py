"""Assemble the three bounds of docs/bounds.md for one einsum graph and one hardware spec."""

from __future__ import annotations

import networkx as nx

from solar.algebra.total import sum_times
from solar.backend.assumptions import Assumption, note, sfu_emulation
from solar.backend.attribution import kernel_shares
from solar.backend.cache_aware import CacheAwareModel
from solar.backend.latency import latency_bound, unfused_bound_by
from solar.backend.memory import peak_memory
from solar.backend.narrow import recharge_narrow
from solar.backend.phases import phase_split
from solar.backend.result import Bound, KernelRow
from solar.backend.roofline import fused_bytes, graph_ops, kernel_times
from solar.backend.units import compute_time
from solar.graph.types import graph_info, op_nodes
from solar.ir.dtypes import is_complex
from solar.ir.extern import routine_assumptions


def _level(compute, nbytes: float, spec) -> tuple[float, str]:
    memory = nbytes / spec.dram_bandwidth
    if memory >= compute.seconds:
        return memory, "dram"
    return compute.seconds, compute.bound_by


def analyze(g: nx.MultiDiGraph, spec, *, notes: list[str] | None = None) -> Bound:
    """Unfused, fused and cache-aware bounds of graph ``g`` on ``spec``, with everything a
    view needs (kernel shares, the cache-aware model, the spec's figures, the assumptions
    as records): the Bound keeps no reference to ``g`` or ``spec``."""
    narrow = recharge_narrow(g)
    kernels = kernel_times(g, spec)
    ops = graph_ops(g)
    compute = compute_time(ops, spec)
    fused_b = fused_bytes(g)
    fused, fused_by = _level(compute, fused_b, spec)
    model = CacheAwareModel(g)
    ca = model.at(spec.on_chip_capacity)
    cache_aware, cache_by = _level(compute, ca.bytes, spec)
    unfused = sum_times(k.time_s for k in kernels)
    unfused_bytes = sum(k.bytes_read + k.bytes_written for k in kernels)
    per_unit: dict[str, list[float]] = {}  # per unit: 0.0, then its kernels' times, in order
    for k in kernels:
        per_unit.setdefault(k.bound_by, [0.0]).append(k.time_s)
    by_level = {by: sum_times(ts, in_order=True) for by, ts in per_unit.items()}
    unfused_by = max(by_level, key=by_level.__getitem__) if by_level else "none"
    throughput = {"unfused": unfused, "fused": fused, "cache_aware": cache_aware}
    lat = latency_bound(g, spec, kernels, throughput)
    if lat.binds("unfused"):
        unfused_by = unfused_bound_by(kernels, lat.kernel_s, lat.critical_path_s)
    fused_by = "latency" if lat.binds("fused") else fused_by
    cache_by = "latency" if lat.binds("cache_aware") else cache_by
    unfused, fused, cache_aware = (lat.final[lv] for lv in ("unfused", "fused", "cache_aware"))

    assumptions = _assumptions(g, spec, kernels, model, ca, narrow)
    assumptions.extend(note(a, "latency") for a in lat.assumptions())
    assumptions.extend(note(a, "spec") for a in spec.notes)  # a what-if GPU: what changed
    assumptions.extend(note(a, "trace") for a in notes or [])
    shares = kernel_shares(
        g,
        spec,
        [k.compute.per_unit for k in kernels],
        lat.kernel_s,
        ca.extra,
        {"fused": (fused, fused_by), "cache_aware": (cache_aware, cache_by)},
    )
    rows = [
        KernelRow(
            name=k.name,
            op=k.op,
            source=k.source,
            module=k.module,
            flops=k.ops,
            bytes_read=k.bytes_read,
            bytes_written=k.bytes_written,
            compute_s=k.compute.seconds,
            memory_s=k.memory_s,
            time_s=k.time_s,
            bound_by=k.bound_by,
            exact=k.exact,
            phase=src.phase,
            origin=src.origin,
            latency_s=latency_s,
            fused_s=share.fused_s,
            cache_aware_s=share.cache_aware_s,
            fused_bytes=share.fused_bytes,
            cache_aware_bytes=share.cache_aware_bytes,
            cold_bytes=share.cold_bytes,
        )
        for k, src, latency_s, share in zip(
            kernels, graph_info(g).kernels, lat.kernel_s, shares, strict=True
        )
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
        bytes_fused_read=sum(graph_info(g).fused_io.reads.values()),
        compute_s=compute.per_unit,
        kernels=rows,
        assumption_records=assumptions,
        memory=peak_memory(g),
        phases=phase_split(rows, spec),
        dram_capacity=spec.dram_capacity,
        latency=lat,
        gpu=spec.to_dict(),
        rates_used=dict(compute.rates_used),
        cache_model=model,
    )


def _assumptions(g, spec, kernels, model, ca, narrow: list[str]) -> list[Assumption]:
    """The records of what the bounds assume (their sentences: :mod:`.assumptions`)."""
    rates = sorted({r for k in kernels for r in k.compute.rates_used.values()})
    out = [
        Assumption(
            "peaks",
            {
                "sm_count": spec.sm_count,
                "max_clock_hz": spec.max_clock_hz,
                "peaks": {r: spec.peak(r) for r in rates},
            },
        ),
        Assumption("dram", {"bandwidth": spec.dram_bandwidth, "spec_notes": bool(spec.notes)}),
        Assumption("unfused"),
        Assumption("fused"),
        Assumption(
            "cache_aware",
            {
                "capacity": spec.on_chip_capacity,
                "sm_count": spec.sm_count,
                "rules": sorted(set(ca.rules.values())) if ca.extra else [],
                "extra_bytes": ca.bytes - model.fused,
            },
        ),
        sfu_emulation(),
        Assumption("peak_memory"),
    ]
    fallbacks = {
        cls: r for k in kernels for cls, r in k.compute.rates_used.items() if not r.startswith(cls)
    }
    if fallbacks:
        out.append(Assumption("fallback", {"units": fallbacks}))
    precisions = sorted({d.precision for d in op_nodes(g) if d.precision})
    if precisions:
        out.append(Assumption("precision", {"precisions": precisions}))
    if not all(k.exact for k in kernels) or not graph_info(g).fused_io.exact:
        out.append(Assumption("footprints"))
    out.extend(note(a, "narrow") for a in narrow)
    routines = {d.extern for d in op_nodes(g) if d.extern}
    out.extend(note(a, "routine") for a in routine_assumptions(routines))
    if any(is_complex(t.dtype) for t in graph_info(g).tensors.values()):
        out.append(Assumption("complex"))
    return out
