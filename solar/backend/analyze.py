"""Assemble the three bounds of docs/bounds.md for one einsum graph and one hardware spec.

:data:`PIPELINE` declares the passes (:mod:`solar.backend.passes`) in order, each reading the
graph, the spec and the facts of the passes before it; :func:`analyze` runs them and folds
their facts into a frozen :class:`~solar.backend.result.Bound`. The graph it is given is left
as it is: the narrow-format recharge makes a new graph that the later passes read.
"""

from __future__ import annotations

from collections.abc import Sequence

from solar.algebra.total import sum_times
from solar.backend.assumptions import Assumption, energy_assumptions, note, sfu_emulation
from solar.backend.attribution import kernel_shares
from solar.backend.cache_aware import CacheAwareModel
from solar.backend.energy import energy_floor
from solar.backend.latency import latency_bound, unfused_bound_by
from solar.backend.levels import BoundBy, Level
from solar.backend.memory import peak_memory
from solar.backend.narrow import recharge_narrow
from solar.backend.passes import Analysis, Pass, check_pipeline, run
from solar.backend.phases import phase_split
from solar.backend.result import Bound, KernelRow
from solar.backend.roofline import fused_bytes, graph_ops, kernel_times
from solar.backend.units import compute_time
from solar.graph.types import Graph


def _level(compute, nbytes: float, spec) -> tuple[float, str]:
    """A fused level's roofline: (time, what binds it)."""
    memory = nbytes / spec.dram_bandwidth
    if memory >= compute.seconds:
        return memory, BoundBy.DRAM
    return compute.seconds, compute.bound_by


def _throughput(a: Analysis) -> dict:
    """The three levels' throughput bounds (before latency) and what binds each."""
    spec, kernels, compute = a.spec, a["rooflines"], a["compute"]
    unfused = sum_times(k.time_s for k in kernels)
    fused, fused_by = _level(compute, a["fused_bytes"], spec)
    ca = a["cache_aware"]
    cache_aware, cache_by = _level(compute, ca.bytes, spec)
    per_unit: dict[str, list[float]] = {}  # per unit: 0.0, then its kernels' times, in order
    for k in kernels:
        per_unit.setdefault(k.bound_by, [0.0]).append(k.time_s)
    by_level = {by: sum_times(ts, in_order=True) for by, ts in per_unit.items()}
    unfused_by = max(by_level, key=by_level.__getitem__) if by_level else BoundBy.NONE
    return {
        Level.UNFUSED: (unfused, unfused_by),
        Level.FUSED: (fused, fused_by),
        Level.CACHE_AWARE: (cache_aware, cache_by),
    }


def _latency(a: Analysis):
    times = {level: t for level, (t, _) in a["throughput"].items()}
    return latency_bound(a.graph, a.spec, a["rooflines"], times)


def _levels(a: Analysis) -> dict:
    """Each level's final time (latency included) and what binds it."""
    lat, kernels = a["latency"], a["rooflines"]
    out = {}
    for level, (_, by) in a["throughput"].items():
        if lat.binds(level):
            by = (
                unfused_bound_by(kernels, lat.kernel_s, lat.critical_path_s)
                if level == Level.UNFUSED
                else BoundBy.LATENCY
            )
        out[level] = (lat.final[level], by)
    return out


def _shares(a: Analysis) -> list:
    levels = a["levels"]
    return kernel_shares(
        a.graph,
        a.spec,
        [k.compute.per_unit for k in a["rooflines"]],
        a["latency"].kernel_s,
        a["cache_aware"].extra,
        {lv: levels[lv] for lv in (Level.FUSED, Level.CACHE_AWARE)},
    )


def _energy(a: Analysis):
    """Each level's energy floor (:mod:`solar.backend.energy`) from its work, DRAM bytes and
    time."""
    kernels, levels = a["rooflines"], a["levels"]
    nbytes = {
        Level.UNFUSED: sum(k.bytes_read + k.bytes_written for k in kernels),
        Level.FUSED: a["fused_bytes"],
        Level.CACHE_AWARE: a["cache_aware"].bytes,
    }
    times = {lv: t for lv, (t, _) in levels.items()}
    return energy_floor(a.spec, a["ops"], a["compute"].rates_used, nbytes, times)


