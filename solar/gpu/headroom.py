"""Headroom and violations (docs/validation.md): measure a program, bound it, compare.

``headroom = measured / bound`` for each bound level (unfused, fused, cache-aware) against the
program's measured time (median, CUDA events, L2 flushed before each repetition), and for each
IR kernel against its device time from ``torch.profiler`` (see :mod:`solar.gpu.measure`).

Violations (a measurement below a bound) are classified by :mod:`solar.gpu.violations`; batches
of problem files, on this machine or on a Ray cluster, and ``solar headroom`` are in
:mod:`solar.gpu.headroom_batch`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from solar.api import bound_program
from solar.backend.result import LEVELS
from solar.fmt import fmt_time, jsonable
from solar.frozen import Frozen
from solar.gpu.measure import (
    DeviceInfo,
    KernelMapping,
    Timing,
    device_info,
    map_reps,
    on_device,
    profile_events,
    profiler_log_filtered,
    resolve_hw,
    time_fn,
)
from solar.gpu.score import sol_score
from solar.gpu.validate import (
    OutputCheck,
    Subject,
    ValidationReport,
    _free,
    _line,
    compare,
    make_subject,
    tolerance,
    validate_subject,
)
from solar.gpu.violations import (
    DEFAULT_TOL,
    Floors,
    Violation,
    _kernel_floors,
    _kernel_io,
    _program_floors,
    classify,
)
from solar.viewable import Viewable

__all__ = [
    "LEVELS",
    "SCHEMA",
    "Floors",
    "HeadroomReport",
    "KernelHeadroom",
    "Violation",
    "assess",
    "build_report",
    "classify",
    "headroom",
    "measure_subject",
]

SCHEMA = "solar.headroom/1"

# ---------------------------------------------------------------------------------------------
# The report


@dataclass(frozen=True)
class KernelHeadroom(Frozen):
    """One measured unit: an IR kernel, or consecutive IR kernels one source call ran."""

    name: str
    kernels: tuple[str, ...]
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
    device_kernels: tuple[str, ...] = ()

    @property
    def headroom(self) -> float | None:
        if self.measured_s is None or not self.bound_s:
            return None
        return self.measured_s / self.bound_s

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["headroom"] = self.headroom
        return d


@dataclass(frozen=True, repr=False)
class HeadroomReport(Frozen, Viewable):
    """Measured vs bound for one program. ``headroom`` maps each level to measured / bound
    (and ``"kernels"`` to per-kernel headrooms); ``violations`` lists measurements that beat a
    bound, classified (see the module docstring)."""

    program: str
    hw: str
    hw_key: str
    device: Mapping
    measured: Timing | None
    bounds: Mapping[str, float]
    bound_by: Mapping[str, str]
    kernels: tuple[KernelHeadroom, ...]
    violations: tuple[Violation, ...]
    validation: ValidationReport | None = None
    mapping: Mapping | None = None
    candidate: bool = False
    candidate_check: tuple[OutputCheck, ...] | None = None
    baseline: Timing | None = None
    notes: tuple[str, ...] = ()
    seconds: Mapping[str, float] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)
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
        return jsonable(
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

    def __repr__(self) -> str:
        lv = ", ".join(f"{k} {v:.3g}x" for k, v in self.levels.items() if v is not None)
        n = len(self.violations)
        return f"HeadroomReport({self.program!r} on {self.hw}: {lv}; {n} violations)"


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
            "latency_s": f.latency_s,
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


@dataclass
class _Stages:
    """What the stages of :func:`measure_subject` record: seconds per stage, one-line errors
    per failed stage, notes for the report."""

    device: torch.device
    seconds: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @contextlib.contextmanager
    def stage(self, name: str, *, timed: bool = True, catch_all: bool = True):
        """Time stage ``name``; an out-of-memory error (and with ``catch_all`` any error) is
        recorded as the stage's error and the run goes on."""
        t0 = time.perf_counter()
        try:
            yield
        except torch.cuda.OutOfMemoryError as e:
            self.errors[name] = f"out of memory: {_line(e)}"
            _free(self.device)
        except Exception as e:
            if not catch_all:
                raise
            self.errors[name] = f"{type(e).__name__}: {_line(e)}"
        finally:
            if timed:
                self.seconds[name] = time.perf_counter() - t0


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
    dev = subject.device
    spec = hw if hasattr(hw, "dram_bandwidth") else resolve_hw(hw, dev)
    run = _Stages(dev, notes=list(subject.notes))
    if subject.trace_s:
        run.seconds["trace"] = subject.trace_s
    if dev.type != "cuda":
        run.notes.append(
            f"measured on {dev.type}, not a GPU: the headroom compares {dev.type} time with "
            f"bounds for {spec.name}"
        )
    t0 = time.perf_counter()
    bound = bound_program(subject.program, spec)
    run.seconds["bound"] = time.perf_counter() - t0
    validation = None
    if validate:
        with run.stage("validate", catch_all=False):
            validation = validate_subject(subject, per_kernel=per_kernel_validation)
    target, candidate_check = subject.run, None
    if candidate is not None:
        args = subject.inputs

        def target():
            return candidate(*args)

        with run.stage("candidate_check", timed=False):
            candidate_check = _check_candidate(subject, target)
    measured, baseline = _time_stage(run, subject, target, candidate, reps, budget_s, flush)
    if measured is not None and measured.median_s > 0:  # long programs: fewer profiled runs
        profile_reps = min(profile_reps, max(1, int(2 * budget_s / measured.median_s)))
        if measured.median_s > 5 * budget_s:
            profile = False
            run.notes.append("not profiled: one run takes over 5 timing budgets")
    mapping = None
    if profile and candidate is None and subject.framework == "torch" and profile_reps > 0:
        with run.stage("profile"):
            mapping = _profile(run, subject, target, profile_reps, flush, measured is not None)
    rep = build_report(
        bound,
        spec,
        info or device_info(dev),
        measured=measured,
        mapping=mapping,
        validation=validation,
        candidate=candidate is not None,
        candidate_check=candidate_check,
        baseline=baseline,
        tol=tol,
        path=subject.path,
    )
    return dataclasses.replace(rep, notes=run.notes, seconds=run.seconds, errors=run.errors)


