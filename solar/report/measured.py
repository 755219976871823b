"""Text views of results measured on a device: validation, headroom (one program and a
batch) and calibration reports."""

from __future__ import annotations

from rich.table import Table

from solar.backend.result import LEVELS
from solar.fmt import fmt_time
from solar.gpu.calibrate import Calibration
from solar.gpu.headroom import HeadroomReport
from solar.gpu.headroom_batch import BatchReport as HeadroomBatch
from solar.gpu.validate import ValidationReport
from solar.hw.latency import LATENCY_KEYS
from solar.report.table import format_table, render


def _short(name: str) -> str:
    return name if len(name) <= 40 else name[:37] + "..."


def validation_renderables(r: ValidationReport) -> list:
    t = Table(title=f"{r.program}: IR vs source on {r.device}: {r.status}")
    for c in ("output", "shape", "dtype", "rel err", "tol", "ok", "why"):
        t.add_column(c)
    for o in r.outputs:
        t.add_row(
            o.name,
            "x".join(map(str, o.shape)),
            o.dtype,
            f"{o.rel_err:.3g}",
            f"{o.tol:.3g}",
            "yes" if o.ok else "NO",
            o.reason or "",
        )
    out: list = [t]
    if r.kernels:
        k = Table(title="per kernel (IR intermediates vs the source's)")
        for c in ("kernel", "op", "rel err", "ok"):
            k.add_column(c)
        for kc in r.kernels:
            k.add_row(kc.kernel, kc.op, f"{kc.rel_err:.3g}", "yes" if kc.ok else "NO")
        out.append(k)
    if r.reason:
        out.append(f"{r.status}: {r.reason}")
    out += [f"note: {n}" for n in r.notes]
    return out


def headroom_renderables(r: HeadroomReport) -> list:
    m = r.measured
    title = f"{r.program} on {r.hw}: measured {fmt_time(m.median_s) if m else '-'}"
    if m:
        title += f" (median of {m.reps}, IQR {100 * m.spread:.1f}%"
        title += ", L2 flushed)" if m.flushed else ")"
    s = Table(title=title)
    for c in ("level", "bound", "by", "headroom", "violation"):
        s.add_column(c)
    viol = {v.level: v for v in r.violations if v.scope == "program"}
    for lv in LEVELS:
        h = r.levels.get(lv)
        v = viol.get(lv)
        s.add_row(
            lv.replace("_", "-"),
            fmt_time(r.bounds[lv]),
            r.bound_by.get(lv, ""),
            f"{h:.3g}x" if h is not None else "-",
            f"{v.kind} ({v.cause})" if v else "",
        )
    t = Table(title="per kernel: measured device time vs bound")
    for c in ("kernel", "op", "bound", "by", "measured", "headroom", "device kernels"):
        t.add_column(c, justify="right" if c in ("bound", "measured", "headroom") else "left")
    kv = {v.name for v in r.violations if v.scope == "kernel"}
    for k in r.kernels:
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
    for v in r.violations:
        out.append(f"VIOLATION {v.scope} {v.name} [{v.level}]: {v.kind}: {v.reason}")
    if r.validation is not None:
        out.append("validation: " + r.validation.summary())
    sc = r.score
    if sc is not None:
        out.append(f"SOL score (vs baseline, fused bound): {sc:.3f}")
    out += [f"note: {n}" for n in r.notes]
    out += [f"error ({k}): {e}" for k, e in r.errors.items()]
    return out


def headroom_batch_rows(batch: HeadroomBatch) -> list[list[str]]:
    """One row per program: name, status, validation, measured, bounds' headroom,
    violations, kernels mapped."""
    out = []
    for e in batch.entries:
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


HEADROOM_BATCH_HEADERS = [
    "program",
    "status",
    "valid",
    "measured",
    "h_unf",
    "h_fus",
    "h_ca",
    "mapped",
    "viol",
]


