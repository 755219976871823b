"""Violations (docs/validation.md): how a measurement that beats a bound is judged.

A measurement ``M`` violates a bound ``B`` when ``M < B * (1 - tol)`` (``tol`` = 1 % by
default: timer resolution and run-to-run noise). Each violation is explained by the first rule
that holds, using these numbers besides ``M`` and ``B``:

* ``C``, the compute part of the bound (ops of the busiest unit over its peak). No cache lowers
  it.
* ``F``, the *floor*: ``max(C, DRAM bytes no cache can serve / bandwidth)``. The L2 is flushed
  before every timed repetition, so a kernel's first reads of the program's inputs and
  weights (*cold* bytes) come from DRAM. What the L2 *could* serve is credited: at program
  level (fused, cache-aware) up to one L2 of the outputs may still sit in the L2 when the
  timer stops (write-back), so ``F = max(C, (bytes - min(L2, output bytes)) / BW)``; per
  kernel, and per kernel in the unfused sum, the kernel's inputs may be in the L2 where an
  earlier kernel left them and its outputs may stay there, so its term is
  ``max(C_k, max(cold_k, bytes_k - 2 L2) / BW)``. Without a flush nothing is cold.
* ``Lat``, the latency part (:mod:`solar.backend.latency`): at the fused and cache-aware
  levels the launch floor and the critical path of dependent steps; at the unfused level
  ``Σ_k max(F_k, latency_k)`` (each kernel at least one launch and its own critical path),
  and at least the program's critical path.
* validation: ``ir`` -- did the IR compute the program's outputs; ``code`` -- did the measured
  code compute the reference's outputs (a *candidate*; the source program is the reference).

Rules, first match wins:

1. ``not_doing_the_work`` / ``outputs`` -- the measured code's outputs differ from the
   reference: it does not compute the program.
2. ``bound_bug`` / ``ir_mismatch`` -- the IR's outputs differ from the program's: the bound is
   of another program (a frontend bug).
3. ``M < C`` (compute) -- the code ran more ops per second than the unit's peak. For a candidate:
   ``not_doing_the_work`` (it skipped work or computed in lower precision than the reference;
   the reference's IR validated, so the op count is the program's). For the source program
   itself: ``bound_bug`` (the op count, the unit or precision assigned, e.g. fp32 CUDA cores
   where the library used tf32, or the spec's peak is wrong).
4. ``M < F`` (bytes) -- faster than moving its cold bytes through DRAM at peak bandwidth. For a
   candidate: ``not_doing_the_work`` (it did not read its inputs: cached results, work outside
   the timed region). For the source: ``bound_bug`` (the kernel moved fewer bytes than our
   footprint claims possible: a footprint over-count, a too-low spec bandwidth, or a failed L2
   flush).
5. ``M < Lat`` (latency: the launch floors and the critical path of dependent steps, each
   kernel's term at least its cache floor in the unfused sum) -- for the source program:
   ``bound_bug`` (the spec's latency floors are above this GPU's, or the IR has more kernels
   than were launched); a candidate at the unfused level: ``cache_effect`` / ``launches`` (it
   launched fewer kernels than one per operator); at another level: ``not_doing_the_work``.
6. ``F <= M < B`` -- ``cache_effect``: the gap is bytes the L2 can serve, which the level
   deliberately does not credit (the unfused level assumes DRAM between kernels; the fused
   level counts output writes that may still be in the L2 when the timer stops). Neither
   the bound nor the code is wrong; the level's assumption does not hold for this measurement.

Each violation carries its evidence: ``M``, ``B``, ``C`` and its unit, ``F``, the bytes and the
cold bytes, the DRAM bandwidth and L2 size used, the validation outcomes.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from solar.backend.units import compute_time
from solar.fmt import fmt_bytes, fmt_time
from solar.frozen import Frozen

DEFAULT_TOL = 0.01


@dataclass(frozen=True)
class Floors:
    """What a violation is judged by (seconds, bytes): the bound ``bound_s``, its compute part
    ``compute_s`` on ``compute_unit``, the cache floor ``floor_s`` (see the module docstring),
    the DRAM bytes the bound charges and the cold bytes no cache can serve."""

    bound_s: float
    bound_by: str
    compute_s: float
    compute_unit: str
    floor_s: float
    bytes: float
    cold_bytes: float
    dram_bandwidth: float
    l2_bytes: float
    latency_s: float = 0.0  # launch floors and critical path (solar.backend.latency)


@dataclass(frozen=True)
class Violation(Frozen):
    """A measurement below a bound, with its classification and evidence."""

    scope: str  # "program" or "kernel"
    name: str  # program or kernel name(s)
    level: str  # "unfused", "fused", "cache_aware" or "kernel"
    measured_s: float
    bound_s: float
    kind: str  # "bound_bug", "not_doing_the_work" or "cache_effect"
    cause: str  # "outputs", "ir_mismatch", "compute", "bytes", "latency", "launches" or "l2"
    reason: str
    evidence: Mapping = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.measured_s / self.bound_s if self.bound_s else math.inf

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["ratio"] = self.ratio
        return d


def classify(
    measured_s: float,
    f: Floors,
    *,
    ir_ok: bool | None = None,
    code_ok: bool | None = None,
    candidate: bool = False,
    ir_reason: str | None = None,
    code_reason: str | None = None,
    level: str = "fused",
) -> tuple[str, str, str]:
    """``(kind, cause, reason)`` of a violation ``measured_s < f.bound_s`` (module docstring)."""
    m = measured_s
    if code_ok is False:
        return (
            "not_doing_the_work",
            "outputs",
            "the measured code's outputs differ from the reference"
            + (f" ({code_reason})" if code_reason else ""),
        )
    if ir_ok is False:
        return (
            "bound_bug",
            "ir_mismatch",
            "the IR's outputs differ from the program's"
            + (f" ({ir_reason})" if ir_reason else "")
            + ": the bound is of another program (a frontend bug)",
        )
    unverified = "" if ir_ok else " (the IR was not validated)"
    if m < f.compute_s * (1 - 1e-9):
        x = f.compute_s / m
        if candidate:
            return (
                "not_doing_the_work",
                "compute",
                f"ran in {fmt_time(m)}, but the program's {f.compute_unit} work needs "
                f">= {fmt_time(f.compute_s)} at peak ({x:.3g}x the peak rate): it skips work or "
                f"computes in lower precision than the reference{unverified}",
            )
        return (
            "bound_bug",
            "compute",
            f"the program's own code ran its {f.compute_unit} work at {x:.3g}x the unit's peak "
            f"({fmt_time(m)} < {fmt_time(f.compute_s)}): the op count, the unit or precision "
            f"assigned (e.g. fp32 where the library used tf32), or the spec's peak is "
            f"wrong{unverified}",
        )
    if m < f.floor_s * (1 - 1e-9):
        implied = f.cold_bytes / m if m > 0 else math.inf
        if candidate:
            return (
                "not_doing_the_work",
                "bytes",
                f"ran in {fmt_time(m)}, faster than reading its inputs once: "
                f">= {fmt_bytes(f.cold_bytes)} must come from DRAM after the L2 flush, "
                f">= {fmt_time(f.floor_s)} at {f.dram_bandwidth / 1e12:.3g} TB/s (implied "
                f"{implied / 1e12:.3g} TB/s): cached results or work outside the timed "
                f"region{unverified}",
            )
        return (
            "bound_bug",
            "bytes",
            f"moved fewer bytes than the footprint claims possible: >= "
            f"{fmt_bytes(f.cold_bytes)} that no cache can serve need >= {fmt_time(f.floor_s)} at "
            f"{f.dram_bandwidth / 1e12:.3g} TB/s, but it ran in {fmt_time(m)} (implied "
            f"{implied / 1e12:.3g} TB/s): a footprint over-count, a too-low spec bandwidth, "
            f"or the L2 flush failed{unverified}",
        )
    if m < f.latency_s * (1 - 1e-9):
        return _latency_violation(m, f, candidate, level, unverified)
    what = {
        "unfused": "the unfused level assumes every kernel reads and writes through DRAM",
        "kernel": "the per-kernel bound assumes the kernel reads and writes through DRAM",
    }.get(level, "the level counts output writes that may still be in the L2 when the timer stops")
    return (
        "cache_effect",
        "l2",
        f"{fmt_time(m)} is above the floor {fmt_time(f.floor_s)} that an L2 of "
        f"{fmt_bytes(f.l2_bytes)} allows for {fmt_bytes(f.bytes)}: {what}",
    )


def _latency_violation(m: float, f: Floors, candidate: bool, level: str, unverified: str):
    need = f">= {fmt_time(f.latency_s)} of launch floors and dependent steps"
    if candidate and level == "unfused":
        return (
            "cache_effect",
            "launches",
            f"ran in {fmt_time(m)}, below the unfused level's {need}: that level assumes one "
            "launch per source operator, run one after another; the code launched fewer",
        )
    if candidate:
        return (
            "not_doing_the_work",
            "latency",
            f"ran in {fmt_time(m)}, below the {need} any implementation takes: it skips "
            f"dependent work or runs outside the timed region{unverified}",
        )
    return (
        "bound_bug",
        "latency",
        f"the program's own code ran in {fmt_time(m)}, below the {need}: the spec's latency "
        "floors (kernel_launch, sm_sync) are above this GPU's (measure them with solar "
        f"calibrate), or the IR has more kernels than the program launched{unverified}",
    )


# ---------------------------------------------------------------------------------------------
# Facts of a bound the classification needs


@dataclass
class _KernelIO:
    reads: float
    writes: float
    cold: float


def _kernel_io(bound) -> list[_KernelIO]:
    """Per kernel: DRAM bytes read and written (the bound's) and cold bytes (first reads of
    inputs, weights and constants since the start of the program)."""
    return [_KernelIO(k.bytes_read, k.bytes_written, k.cold_bytes) for k in bound.kernels]


def _fused_io(bound) -> tuple[float, float]:
    """(bytes read, bytes written) of the fused level."""
    read = float(bound.bytes_fused_read)
    return read, float(bound.bytes_fused) - read


def _unit_of(flops: Mapping[str, float], spec) -> tuple[float, str]:
    try:
        ct = compute_time(flops, spec)
    except ValueError:
        return 0.0, "none"
    return ct.seconds, ct.bound_by


def _kernel_floors(bound, spec, idx: Sequence[int], io: Sequence[_KernelIO], flushed: bool):
    """Floors of the IR kernels ``idx`` measured together."""
    bw, l2 = spec.dram_bandwidth, float(spec.l2_capacity)
    ks = [bound.kernels[i] for i in idx]
    bound_s = sum(k.time_s for k in ks)
    compute = sum(k.compute_s for k in ks)
    flops: dict[str, float] = {}
    for k in ks:
        for c, n in k.flops.items():
            flops[c] = flops.get(c, 0) + n
    _, unit = _unit_of(flops, spec)
    nbytes = sum(io[i].reads + io[i].writes for i in idx)
    cold = sum(io[i].cold for i in idx) if flushed else 0.0
    floor_bytes = spec.dram_floor_bytes(cold, nbytes)
    by = max(ks, key=lambda k: k.time_s).bound_by if ks else "none"
    floor = max(compute, floor_bytes / bw)
    return Floors(bound_s, by, compute, unit, floor, nbytes, floor_bytes, bw, l2)


def _program_floors(bound, spec, level: str, io: Sequence[_KernelIO], flushed: bool) -> Floors:
    bw, l2 = spec.dram_bandwidth, float(spec.l2_capacity)
    lat = getattr(bound, "latency", None)
    if level == "unfused":
        terms = [_kernel_floors(bound, spec, [i], io, flushed) for i in range(len(bound.kernels))]
        compute = sum(t.compute_s for t in terms)
        units = [t.compute_unit for t in terms if t.compute_s > 0]
        unit = statistics.mode(units) if units else "none"
        latency = 0.0
        if lat is not None:
            per_kernel = [getattr(k, "latency_s", 0.0) for k in bound.kernels]
            latency = sum(max(t.floor_s, x) for t, x in zip(terms, per_kernel, strict=True))
            latency = max(latency, lat.critical_path_s) if any(per_kernel) else 0.0
        return Floors(
            bound.unfused,
            bound.unfused_bound_by,
            compute,
            unit,
            sum(t.floor_s for t in terms),
            float(bound.bytes_unfused),
            sum(t.cold_bytes for t in terms),
            bw,
            l2,
            latency,
        )
    per_unit = dict(bound.compute_s or {})
    unit = max(per_unit, key=per_unit.__getitem__) if per_unit else "none"
    compute = per_unit.get(unit, 0.0)
    if level == "fused":
        b, by, nbytes = bound.fused, bound.fused_bound_by, float(bound.bytes_fused)
    else:
        b, by, nbytes = (
            bound.cache_aware,
            bound.cache_aware_bound_by,
            float(bound.bytes_cache_aware),
        )
    _, writes = _fused_io(bound)
    cold = nbytes - min(l2, writes) if flushed else max(0.0, nbytes - 2 * l2)
    latency = lat.bounds.get(level, 0.0) if lat is not None else 0.0
    floor = max(compute, cold / bw)
    return Floors(b, by, compute, unit, floor, nbytes, cold, bw, l2, latency)