def _check_candidate(subject: Subject, target: Callable) -> list[OutputCheck]:
    """The candidate's outputs against the source program's, one check per output."""
    with torch.no_grad():
        got = subject.flatten(target())
        ref = subject.flatten(subject.run())
    subject.synchronize()
    if len(got) != len(ref):
        why = f"{len(got)} outputs, the reference has {len(ref)}"
        return [OutputCheck("outputs", (), "", math.inf, math.inf, 0.0, False, why)]
    return [
        compare(g, r, tol=tolerance(r.dtype, subject.program), name=f"output{i}")
        for i, (g, r) in enumerate(zip(got, ref))
    ]


def _time_stage(run: _Stages, subject, target, candidate, reps, budget_s, flush):
    """``(measured, baseline)``: the target timed (CUDA events, L2 flushed, median) and, with a
    candidate, the source program timed the same way; None where timing failed."""
    measured = baseline = None
    with run.stage("time"):
        timed = functools.partial(
            time_fn,
            device=subject.device,
            flush=flush,
            reps=reps,
            budget_s=budget_s,
            timer=subject.timer,
            sync=subject.sync,
            min_reps=3,
        )
        measured = timed(target)
        if candidate is not None:
            baseline = timed(subject.run)  # the source program, timed the same way
    return measured, baseline


def _profile(run: _Stages, subject, target, reps: int, flush: bool, warm: bool) -> KernelMapping:
    """Profiler kernel times mapped onto the IR kernels; what did not map goes to the notes."""
    with profiler_log_filtered():
        events = profile_events(
            target, device=subject.device, reps=reps, flush=flush, warmup=0 if warm else 1
        )
    mapping = map_reps([k.op for k in subject.program.kernels], events)
    if mapping.unmatched_ir:
        run.notes.append(
            f"{len(mapping.unmatched_ir)} IR kernel(s) had no device activity "
            "attributed (see mapping.unmatched_ir)"
        )
    if mapping.unmatched_device:
        s = sum(x[1] for x in mapping.unmatched_device)
        run.notes.append(
            f"{fmt_time(s)} of device time in {len(mapping.unmatched_device)} op(s) the "
            "IR does not model (see mapping.unmatched_device)"
        )
    return mapping


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
    compile: bool | str = False,
) -> HeadroomReport:
    """Measure ``model(*inputs)`` on its device and compare with its bounds on ``hw``
    (``"auto"``: the spec of the visible GPU).

    ``compile=True`` (or a ``torch.compile`` mode: ``"max-autotune"``, ``"reduce-overhead"``)
    measures the compiled program instead, kernel by generated kernel: a
    :class:`~solar.gpu.compiled_headroom.CompiledHeadroom` (docs/compiled.md).

    ``r.headroom``: measured / bound per level and per kernel; ``r.violations``: measurements
    below a bound, classified. ``candidate``: another implementation of the same function
    (same inputs), timed instead and checked against ``model``'s outputs; ``r.score`` is then
    its SOL score. ``device`` moves the model (in place) and inputs there first.
    ``per_kernel`` maps profiler kernel times onto the IR kernels."""

    if compile:
        from solar.gpu.compiled_headroom import compiled_headroom

        if candidate is not None:
            raise ValueError("compile= measures the program itself: drop candidate= (or compile)")
        return compiled_headroom(  # type: ignore[return-value]
            model,
            inputs,
            hw,
            mode="default" if compile is True else str(compile),
            device=device,
            precision=precision,
            name=name,
            reps=reps,
            budget_s=budget_s,
            flush=flush,
            tol=tol,
        )
    args = on_device(model, inputs, device)
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
