"""Headroom and violations (DESIGN.md §7): measure a program, bound it, compare.

``headroom = measured / bound`` for each bound level (unfused, fused, cache-aware) against the
program's measured time (median, CUDA events, L2 flushed before each repetition), and for each
IR kernel against its device time from ``torch.profiler`` (see :mod:`solar.gpu.measure`).

Violations (a measurement below a bound) are classified by :mod:`solar.gpu.violations`; batches
of problem files, on this machine or on a Ray cluster, and ``solar headroom`` are in
:mod:`solar.gpu.headroom_batch`.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable, Sequence
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
from solar.report import fmt_time

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
    "plot_headroom",
]

SCHEMA = "solar.headroom/1"
LEVELS = ("unfused", "fused", "cache_aware")

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
        timed = functools.partial(
            time_fn,
            device=dev,
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
