"""Headroom and violations (DESIGN.md §7): measure a program, bound it, compare.

``headroom = measured / bound`` for each bound level (unfused, fused, cache-aware) against the
program's measured time (median, CUDA events, L2 flushed before each repetition), and for each
IR kernel against its device time from ``torch.profiler`` (see :mod:`solar.gpu.measure`).

Violations and how they are classified
--------------------------------------
A measurement ``M`` violates a bound ``B`` when ``M < B * (1 - tol)`` (``tol`` = 1 % by
default: timer resolution and run-to-run noise). Each violation is explained by the first rule
that holds, using three numbers besides ``M`` and ``B``:

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
5. ``F <= M < B`` -- ``cache_effect``: the gap is bytes the L2 can serve, which the level
   deliberately does not credit (the unfused level assumes DRAM between kernels; the fused
   level counts output writes that may still be in the L2 when the timer stops). Neither
   the bound nor the code is wrong; the level's assumption does not hold for this measurement.

Each violation carries its evidence: ``M``, ``B``, ``C`` and its unit, ``F``, the bytes and the
cold bytes, the DRAM bandwidth and L2 size used, the validation outcomes.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from solar.gpu.measure import (
    DeviceInfo,
    KernelMapping,
    Timing,
    device_info,
    map_reps,
    profile_events,
    resolve_hw,
    time_fn,
)
from solar.gpu.score import sol_score
from solar.gpu.validate import (
    OutputCheck,
    Subject,
    ValidationReport,
    _free,
    _jsonable,
    _line,
    _render,
    compare,
    discover,
    load_real_problem,
    make_subject,
    progress,
    tolerance,
    validate_subject,
)
from solar.report import fmt_bytes, fmt_time

__all__ = [
    "BATCH_SCHEMA",
    "LEVELS",
    "SCHEMA",
    "BatchEntry",
    "BatchReport",
    "Floors",
    "HeadroomReport",
    "KernelHeadroom",
    "Violation",
    "assess",
    "build_report",
    "classify",
    "headroom",
    "headroom_paths",
    "headroom_problem",
    "measure_subject",
    "plot_headroom",
]

SCHEMA = "solar.headroom/1"
BATCH_SCHEMA = "solar.headroom-batch/1"
LEVELS = ("unfused", "fused", "cache_aware")
DEFAULT_TOL = 0.01


# ---------------------------------------------------------------------------------------------
# Classification


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


@dataclass
class Violation:
    """A measurement below a bound, with its classification and evidence."""

    scope: str  # "program" or "kernel"
    name: str  # program or kernel name(s)
    level: str  # "unfused", "fused", "cache_aware" or "kernel"
    measured_s: float
    bound_s: float
    kind: str  # "bound_bug", "not_doing_the_work" or "cache_effect"
    cause: str  # "outputs", "ir_mismatch", "compute", "bytes" or "l2"
    reason: str
    evidence: dict = field(default_factory=dict)

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
    g = getattr(getattr(bound, "graph", None), "graph", None)
    rows = []
    if not g or "kernels" not in g:
        return [_KernelIO(k.bytes_read, k.bytes_written, 0.0) for k in bound.kernels]
    tensors = g.get("tensors", {})
    seen: set[str] = set()
    for k in g["kernels"]:
        cold = 0.0
        for t, b in k["reads"].items():
            role = tensors.get(t, {}).get("role")
            if role in ("input", "weight", "constant") and t not in seen:
                cold += b
        seen |= set(k["reads"])
        rows.append(_KernelIO(sum(k["reads"].values()), sum(k["writes"].values()), cold))
    if len(rows) != len(bound.kernels):
        return [_KernelIO(k.bytes_read, k.bytes_written, 0.0) for k in bound.kernels]
    return rows


def _fused_io(bound) -> tuple[float, float]:
    """(bytes read, bytes written) of the fused level."""
    g = getattr(getattr(bound, "graph", None), "graph", None)
    if g and "fused_io" in g:
        io = g["fused_io"]
        return float(sum(io["reads"].values())), float(sum(io["writes"].values()))
    return float(bound.bytes_fused), 0.0


def _unit_of(flops: Mapping[str, float], spec) -> tuple[float, str]:
    from solar.backend.units import compute_time

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
    floor_bytes = max(cold, nbytes - 2 * l2)
    by = max(ks, key=lambda k: k.time_s).bound_by if ks else "none"
    floor = max(compute, floor_bytes / bw)
    return Floors(bound_s, by, compute, unit, floor, nbytes, floor_bytes, bw, l2)


def _program_floors(bound, spec, level: str, io: Sequence[_KernelIO], flushed: bool) -> Floors:
    bw, l2 = spec.dram_bandwidth, float(spec.l2_capacity)
    if level == "unfused":
        terms = [_kernel_floors(bound, spec, [i], io, flushed) for i in range(len(bound.kernels))]
        compute = sum(t.compute_s for t in terms)
        units = [t.compute_unit for t in terms if t.compute_s > 0]
        unit = statistics.mode(units) if units else "none"
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
    return Floors(b, by, compute, unit, max(compute, cold / bw), nbytes, cold, bw, l2)


# ---------------------------------------------------------------------------------------------
# The report


@dataclass
class KernelHeadroom:
    """One measured unit: an IR kernel, or consecutive IR kernels one source call ran."""

    name: str
    kernels: list[str]
    op: str
    source: str
    module: str
    bound_s: float
    bound_by: str
    compute_s: float
    memory_s: float
    bytes: float
    cold_bytes: float
    measured_s: float | None = None
    device_kernels: list[str] = field(default_factory=list)

    @property
    def headroom(self) -> float | None:
        if self.measured_s is None or not self.bound_s:
            return None
        return self.measured_s / self.bound_s

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["headroom"] = self.headroom
        return d


@dataclass
class HeadroomReport:
    """Measured vs bound for one program. ``headroom`` maps each level to measured / bound
    (and ``"kernels"`` to per-kernel headrooms); ``violations`` lists measurements that beat a
    bound, classified (see the module docstring)."""

    program: str
    hw: str
    hw_key: str
    device: dict
    measured: Timing | None
    bounds: dict[str, float]
    bound_by: dict[str, str]
    kernels: list[KernelHeadroom]
    violations: list[Violation]
    validation: ValidationReport | None = None
    mapping: dict | None = None
    candidate: bool = False
    candidate_check: list[OutputCheck] | None = None
    baseline: Timing | None = None
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    path: str | None = None
    tol: float = DEFAULT_TOL
    bound: object = field(default=None, repr=False)

    @property
    def levels(self) -> dict[str, float | None]:
        m = self.measured.median_s if self.measured else None
        return {lv: (m / b if m is not None and b else None) for lv, b in self.bounds.items()}

    @property
    def headroom(self) -> dict:
        d: dict = dict(self.levels)
        d["kernels"] = {k.name: k.headroom for k in self.kernels if k.headroom is not None}
        return d

    @property
    def score(self) -> float | None:
        """SOL score of a candidate against the baseline, with the fused bound as T_sol."""
        if not (self.candidate and self.measured and self.baseline and self.bounds.get("fused")):
            return None
        try:
            return sol_score(self.measured.median_s, self.baseline.median_s, self.bounds["fused"])
        except ValueError:
            return None

    def to_dict(self) -> dict:
        return _jsonable(
            {
                "schema": SCHEMA,
                "program": self.program,
                "path": self.path,
                "hw": self.hw,
                "hw_key": self.hw_key,
                "device": self.device,
                "measured": self.measured.to_dict(times=True) if self.measured else None,
                "candidate": self.candidate,
                "baseline": self.baseline.to_dict() if self.baseline else None,
                "score": self.score,
                "bounds": {
                    **{f"{lv}_s": b for lv, b in self.bounds.items()},
                    **{f"{lv}_bound_by": by for lv, by in self.bound_by.items()},
                },
                "headroom": self.levels,
                "kernels": [k.to_dict() for k in self.kernels],
                "mapping": self.mapping,
                "violations": [v.to_dict() for v in self.violations],
                "validation": self.validation.to_dict() if self.validation else None,
                "candidate_check": [c.to_dict() for c in self.candidate_check]
                if self.candidate_check is not None
                else None,
                "tol": self.tol,
                "notes": list(self.notes),
                "errors": dict(self.errors),
                "seconds": dict(self.seconds),
            }
        )

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def renderables(self) -> list:
        from rich.table import Table

        m = self.measured
        title = f"{self.program} on {self.hw}: measured {fmt_time(m.median_s) if m else '-'}"
        if m:
            title += f" (median of {m.reps}, IQR {100 * m.spread:.1f}%"
            title += ", L2 flushed)" if m.flushed else ")"
        s = Table(title=title)
        for c in ("level", "bound", "by", "headroom", "violation"):
            s.add_column(c)
        viol = {v.level: v for v in self.violations if v.scope == "program"}
        for lv in LEVELS:
            h = self.levels.get(lv)
            v = viol.get(lv)
            s.add_row(
                lv.replace("_", "-"),
                fmt_time(self.bounds[lv]),
                self.bound_by.get(lv, ""),
                f"{h:.3g}x" if h is not None else "-",
                f"{v.kind} ({v.cause})" if v else "",
            )
        t = Table(title="per kernel: measured device time vs bound")
        for c in ("kernel", "op", "bound", "by", "measured", "headroom", "device kernels"):
            t.add_column(c, justify="right" if c in ("bound", "measured", "headroom") else "left")
        kv = {v.name for v in self.violations if v.scope == "kernel"}
        for k in self.kernels:
            h = k.headroom
            dk = ", ".join(dict.fromkeys(_short(x) for x in k.device_kernels))
            t.add_row(
                k.name + (" !" if k.name in kv else ""),
                k.op,
                fmt_time(k.bound_s),
                k.bound_by,
                fmt_time(k.measured_s) if k.measured_s is not None else "-",
                f"{h:.3g}x" if h is not None else "-",
                dk[:60],
            )
        out: list = [s, t]
        for v in self.violations:
            out.append(f"VIOLATION {v.scope} {v.name} [{v.level}]: {v.kind}: {v.reason}")
        if self.validation is not None:
            out.append("validation: " + self.validation.summary())
        sc = self.score
        if sc is not None:
            out.append(f"SOL score (vs baseline, fused bound): {sc:.3f}")
        out += [f"note: {n}" for n in self.notes]
        out += [f"error ({k}): {e}" for k, e in self.errors.items()]
        return out

    def __str__(self) -> str:
        return _render(self.renderables())

    def __repr__(self) -> str:
        lv = ", ".join(f"{k} {v:.3g}x" for k, v in self.levels.items() if v is not None)
        n = len(self.violations)
        return f"HeadroomReport({self.program!r} on {self.hw}: {lv}; {n} violations)"

    def _repr_html_(self) -> str:
        import html

        return "<pre>" + html.escape(str(self)) + "</pre>"

    def plot(self, path: str | Path | None = None):
        """Headroom per kernel and per level, log scale; saved to ``path`` when given."""
        return plot_headroom([self], path, per_kernel=True)


def _short(name: str) -> str:
    return name if len(name) <= 40 else name[:37] + "..."


def assess(
    bound,
    spec,
    *,
    measured: Timing | None,
    mapping: KernelMapping | None = None,
    validation: ValidationReport | None = None,
    candidate: bool = False,
    candidate_check: Sequence[OutputCheck] | None = None,
    tol: float = DEFAULT_TOL,
    flushed: bool | None = None,
) -> tuple[list[KernelHeadroom], list[Violation]]:
    """Per-kernel headroom rows and classified violations of a bound against measurements
    (pure: no device needed)."""
    if flushed is None:
        flushed = bool(measured.flushed) if measured is not None else True
    io = _kernel_io(bound)
    ir_ok = None
    if validation is not None and validation.status in ("passed", "failed"):
        ir_ok = validation.ok
    ir_reason = validation.summary() if validation is not None and not validation.ok else None
    code_ok = None
    code_reason = None
    if candidate_check is not None:
        code_ok = all(c.ok for c in candidate_check)
        bad = [c for c in candidate_check if not c.ok]
        code_reason = "; ".join(f"{c.name}: {c.reason}" for c in bad[:3]) or None
    violations: list[Violation] = []

    def check(scope, name, level, m, f: Floors):
        if m is None or not f.bound_s or m >= f.bound_s * (1 - tol):
            return
        kind, cause, reason = classify(
            m,
            f,
            ir_ok=ir_ok,
            code_ok=code_ok,
            candidate=candidate,
            ir_reason=ir_reason,
            code_reason=code_reason,
            level=level,
        )
        evidence = {
            "bound_by": f.bound_by,
            "compute_s": f.compute_s,
            "compute_unit": f.compute_unit,
            "floor_s": f.floor_s,
            "bytes": f.bytes,
            "cold_bytes": f.cold_bytes,
            "implied_bandwidth": f.bytes / m if m > 0 else math.inf,
            "dram_bandwidth": f.dram_bandwidth,
            "l2_bytes": f.l2_bytes,
            "compute_fraction_of_peak": f.compute_s / m if m > 0 else math.inf,
            "ir_validation": _status(ir_ok),
            "code_validation": "reference" if not candidate else _status(code_ok),
            "l2_flushed": flushed,
        }
        violations.append(
            Violation(scope, name, level, m, f.bound_s, kind, cause, reason, evidence)
        )

    m = measured.median_s if measured is not None else None
    for lv in LEVELS:
        check("program", bound.program, lv, m, _program_floors(bound, spec, lv, io, flushed))
    rows: list[KernelHeadroom] = []
    matched: dict[int, tuple[list[int], float, list[str]]] = {}
    if mapping is not None:
        for mt in mapping.matches:
            matched[mt.ir[0]] = (mt.ir, mt.seconds, mt.device_kernels)
    covered: set[int] = set()
    for i, k in enumerate(bound.kernels):
        if i in covered:
            continue
        idx, secs, dks = matched.get(i, ([i], None, []))
        covered |= set(idx)
        f = _kernel_floors(bound, spec, idx, io, True)
        ks = [bound.kernels[j] for j in idx]
        name = "+".join(x.name for x in ks)
        rows.append(
            KernelHeadroom(
                name=name,
                kernels=[x.name for x in ks],
                op=k.op,
                source=k.source,
                module=k.module,
                bound_s=f.bound_s,
                bound_by=f.bound_by,
                compute_s=f.compute_s,
                memory_s=sum(x.memory_s for x in ks),
                bytes=f.bytes,
                cold_bytes=sum(io[j].cold for j in idx),
                measured_s=secs,
                device_kernels=list(dks),
            )
        )
        if secs is not None and not candidate:
            check("kernel", name, "kernel", secs, f)
    return rows, violations


def _status(ok: bool | None) -> str:
    return "not run" if ok is None else ("passed" if ok else "failed")


def build_report(
    bound,
    spec,
    info: DeviceInfo | dict,
    *,
    measured,
    mapping,
    validation,
    candidate=False,
    candidate_check=None,
    baseline=None,
    tol=DEFAULT_TOL,
    path=None,
) -> HeadroomReport:
    """A :class:`HeadroomReport` from a bound and measurements (pure: see :func:`assess`)."""
    rows, violations = assess(
        bound,
        spec,
        measured=measured,
        mapping=mapping,
        validation=validation,
        candidate=candidate,
        candidate_check=candidate_check,
        tol=tol,
    )
    names = [k.name for k in bound.kernels]
    return HeadroomReport(
        program=bound.program,
        hw=spec.name,
        hw_key=spec.key,
        device=info.to_dict() if isinstance(info, DeviceInfo) else dict(info),
        measured=measured,
        bounds={"unfused": bound.unfused, "fused": bound.fused, "cache_aware": bound.cache_aware},
        bound_by={
            "unfused": bound.unfused_bound_by,
            "fused": bound.fused_bound_by,
            "cache_aware": bound.cache_aware_bound_by,
        },
        kernels=rows,
        violations=violations,
        validation=validation,
        mapping=mapping.to_dict(names) if mapping is not None else None,
        candidate=candidate,
        candidate_check=list(candidate_check) if candidate_check is not None else None,
        baseline=baseline,
        tol=tol,
        path=path,
        bound=bound,
    )


# ---------------------------------------------------------------------------------------------
# Measuring


def measure_subject(
    subject: Subject,
    hw="auto",
    *,
    candidate: Callable | None = None,
    validate: bool = True,
    per_kernel_validation: bool | str = "auto",
    profile: bool = True,
    reps: int | None = None,
    budget_s: float = 1.0,
    profile_reps: int = 2,
    flush: bool = True,
    tol: float = DEFAULT_TOL,
    info: DeviceInfo | None = None,
) -> HeadroomReport:
    """Bound, validate, time and profile one subject; every stage that fails is recorded in
    ``report.errors`` and the others still run. ``candidate``: a callable taking the same
    inputs, timed instead of the source (which is then the baseline and the reference)."""
    from solar.api import bound_program

    dev = subject.device
    spec = hw if hasattr(hw, "dram_bandwidth") else resolve_hw(hw, dev)
    info = info or device_info(dev)
    seconds: dict[str, float] = {}
    errors: dict[str, str] = {}
    notes = list(subject.notes)
    if subject.trace_s:
        seconds["trace"] = subject.trace_s
    if dev.type != "cuda":
        notes.append(
            f"measured on {dev.type}, not a GPU: the headroom compares {dev.type} time with "
            f"bounds for {spec.name}"
        )

    t0 = time.perf_counter()
    bound = bound_program(subject.program, spec)
    seconds["bound"] = time.perf_counter() - t0

    validation = None
    if validate:
        t0 = time.perf_counter()
        try:
            validation = validate_subject(subject, per_kernel=per_kernel_validation)
        except torch.cuda.OutOfMemoryError as e:
            errors["validate"] = f"out of memory: {_line(e)}"
            _free(dev)
        seconds["validate"] = time.perf_counter() - t0

    target = subject.run
    candidate_check = None
    baseline = None
    if candidate is not None:
        args = subject.inputs

        def target():
            return candidate(*args)

        try:
            with torch.no_grad():
                got = subject.flatten(target())
                ref = subject.flatten(subject.run())
            subject.synchronize()
            if len(got) != len(ref):
                why = f"{len(got)} outputs, the reference has {len(ref)}"
                candidate_check = [
                    OutputCheck("outputs", (), "", math.inf, math.inf, 0.0, False, why)
                ]
            else:
                candidate_check = [
                    compare(g, r, tol=tolerance(r.dtype, subject.program), name=f"output{i}")
                    for i, (g, r) in enumerate(zip(got, ref))
                ]
            del got, ref
        except Exception as e:
            errors["candidate_check"] = f"{type(e).__name__}: {_line(e)}"

    measured = None
    t0 = time.perf_counter()
    try:
        measured = time_fn(
            target,
            device=dev,
            flush=flush,
            reps=reps,
            budget_s=budget_s,
            timer=subject.timer,
            sync=subject.sync,
            min_reps=3,
        )
        if candidate is not None:
            baseline = time_fn(
                subject.run,
                device=dev,
                flush=flush,
                reps=reps,
                budget_s=budget_s,
                timer=subject.timer,
                sync=subject.sync,
                min_reps=3,
            )
    except torch.cuda.OutOfMemoryError as e:
        errors["time"] = f"out of memory: {_line(e)}"
        _free(dev)
    except Exception as e:
        errors["time"] = f"{type(e).__name__}: {_line(e)}"
    seconds["time"] = time.perf_counter() - t0

    mapping = None
    if measured is not None and measured.median_s > 0:  # long programs: fewer profiled runs
        profile_reps = min(profile_reps, max(1, int(2 * budget_s / measured.median_s)))
        if measured.median_s > 5 * budget_s:
            profile = False
            notes.append("not profiled: one run takes over 5 timing budgets")
    if profile and candidate is None and subject.framework == "torch" and profile_reps > 0:
        t0 = time.perf_counter()
        try:
            events = profile_events(
                target, device=dev, reps=profile_reps, flush=flush, warmup=0 if measured else 1
            )
            mapping = map_reps([k.op for k in subject.program.kernels], events)
            if mapping.unmatched_ir:
                notes.append(
                    f"{len(mapping.unmatched_ir)} IR kernel(s) had no device activity "
                    "attributed (see mapping.unmatched_ir)"
                )
            if mapping.unmatched_device:
                s = sum(x[1] for x in mapping.unmatched_device)
                notes.append(
                    f"{fmt_time(s)} of device time in {len(mapping.unmatched_device)} op(s) the "
                    "IR does not model (see mapping.unmatched_device)"
                )
        except Exception as e:
            errors["profile"] = f"{type(e).__name__}: {_line(e)}"
        seconds["profile"] = time.perf_counter() - t0

    rep = build_report(
        bound,
        spec,
        info,
        measured=measured,
        mapping=mapping,
        validation=validation,
        candidate=candidate is not None,
        candidate_check=candidate_check,
        baseline=baseline,
        tol=tol,
        path=subject.path,
    )
    rep.notes = notes
    rep.seconds = seconds
    rep.errors = errors
    return rep


def headroom(
    model,
    inputs,
    hw="auto",
    *,
    candidate: Callable | None = None,
    device: str | torch.device | None = None,
    precision: str | None = None,
    name: str | None = None,
    validate: bool = True,
    per_kernel: bool = True,
    reps: int | None = None,
    budget_s: float = 1.0,
    flush: bool = True,
    tol: float = DEFAULT_TOL,
) -> HeadroomReport:
    """Measure ``model(*inputs)`` on its device and compare with its bounds on ``hw``
    (``"auto"``: the spec of the visible GPU).

    ``r.headroom``: measured / bound per level and per kernel; ``r.violations``: measurements
    below a bound, classified. ``candidate``: another implementation of the same function
    (same inputs), timed instead and checked against ``model``'s outputs; ``r.score`` is then
    its SOL score. ``device`` moves the model (in place) and inputs there first.
    ``per_kernel`` maps profiler kernel times onto the IR kernels."""
    from torch.utils import _pytree as pytree

    args = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    if device is not None:
        if isinstance(model, torch.nn.Module):
            model.to(device)
        args = pytree.tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, args)
    subject = make_subject(model, args, name=name, precision=precision)
    return measure_subject(
        subject,
        hw,
        candidate=candidate,
        validate=validate,
        profile=per_kernel,
        reps=reps,
        budget_s=budget_s,
        flush=flush,
        tol=tol,
    )


# ---------------------------------------------------------------------------------------------
# Batches


@dataclass
class BatchEntry:
    path: str
    name: str
    status: str  # "ok", "error" or "skipped"
    stage: str | None = None  # where an error happened: load, trace, measure
    error: str | None = None
    report: HeadroomReport | None = None
    measured: Timing | None = None  # when only the source could be timed
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return _jsonable(
            {
                "path": self.path,
                "name": self.name,
                "status": self.status,
                "stage": self.stage,
                "error": self.error,
                "seconds": self.seconds,
                "measured": self.measured.to_dict() if self.measured else None,
                "report": self.report.to_dict() if self.report else None,
            }
        )


@dataclass
class BatchReport:
    hw: str
    hw_key: str
    device: dict
    entries: list[BatchEntry] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        reps = [e.report for e in self.entries if e.report is not None]
        val: dict[str, int] = {}
        for r in reps:
            st = r.validation.status if r.validation else "not run"
            val[st] = val.get(st, 0) + 1
        kinds: dict[str, int] = {}
        for r in reps:
            for v in r.violations:
                kinds[f"{v.scope}:{v.kind}"] = kinds.get(f"{v.scope}:{v.kind}", 0) + 1
        geo = {}
        for lv in LEVELS:
            hs = [r.levels[lv] for r in reps if r.levels.get(lv)]
            geo[lv] = math.exp(statistics.fmean(math.log(h) for h in hs)) if hs else None
        return {
            "programs": len(self.entries),
            "ok": sum(e.status == "ok" for e in self.entries),
            "errors": sum(e.status == "error" for e in self.entries),
            "skipped": sum(e.status == "skipped" for e in self.entries),
            "validation": val,
            "violations": kinds,
            "programs_with_violations": sorted(
                r.program for r in reps if any(v.scope == "program" for v in r.violations)
            ),
            "geomean_headroom": geo,
            "seconds": self.seconds,
        }

    def to_dict(self) -> dict:
        return _jsonable(
            {
                "schema": BATCH_SCHEMA,
                "hw": self.hw,
                "hw_key": self.hw_key,
                "device": self.device,
                "summary": self.summary(),
                "notes": list(self.notes),
                "programs": [e.to_dict() for e in self.entries],
            }
        )

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def rows(self) -> list[list[str]]:
        """One row per program: name, status, validation, measured, bounds' headroom,
        violations, kernels mapped."""
        out = []
        for e in self.entries:
            r = e.report
            if r is None:
                m = fmt_time(e.measured.median_s) if e.measured else "-"
                out.append([e.name, e.status, "-", m, "-", "-", "-", "-", (e.error or "")[:70]])
                continue
            lv = r.levels
            val = r.validation.status if r.validation else "-"
            if r.validation and r.validation.status == "failed" and r.validation.worst:
                val += f" {r.validation.worst.rel_err:.2g}"
            vk = sorted({f"{v.scope[0]}:{v.kind}" for v in r.violations})
            mp = r.mapping
            mapped = f"{len(r.kernels) - sum(k.measured_s is None for k in r.kernels)}/" + str(
                len(r.kernels)
            )
            out.append(
                [
                    e.name,
                    e.status,
                    val,
                    fmt_time(r.measured.median_s) if r.measured else "-",
                    *(f"{lv[x]:.3g}" if lv.get(x) else "-" for x in LEVELS),
                    mapped if mp else "-",
                    ",".join(vk) + ("; " + "; ".join(r.errors) if r.errors else ""),
                ]
            )
        return out

    HEADERS = ["program", "status", "valid", "measured", "h_unf", "h_fus", "h_ca", "mapped", "viol"]

    def table(self) -> str:
        """A plain-text summary table (no dependencies)."""
        return format_table(self.HEADERS, self.rows())

    def __str__(self) -> str:
        s = self.summary()
        lines = [self.table(), ""]
        lines.append(
            f"{s['programs']} programs: {s['ok']} ok, {s['errors']} errors, {s['skipped']} "
            f"skipped; validation {s['validation']}; violations {s['violations'] or 'none'}"
        )
        g = s["geomean_headroom"]
        lines.append(
            "geomean headroom: "
            + ", ".join(f"{lv} {g[lv]:.3g}x" for lv in LEVELS if g.get(lv) is not None)
        )
        lines.append(f"on {self.hw} ({self.device.get('name', '?')}), {s['seconds']:.0f} s")
        return "\n".join(lines)

    def plot(self, path: str | Path | None = None):
        return plot_headroom([e.report for e in self.entries if e.report is not None], path)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [len(h) for h in headers]
    for r in rows:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(str(c)))
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "-" * len(line)]
    for r in rows:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    return "\n".join(out)


def headroom_problem(
    path: str | Path,
    hw="auto",
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
    overrides: Mapping[str, object] | None = None,
    strict_overrides: bool = True,
    precision: str | None = None,
    info: DeviceInfo | None = None,
    **kw,
) -> BatchEntry:
    """Measure one problem file; failures are recorded in the entry, never raised."""
    path = Path(path)
    t0 = time.perf_counter()
    entry = BatchEntry(str(path), path.stem, "error")
    try:
        entry.stage = "load"
        problem, notes = load_real_problem(
            path,
            device=device,
            seed=seed,
            overrides=overrides,
            strict_overrides=strict_overrides,
        )
        entry.stage = "trace"
        try:
            subject = make_subject(
                problem.model,
                problem.inputs,
                name=problem.name,
                precision=precision,
                path=str(path),
                notes=notes,
            )
        except Exception as e:
            entry.error = f"tracing failed: {type(e).__name__}: {_line(e)}"
            try:  # still time the source program
                model, args = problem.model, problem.inputs
                entry.measured = time_fn(
                    lambda: model(*args), device=device, budget_s=kw.get("budget_s", 0.5)
                )
            except Exception:
                pass
            return entry
        entry.stage = "measure"
        entry.report = measure_subject(subject, hw, info=info, **kw)
        entry.status = "ok"
        entry.stage = None
    except torch.cuda.OutOfMemoryError as e:
        entry.error = f"out of device memory: {_line(e)}"
    except Exception as e:
        entry.error = f"{type(e).__name__}: {_line(e)}"
    finally:
        entry.seconds = time.perf_counter() - t0
        _free(device)
    return entry


class DeviceLost(RuntimeError):
    """The CUDA context is unusable (a sticky error such as an illegal memory access)."""


def _check_device(device) -> None:
    if torch.device(device).type != "cuda":
        return
    try:
        torch.cuda.synchronize()
        x = torch.ones(8, device=device)
        if float((x + 1).sum()) != 16.0:
            raise RuntimeError("arithmetic check failed")
    except Exception as e:
        raise DeviceLost(f"the CUDA context is unusable after the last program: {_line(e)}") from e


def headroom_paths(
    paths: Iterable[str | Path],
    hw="auto",
    *,
    device: str | torch.device | None = None,
    seed: int = 0,
    precision: str | None = None,
    budget_total_s: float | None = None,
    show_progress: bool = True,
    on_entry: Callable[[BatchEntry], None] | None = None,
    skip: Iterable[str] = (),
    overrides: Mapping[str, object] | None = None,
    **kw,
) -> BatchReport:
    """Measure every problem file under ``paths``. A failing program never stops the batch.
    ``budget_total_s`` bounds the whole batch: each program gets a share of what is left for
    timing and profiling, and programs not reached are marked skipped. ``overrides`` set
    module-level constants of the files that define them. ``on_entry`` is called
    after each program (to save partial results); ``skip`` lists paths already done. Raises
    :class:`DeviceLost` when a program leaves the CUDA context unusable (the entries so far
    have been passed to ``on_entry``)."""
    t_start = time.perf_counter()
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    info = device_info(device)
    spec = hw if hasattr(hw, "dram_bandwidth") else resolve_hw(hw, device)
    files = [p for p in discover(paths) if str(p) not in set(map(str, skip))]
    batch = BatchReport(spec.name, spec.key, info.to_dict())
    for n, path in enumerate(progress(files, desc="headroom", enable=show_progress)):
        opts = dict(kw)
        if budget_total_s is not None:
            left = budget_total_s - (time.perf_counter() - t_start)
            share = left / max(len(files) - n, 1)
            if left <= 0:
                entry = BatchEntry(str(path), Path(path).stem, "skipped", error="time budget")
                batch.entries.append(entry)
                if on_entry:
                    on_entry(entry)
                continue
            opts.setdefault("budget_s", max(0.05, min(1.0, 0.15 * share)))
            if share < 1.5:
                opts["profile"] = False
            elif share < 4:
                opts.setdefault("profile_reps", 1)
        entry = headroom_problem(
            path,
            spec,
            device=device,
            seed=seed,
            precision=precision,
            info=info,
            overrides=overrides,
            strict_overrides=False,
            **opts,
        )
        batch.entries.append(entry)
        if on_entry:
            on_entry(entry)
        if entry.status == "error":
            _check_device(device)
    batch.seconds = time.perf_counter() - t_start
    return batch


# ---------------------------------------------------------------------------------------------
# Plot

_MARKERS = {"unfused": "o", "fused": "s", "cache_aware": "^", "kernel": "."}


def _get(r, key):
    return r.get(key) if isinstance(r, dict) else getattr(r, key)


def _levels(r) -> dict:
    if isinstance(r, dict):
        h = r.get("headroom") or {}
        return {lv: h.get(lv) if isinstance(h.get(lv), (int, float)) else None for lv in LEVELS}
    return r.levels


def plot_headroom(reports: Sequence, path=None, *, per_kernel: bool = False):
    """Headroom (measured / bound, log scale) per program, one marker per bound level; points
    below 1 (violations) are drawn red. ``reports``: :class:`HeadroomReport` s or their
    ``to_dict()`` s. With ``per_kernel`` (one report), per-kernel headroom too. Returns the
    matplotlib figure; saves a PNG to ``path`` when given."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("plotting needs matplotlib: pip install matplotlib") from e
    reports = [r for r in reports if r is not None and _get(r, "measured") is not None]
    if per_kernel and len(reports) == 1 and isinstance(reports[0], HeadroomReport):
        r = reports[0]
        ks = [k for k in r.kernels if k.headroom is not None]
        labels = [f"[{lv}]" for lv in LEVELS] + [k.name for k in ks]
        series: dict[str, list] = {lv: [None] * len(labels) for lv in (*LEVELS, "kernel")}
        for i, lv in enumerate(LEVELS):
            series[lv][i] = r.levels.get(lv)
        for j, k in enumerate(ks):
            series["kernel"][len(LEVELS) + j] = k.headroom
        title = f"{r.program} on {r.hw}: headroom per level and per kernel"
    else:
        labels = [_get(r, "program") for r in reports]
        series = {lv: [_levels(r).get(lv) for r in reports] for lv in LEVELS}
        hw = _get(reports[0], "hw") if reports else "?"
        title = f"headroom (measured / bound) per program on {hw}"
    fig, ax = plt.subplots(figsize=(max(6.0, 0.28 * len(labels) + 2), 4.8))
    for n, (lv, ys) in enumerate(series.items()):
        xs = [i for i, y in enumerate(ys) if y]
        if not xs:
            continue
        vals = [ys[i] for i in xs]
        ax.scatter(
            xs,
            vals,
            marker=_MARKERS.get(lv, "o"),
            label=lv.replace("_", "-"),
            c=["tab:red" if v < 1 else f"C{n}" for v in vals],
            s=28,
            zorder=3,
        )
    ax.axhline(1.0, color="k", lw=0.8, ls="--", zorder=1)
    ax.set_yscale("log")
    ax.set_ylabel("measured / bound (log)")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=90, fontsize=7)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


