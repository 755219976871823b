"""Text views: rich tables of every result, rendered to plain text.

Each ``*_renderables`` function turns one result into rich renderables (tables and lines) and
each ``*_text`` function renders them at 140 columns without colour: what ``str(result)`` and
the CLI print. Measured results (validation, headroom, calibration) are in
:mod:`solar.report.measured`.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from rich.table import Table

from solar.backend.result import Bound
from solar.fmt import fmt_bytes, fmt_ops, fmt_rate, fmt_signed_time, fmt_time
from solar.questions.batch import BatchResult
from solar.questions.compare import Comparison
from solar.questions.plan import tried_text
from solar.questions.provision import Provision
from solar.questions.sweep import Sweep
from solar.report.energy import energy_cell, energy_renderables, fmt_joules


def render(renderables) -> str:
    """Rich renderables as plain text, 140 columns, no colour."""
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=140, color_system=None, force_terminal=False)
    for r in renderables:
        console.print(r)
    return buf.getvalue().rstrip()


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain aligned table (no box drawing), for long batch listings."""
    widths = [len(h) for h in headers]
    for r in rows:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(str(c)))
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "-" * len(line)]
    for r in rows:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    return "\n".join(out)


def bound_renderables(b: Bound) -> list:
    t = Table(title=f"{b.program} on {b.hw}: per-kernel bounds (unfused)")
    training = bool(b.phases)
    cols = ["kernel", "op", "source", *(["phase", "of"] if training else [])]
    cols += ["work", "DRAM bytes", "compute", "memory", "latency", "bound", "by"]
    left = {"kernel", "op", "source", "phase", "of"}
    for col in cols:
        t.add_column(col, justify="left" if col in left else "right")
    for k in b.kernels:
        t.add_row(
            k.name,
            k.op,
            k.source,
            *([k.phase, k.origin] if training else []),
            fmt_ops(k.flops),
            fmt_bytes(k.bytes_read + k.bytes_written) + ("" if k.exact else "≥"),
            fmt_time(k.compute_s),
            fmt_time(k.memory_s),
            fmt_time(k.latency_s) if k.latency_s else "-",
            fmt_time(k.unfused_s),
            "latency" if k.latency_bound else k.bound_by,
        )
    s = Table(title="speed-of-light bounds")
    for col in ("level", "time", "bound by", "DRAM bytes", "meaning"):
        s.add_column(col)
    s.add_row(
        "unfused",
        fmt_time(b.unfused),
        b.unfused_bound_by,
        fmt_bytes(b.bytes_unfused),
        "one kernel per operator, DRAM in between",
    )
    s.add_row(
        "fused",
        fmt_time(b.fused),
        b.fused_bound_by,
        fmt_bytes(b.bytes_fused),
        "everything fused, infinite on-chip memory",
    )
    s.add_row(
        "cache-aware",
        fmt_time(b.cache_aware),
        b.cache_aware_bound_by,
        fmt_bytes(b.bytes_cache_aware),
        "everything fused, finite on-chip memory",
    )
    notes = "assumptions:\n" + "\n".join(f"  - {a}" for a in b.assumptions)
    total = "total work: " + fmt_ops(b.flops)
    return [
        t,
        s,
        *energy_renderables(b),
        *phase_renderables(b),
        total,
        *latency_lines(b),
        *memory_lines(b),
        notes,
    ]


def phase_renderables(b: Bound) -> list:
    """A training step's split: kernels, work, unfused bytes and time, and the compute floor
    of each phase (nothing for other programs)."""
    if not b.phases:
        return []
    t = Table(title="training step by phase (unfused kernels; compute: the phase's work alone)")
    for col in ("phase", "kernels", "work", "DRAM bytes", "unfused", "share", "compute"):
        t.add_column(col, justify="left" if col == "phase" else "right")
    total = sum(p.unfused_s for p in b.phases) or 1.0
    for p in b.phases:
        t.add_row(
            p.phase,
            str(p.kernels),
            fmt_ops(p.flops),
            fmt_bytes(p.bytes),
            fmt_time(p.unfused_s),
            f"{100 * p.unfused_s / total:.1f}%",
            fmt_time(p.compute_s),
        )
    return [t]