def headroom_batch_table(batch: HeadroomBatch) -> str:
    """A plain-text summary table of a headroom batch, one row per program."""
    return format_table(HEADROOM_BATCH_HEADERS, headroom_batch_rows(batch))


def headroom_batch_text(batch: HeadroomBatch) -> str:
    s = batch.summary()
    lines = [headroom_batch_table(batch), ""]
    lines.append(
        f"{s['programs']} programs: {s['ok']} ok, {s['errors']} errors, {s['timeouts']} timed "
        f"out, {s['skipped']} skipped; validation {s['validation']}; "
        f"violations {s['violations'] or 'none'}"
    )
    g = s["geomean_headroom"]
    lines.append(
        "geomean headroom: "
        + ", ".join(f"{lv} {g[lv]:.3g}x" for lv in LEVELS if g.get(lv) is not None)
    )
    lines.append(f"on {batch.hw} ({batch.device.get('name', '?')}), {s['seconds']:.0f} s")
    return "\n".join(lines)


def calibration_text(cal: Calibration) -> str:
    """The ceilings a calibration measured, against the datasheet peaks."""
    lines = [f"{'ceiling':<16} {'measured':>14} {'peak':>14} {'of peak':>8}  method / note"]
    for r in cal.results:
        if r.key in LATENCY_KEYS:
            v = f"{r.value * 1e6:.3g} us" if r.value is not None else "-"
            p = f"{r.peak * 1e6:.3g} us" if r.peak else "-"
            fr = f"{100 * r.fraction:.0f}%" if r.fraction is not None else ""
            note = r.error or r.method
            if r.value is not None and r.peak and r.value < r.peak:
                note = f"BELOW the spec's floor (not a lower bound here: lower it); {note}"
            lines.append(f"{r.key:<16} {v:>14} {p:>14} {fr:>8}  {note}")
            continue
        unit = "GB/s" if "bandwidth" in r.key else "TFLOP/s"
        scale = 1e9 if unit == "GB/s" else 1e12
        v = f"{(r.raw or r.value) / scale:,.1f} {unit}" if r.value is not None else "-"
        p = f"{r.peak / scale:,.1f}" if r.peak else "-"
        fr = f"{100 * r.fraction:.0f}%" if r.fraction is not None else ""
        note = r.error or r.method
        if r.clamped:
            note = f"CLAMPED to the peak (measured above it: check the spec); {note}"
        lines.append(f"{r.key:<16} {v:>14} {p:>14} {fr:>8}  {note}")
    return "\n".join(lines + energy_calibration_lines(cal.energy))


def energy_calibration_lines(energy) -> list[str]:
    """The energy runs of a calibration (:mod:`solar.gpu.calibrate_energy`) and the costs
    they give; nothing when energy was not measured."""
    if energy is None:
        return []
    out = ["", f"energy ({energy.meter}):"]
    out.append(
        f"{'run':<16} {'seconds':>8} {'joules':>10} {'power':>9} {'clock':>9}  method / note"
    )
    for r in energy.runs:
        if r.error:
            out.append(f"{r.key:<16} {'-':>8} {'-':>10} {'-':>9} {'-':>9}  {r.error}")
            continue
        clock = f"{r.clock_mhz:.0f} MHz" if r.clock_mhz else "-"
        out.append(
            f"{r.key:<16} {r.seconds:>8.2f} {r.joules:>10.1f} {r.power_w:>7.1f} W {clock:>9}  "
            f"{r.method}"
        )
    c = energy.costs
    if c is None:
        out.append("no energy costs: the idle or DRAM run failed")
        return out
    ops = ", ".join(f"{u} {j * 1e12:.3g} pJ/op" for u, j in c.op_j.items()) or "none"
    out.append(
        f"costs above idle: {ops}; DRAM {c.dram_j_per_byte * 1e12:.3g} pJ/B; idle {c.idle_w:.1f} W"
    )
    return out


def validation_text(r: ValidationReport) -> str:
    return render(validation_renderables(r))


def headroom_text(r: HeadroomReport) -> str:
    return render(headroom_renderables(r))