# ---------------------------------------------------------------------------------------------
# Command line


def add_set_option(p) -> None:
    from solar.gpu.validate import add_set_option as add

    add(p)


def cmd_headroom(args) -> int:
    from solar.gpu.validate import _default_device, parse_sets

    device = args.device or _default_device()
    files = discover(args.paths)
    kw = dict(
        validate=not args.no_validate,
        profile=not args.no_profile,
        reps=args.reps,
        tol=args.tol,
    )
    if args.budget_s is not None:
        kw["budget_s"] = args.budget_s
    sets = parse_sets(args.set)
    if len(files) == 1 and not Path(args.paths[0]).is_dir():
        entry = headroom_problem(
            files[0],
            args.hw,
            device=device,
            seed=args.seed,
            precision=args.precision,
            overrides=sets,
            **kw,
        )
        if entry.report is None:
            raise ValueError(f"{files[0]}: {entry.error}")
        r = entry.report
        if args.out:
            Path(args.out).write_text(r.to_json() + "\n")
        print(r.to_json() if args.json else r)
        if args.plot:
            r.plot(args.plot)
        return 0
    batch = headroom_paths(
        files,
        args.hw,
        device=device,
        seed=args.seed,
        precision=args.precision,
        show_progress=not args.json,
        overrides=sets,
        **kw,
    )
    if args.out:
        Path(args.out).write_text(batch.to_json() + "\n")
    plot = args.plot or (str(Path(args.out).with_suffix(".png")) if args.out else None)
    if plot:
        try:
            batch.plot(plot)
        except ImportError as e:
            print(f"solar: no plot: {e}")
    print(batch.to_json() if args.json else batch)
    return 0


def register(subparsers) -> None:
    """Add ``solar headroom`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "headroom",
        help="measure programs on the GPU, bound them, report headroom and violations",
    )
    p.add_argument("paths", nargs="+", help="problem files or folders of them")
    p.add_argument("--hw", default="auto", help="GPU spec: auto (the visible GPU), name or YAML")
    p.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    p.add_argument("--out", help="write the JSON results here")
    p.add_argument("--plot", help="write the headroom plot (PNG) here (default: beside --out)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reps", type=int, default=None, help="timed repetitions (default: adaptive)")
    p.add_argument("--budget-s", type=float, default=None, help="timing budget per program (s)")
    p.add_argument("--tol", type=float, default=DEFAULT_TOL, help="violation margin (0.01)")
    p.add_argument("--no-validate", action="store_true", help="skip IR validation")
    p.add_argument("--no-profile", action="store_true", help="skip per-kernel profiling")
    p.add_argument("--precision", choices=["tf32", "ieee"], default=None)
    add_set_option(p)
    p.set_defaults(func=cmd_headroom)