def latency_lines(b: Bound) -> list[str]:
    """Launches and the critical path (nothing when the bound has no latency terms)."""
    return b.latency.lines() if b.latency is not None else []


def memory_lines(b: Bound) -> list[str]:
    """``peak memory: ... of the GPU's ...: fits`` (nothing when the bound has no profile)."""
    m = b.memory
    if m is None:
        return []
    parts = m.at_peak_use or m.at_peak  # a training step: by use (weights, gradients, ...)
    roles = ", ".join(f"{r} {fmt_bytes(n)}" for r, n in sorted(parts.items()) if n)
    line = f"peak memory: {fmt_bytes(m.peak_bytes)}"
    if m.peak_kernel:
        line += f" while {m.peak_kernel} runs"
    line += f" ({roles})" if roles else ""
    if b.dram_capacity:
        verdict = "fits" if b.fits else "DOES NOT FIT on one GPU"
        line += f"; {b.hw} has {fmt_bytes(b.dram_capacity)}: {verdict}"
    return [line]


def comparison_renderables(c: Comparison) -> list:
    t = Table(title=f"{c.program}: speed-of-light bounds per GPU")
    cols = ("GPU", "unfused", "by", "fused", "by ", "cache-aware", "by  ", "DRAM bytes (c-a)")
    energy = any(b.energy.available for b in c.bounds)
    for col in (*cols, "vs fastest", *(["energy (c-a)"] if energy else [])):
        t.add_column(col, justify="left" if col.strip() in ("GPU", "by") else "right")
    best = c.fastest().cache_aware if c.bounds else 0.0
    for b in sorted(c.bounds, key=lambda b: b.cache_aware):
        t.add_row(
            b.hw,
            fmt_time(b.unfused),
            b.unfused_bound_by,
            fmt_time(b.fused),
            b.fused_bound_by,
            fmt_time(b.cache_aware),
            b.cache_aware_bound_by,
            fmt_bytes(b.bytes_cache_aware),
            f"x{b.cache_aware / best:.3g}" if best > 0 else "-",
            *([energy_cell(b)] if energy else []),
        )
    out = [t]
    if c.parallel:
        out.append(parallel_comparison_table(c))
    least = c.least_energy() if energy else None
    if least is not None:
        out.append(
            f"fewest joules (cache-aware energy floor): {least.hw}; GPUs without measured "
            "energy costs show -"
        )
    if c.errors:
        out.append("not comparable: " + "; ".join(f"{k}: {v}" for k, v in c.errors.items()))
    if c.bounds:
        b = c.bounds[0]
        out.append(
            f"same work on every GPU: {sum(b.flops.values()):.4g} ops, fused DRAM bytes "
            f"{fmt_bytes(b.bytes_fused)}; cache-aware bytes depend on each GPU's on-chip "
            "capacity"
        )
    return out


def parallel_comparison_table(c: Comparison) -> Table:
    """Each GPU kind's best plan of ``c.gpus`` GPUs."""
    t = Table(title=f"{c.program} on {c.gpus} GPUs of each kind: the best plan found")
    for col in (
        "GPU",
        "plan",
        "fused",
        "by",
        "cache-aware",
        "vs 1 GPU",
        "ideal",
        "memory/GPU",
        "link",
    ):
        t.add_column(col, justify="left" if col in ("GPU", "plan", "by") else "right")
    for p in sorted(c.parallel, key=lambda p: p.cache_aware):
        one = p.single.cache_aware if p.single else math.nan
        t.add_row(
            p.hw,
            p.plan.describe(),
            fmt_time(p.fused),
            p.fused_bound_by,
            fmt_time(p.cache_aware),
            f"x{one / p.cache_aware:.3g}" if p.cache_aware > 0 else "-",
            fmt_time(p.ideal_s),
            fmt_bytes(p.peak_bytes) + ("" if p.fits else " (DOES NOT FIT)"),
            fmt_rate(p.link_bandwidth, "B/s"),
        )
    return t