#: The bound's passes, in order: each a graph pass (a new graph) or a fact pass (one fact).
PIPELINE: tuple[Pass, ...] = (
    Pass("narrow", lambda a: recharge_narrow(a.graph), graph=True),
    Pass("rooflines", lambda a: kernel_times(a.graph, a.spec)),
    Pass("ops", lambda a: graph_ops(a.graph)),
    Pass("compute", lambda a: compute_time(a["ops"], a.spec), reads=("ops",)),
    Pass("fused_bytes", lambda a: fused_bytes(a.graph)),
    Pass("cache_model", lambda a: CacheAwareModel(a.graph)),
    Pass(
        "cache_aware",
        lambda a: a["cache_model"].at(a.spec.on_chip_capacity),
        reads=("cache_model",),
    ),
    Pass(
        "throughput",
        _throughput,
        reads=("rooflines", "compute", "fused_bytes", "cache_aware"),
    ),
    Pass("latency", _latency, reads=("throughput", "rooflines")),
    Pass("levels", _levels, reads=("throughput", "latency", "rooflines")),
    Pass("shares", _shares, reads=("levels", "rooflines", "latency", "cache_aware")),
    Pass("memory", lambda a: peak_memory(a.graph)),
    Pass(
        "energy",
        _energy,
        reads=("rooflines", "levels", "ops", "compute", "fused_bytes", "cache_aware"),
    ),
    Pass(
        "assumptions",
        lambda a: _assumptions(a),
        reads=("narrow", "rooflines", "cache_model", "cache_aware", "latency", "energy"),
    ),
)
check_pipeline(PIPELINE)


def analyze(g: Graph, spec, *, notes: Sequence[str] | None = None) -> Bound:
    """Unfused, fused and cache-aware bounds of graph ``g`` on ``spec``, with everything a
    view needs (kernel shares, the cache-aware model, the spec's figures, the assumptions
    as records): the Bound keeps no reference to ``g`` or ``spec``."""
    a = run(PIPELINE, Analysis(g, spec, tuple(notes or ())))
    return _bound(a)


def _bound(a: Analysis) -> Bound:
    """Fold the pipeline's facts into the Bound."""
    g, spec, kernels, lat = a.graph, a.spec, a["rooflines"], a["latency"]
    levels, compute, ca = a["levels"], a["compute"], a["cache_aware"]
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
            kernels, g.info.kernels, lat.kernel_s, a["shares"], strict=True
        )
    ]
    (unfused, unfused_by), (fused, fused_by), (cache_aware, cache_by) = (
        levels[lv] for lv in (Level.UNFUSED, Level.FUSED, Level.CACHE_AWARE)
    )
    return Bound(
        program=g.info.name,
        hw=spec.name,
        hw_key=spec.key,
        unfused=unfused,
        fused=fused,
        cache_aware=cache_aware,
        unfused_bound_by=unfused_by,
        fused_bound_by=fused_by,
        cache_aware_bound_by=cache_by,
        flops=a["ops"],
        bytes_unfused=sum(k.bytes_read + k.bytes_written for k in kernels),
        bytes_fused=a["fused_bytes"],
        bytes_cache_aware=ca.bytes,
        bytes_fused_read=sum(g.info.fused_io.reads.values()),
        compute_s=compute.per_unit,
        kernels=rows,
        assumption_records=a["assumptions"],
        memory=a["memory"],
        phases=phase_split(rows, spec),
        dram_capacity=spec.dram_capacity,
        latency=lat,
        gpu=spec.to_dict(),
        rates_used=dict(compute.rates_used),
        cache_model=a["cache_model"],
        energy=a["energy"],
    )


def _assumptions(a: Analysis) -> list[Assumption]:
    """The records of what the bounds assume (their sentences: :mod:`.assumptions`)."""
    g, spec, kernels = a.graph, a.spec, a["rooflines"]
    model, ca = a["cache_model"], a["cache_aware"]
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
    precisions = sorted({d.precision for d in g.ops() if d.precision})
    if precisions:
        out.append(Assumption("precision", {"precisions": precisions}))
    if not all(k.exact for k in kernels) or not g.info.fused_io.exact:
        out.append(Assumption("footprints"))
    out.extend(note(n, "narrow") for n in a["narrow"].notes)
    out.extend(note(n, "routine") for n in g.info.routine_notes)
    if g.info.complex:
        out.append(Assumption("complex"))
    out.extend(note(n, "latency") for n in a["latency"].assumptions())
    out.extend(energy_assumptions(a["energy"]))
    out.extend(note(n, "spec") for n in spec.notes)  # a what-if GPU: what changed
    out.extend(note(n, "trace") for n in a.notes)
    return out