def provision_renderables(p: Provision) -> list:
    title = f"{p.program}: {p.level.replace('_', '-')} bound <= {fmt_time(p.target_s)}"
    need = Table(title=title + f" (relative to {p.hw})")
    for col in ("resource", "needed", f"{p.hw} has", "note"):
        need.add_column(col)
    spec = p.reference_spec
    for rate, v in sorted(p.peaks.items()):
        have = spec.peak(rate) if spec is not None and spec.has_unit(rate) else None
        need.add_row(
            f"peak {rate}",
            fmt_rate(v, "op/s"),
            fmt_rate(have, "op/s") if have else "-",
            "per unit: every rate of a unit scales together",
        )
    need.add_row(
        "compute scale",
        f"x{p.compute_scale:.3g}",
        "x1",
        "meets" if p.compute_scale <= 1 else "too slow",
    )
    need.add_row(
        "DRAM bandwidth (infinite on-chip)",
        fmt_rate(p.bandwidth_floor, "B/s"),
        fmt_rate(spec.dram_bandwidth, "B/s") if spec else "-",
        "fused bytes / target",
    )
    if spec is not None:
        at = p.bandwidth_needed(spec.on_chip_capacity)
        need.add_row(
            f"DRAM bandwidth at {fmt_bytes(spec.on_chip_capacity)} on chip",
            fmt_rate(at, "B/s"),
            fmt_rate(spec.dram_bandwidth, "B/s"),
            "meets" if at <= spec.dram_bandwidth else "too slow",
        )
    region = Table(title="feasible region: minimum DRAM bandwidth per on-chip capacity")
    for col in ("on-chip capacity", "x " + p.hw_key, "min bandwidth", "DRAM bytes"):
        region.add_column(col, justify="right")
    for pt in p.region[:: max(1, len(p.region) // 12)]:
        region.add_row(
            fmt_bytes(pt.capacity),
            f"{pt.capacity_scale:.3g}",
            fmt_rate(pt.bandwidth, "B/s"),
            fmt_bytes(pt.dram_bytes),
        )
    cat = Table(title="catalog GPUs against the target")
    energy = any(c.energy_j is not None for c in p.catalog)
    cols = ("GPU", "bound", "by", "meets", "slack", "target/bound", "BW needed", "BW")
    for col in (*cols, *(["energy floor"] if energy else [])):
        cat.add_column(col, justify="left" if col in ("GPU", "by") else "right")
    for c in sorted(p.catalog, key=lambda c: c.bound_s):
        cat.add_row(
            c.name,
            fmt_time(c.bound_s) if math.isfinite(c.bound_s) else "n/a",
            c.bound_by if not c.error else c.error[:40],
            "yes" if c.meets else "no",
            fmt_signed_time(c.slack_s),
            f"{c.ratio:.3g}",
            fmt_rate(c.bandwidth_needed, "B/s"),
            fmt_rate(c.dram_bandwidth, "B/s"),
            *([fmt_joules(c.energy_j)] if energy else []),
        )
    out = [need, region, cat]
    least = p.least_energy
    if least is not None:
        out.append(f"fewest joules meeting the target: {least.name} ({fmt_joules(least.energy_j)})")
    if any(c.fits is False for c in p.catalog):
        short = ", ".join(c.key for c in p.catalog if c.fits is False)
        out.append(f"does not fit in one GPU (never a match alone): {short}")
    return out + gpu_count_renderables(p.gpus)


def gpu_count_renderables(counts) -> list:
    """The fewest GPUs of each kind that hold the program and meet the target, the counts
    tried on the way (:func:`solar.questions.plan.tried_text`) and, for a plan found, its
    memory per GPU."""
    if not counts:
        return []
    c0 = counts[0]
    t = Table(
        title=f"GPUs needed: the fewest of each kind that hold it and meet "
        f"{fmt_time(c0.target_s)} ({c0.level.replace('_', '-')})"
    )
    columns = ("GPU", "GPUs", "proven minimum", "counts tried", "plan", "bound", "memory per GPU")
    for col in (*columns, "note"):
        t.add_column(col, justify="right" if col in ("GPUs", "proven minimum", "bound") else "left")
    for c in sorted(counts, key=lambda c: (c.gpus is None, c.gpus or 0, c.bound_s)):
        mem = f"{fmt_bytes(c.peak_bytes)} of {fmt_bytes(c.capacity)}" if c.meets else "-"
        t.add_row(
            c.name,
            str(c.gpus) if c.gpus else "none",
            str(c.at_least) if c.at_least else "-",
            tried_text(c.tried) or "-",
            c.plan or "-",
            fmt_time(c.bound_s) if math.isfinite(c.bound_s) else "-",
            mem,
            (c.reason or "")[:48],
        )
    return [
        t,
        "proven minimum: every input and weight byte held by some GPU, and the work and bytes "
        "split at best evenly. Counts tried: from the proven minimum up to a host's GPUs, until "
        "one meets the target; a count has a plan only when it factors as TP x PP x DP with the "
        "TP degree dividing a weight axis, the DP degree the batch and PP at most the kernels "
        "('no plan': none does; 'does not fit': its best plan exceeds a GPU's memory; "
        "'misses': its bound is above the target)",
    ]


def sweep_renderables(s: Sweep) -> list:
    t = Table(title=f"{s.program} on {s.hw}: best-case latency per {s.param}")
    for col in ("size", "unfused", "fused", "cache-aware", "by", "per item (cache-aware)"):
        t.add_column(col, justify="right")
    for n, b in zip(s.sizes, s.bounds):
        per = fmt_time(b.cache_aware / n) if isinstance(n, (int, float)) and n > 0 else "-"
        mark = ""
        if s.target_s is not None:
            mark = " ok" if b.cache_aware <= s.target_s else " over"
        t.add_row(
            str(n),
            fmt_time(b.unfused),
            fmt_time(b.fused),
            fmt_time(b.cache_aware) + mark,
            b.cache_aware_bound_by,
            per,
        )
    return [t]


def bound_text(b: Bound) -> str:
    return render(bound_renderables(b))


def comparison_text(c: Comparison) -> str:
    return render(comparison_renderables(c))


def provision_text(p: Provision) -> str:
    return render(provision_renderables(p))


def sweep_text(s: Sweep) -> str:
    return render(sweep_renderables(s))


def bound_batch_text(results: Sequence[BatchResult]) -> str:
    """One line per problem file of a batch: the three bounds, or the reason it has none;
    above them, the GPU they are on (named by the bounds themselves)."""
    width = max([len(r.name) for r in results] + [7])
    head = f"{'program':<{width}}  {'fused':>10}  {'cache-aware':>11}  {'unfused':>10}  status"
    gpu = next((r.bound["hw"] for r in results if r.ok and r.bound and r.bound.get("hw")), None)
    lines = [f"bounds on {gpu}"] if gpu else []
    lines += [head, "-" * len(head)]
    for r in results:
        if r.ok and r.bound is not None:
            b = r.bound["bounds"]
            lines.append(
                f"{r.name:<{width}}  {fmt_time(b['fused_s']):>10}  "
                f"{fmt_time(b['cache_aware_s']):>11}  {fmt_time(b['unfused_s']):>10}  ok"
            )
        else:
            lines.append(
                f"{r.name:<{width}}  {'-':>10}  {'-':>11}  {'-':>10}  {r.status}: {r.error}"
            )
    n_ok = sum(r.ok for r in results)
    n_skip = sum(r.status == "skipped" for r in results)
    n_late = sum(r.status == "timeout" for r in results)
    late = f", {n_late} timed out" if n_late else ""
    n_failed = len(results) - n_ok - n_skip - n_late
    lines.append(f"{n_ok} of {len(results)} bounded, {n_failed} failed{late}, {n_skip} skipped")
    return "\n".join(lines)
