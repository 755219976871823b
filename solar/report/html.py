"""HTML views for notebooks (``_repr_html_``): a bound with per-kernel bars, provisions,
comparisons and sweeps. Plain HTML with inline styles, no JavaScript."""

from __future__ import annotations

import html
import math

from solar.fmt import fmt_bytes, fmt_ops, fmt_rate, fmt_time
from solar.report.energy import energy_lines
from solar.report.style import COLORS
from solar.report.table import latency_lines, memory_lines

_CSS_TABLE = "border-collapse:collapse;font-size:12px;margin:4px 0"
_TD = "padding:2px 8px;border-bottom:1px solid #ddd;text-align:right"
_TDL = "padding:2px 8px;border-bottom:1px solid #ddd;text-align:left"
_TH = "padding:2px 8px;border-bottom:2px solid #999;text-align:left"


def _e(x) -> str:
    return html.escape(str(x))


def _bar(frac: float, color: str, width: int = 160) -> str:
    frac = 0.0 if not math.isfinite(frac) else min(max(frac, 0.0), 1.0)
    return (
        f'<div style="width:{width}px;background:#eee;height:10px">'
        f'<div style="width:{frac * width:.1f}px;background:{color};height:10px"></div></div>'
    )


def _tag(by: str) -> str:
    color = COLORS.get(by, "#7f7f7f")
    return (
        f'<span style="background:{color};color:white;border-radius:3px;padding:0 4px">'
        f"{_e(by)}</span>"
    )


def _table(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    th = "".join(f'<th style="{_TH}">{_e(h)}</th>' for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td style="{_TDL if i < left else _TD}">{cell}</td>' for i, cell in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    return f'<table style="{_CSS_TABLE}"><tr>{th}</tr>{body}</table>'


def bound_html(b) -> str:
    """Rich HTML for a Bound: the levels with bars, the kernels (with their share of the fused
    bound), the total work and the assumptions."""
    levels = [
        (
            "unfused",
            b.unfused,
            b.unfused_bound_by,
            b.bytes_unfused,
            "one kernel per operator, DRAM in between",
        ),
        (
            "cache-aware",
            b.cache_aware,
            b.cache_aware_bound_by,
            b.bytes_cache_aware,
            "everything fused, finite on-chip memory",
        ),
        (
            "fused",
            b.fused,
            b.fused_bound_by,
            b.bytes_fused,
            "everything fused, infinite on-chip memory",
        ),
    ]
    top = max(b.unfused, b.cache_aware, b.fused) or 1.0
    rows = [
        [
            f"<b>{name}</b>",
            f"<b>{fmt_time(t)}</b>",
            _tag(by),
            fmt_bytes(nb),
            _bar(t / top, COLORS.get(by, "#777")),
            _e(meaning),
        ]
        for name, t, by, nb, meaning in levels
    ]
    summary = _table(["level", "time", "bound by", "DRAM bytes", "", "meaning"], rows)
    gap = b.unfused / b.fused if b.fused > 0 else math.inf
    ktop = max((k.unfused_s for k in b.kernels), default=1.0) or 1.0
    krows = []
    for k in b.kernels:
        nbytes = k.bytes_read + k.bytes_written
        ops = sum(k.flops.values())
        by = "latency" if k.latency_bound else k.bound_by
        krows.append(
            [
                f"<code>{_e(k.name)}</code>",
                _e(k.op),
                _e(k.source),
                _e(fmt_ops(k.flops)),
                fmt_bytes(nbytes) + ("" if k.exact else "≥"),
                f"{ops / nbytes:.3g}" if nbytes else "∞",
                fmt_time(k.compute_s),
                fmt_time(k.memory_s),
                fmt_time(k.latency_s) if k.latency_s else "-",
                f"<b>{fmt_time(k.unfused_s)}</b>",
                _tag(by),
                _bar(k.unfused_s / ktop, COLORS.get(by, "#777"), 100),
                fmt_time(k.fused_s),
            ]
        )
    kernels = _table(
        [
            "kernel",
            "op",
            "source",
            "work",
            "DRAM bytes",
            "flop/B",
            "compute",
            "memory",
            "latency",
            "bound",
            "by",
            "",
            "share of fused",
        ],
        krows,
        left=3,
    )
    notes = "".join(f"<li>{_e(a)}</li>" for a in b.assumptions)
    return (
        f'<div style="font-family:sans-serif"><div><b>{_e(b.program)}</b> on '
        f"<b>{_e(b.hw)}</b> — speed-of-light bounds (lower bounds on time)</div>{summary}"
        f"<div>total work: {_e(fmt_ops(b.flops))}; unfused / fused = {gap:.3g}x "
        f"(fusion opportunity)</div>"
        + "".join(f"<div>{_e(line)}</div>" for line in latency_lines(b) + memory_lines(b))
        + "".join(f"<div>{_e(line)}</div>" for line in energy_lines(b))
        + "".join(
            f"<div>{_e(p.phase)}: {p.kernels} kernels, {_e(fmt_ops(p.flops))}, "
            f"unfused {fmt_time(p.unfused_s)}</div>"
            for p in b.phases
        )
        + f"<details open><summary>{len(b.kernels)} kernels (unfused, each through DRAM)"
        f"</summary>{kernels}</details>"
        f"<details><summary>assumptions</summary><ul>{notes}</ul></details></div>"
    )


def provision_html(p) -> str:
    spec = p.reference_spec
    need_rows = [
        [
            f"peak {_e(r)}",
            fmt_rate(v, "op/s"),
            fmt_rate(spec.peak(r), "op/s") if spec is not None and spec.has_unit(r) else "-",
        ]
        for r, v in sorted(p.peaks.items())
    ]
    need_rows.append(["compute scale", f"x{p.compute_scale:.3g}", "x1"])
    need_rows.append(
        [
            "DRAM bandwidth, infinite on-chip",
            fmt_rate(p.bandwidth_floor, "B/s"),
            fmt_rate(spec.dram_bandwidth, "B/s") if spec else "-",
        ]
    )
    if spec is not None:
        need_rows.append(
            [
                f"DRAM bandwidth at {fmt_bytes(spec.on_chip_capacity)} on chip",
                fmt_rate(p.bandwidth_needed(spec.on_chip_capacity), "B/s"),
                fmt_rate(spec.dram_bandwidth, "B/s"),
            ]
        )
    needs = _table(["resource", "needed", f"{p.hw} has"], need_rows)
    step = max(1, len(p.region) // 10)
    region = _table(
        ["on-chip capacity", f"x {p.hw_key}", "min DRAM bandwidth", "DRAM bytes"],
        [
            [
                fmt_bytes(pt.capacity),
                f"{pt.capacity_scale:.3g}",
                fmt_rate(pt.bandwidth, "B/s"),
                fmt_bytes(pt.dram_bytes),
            ]
            for pt in p.region[::step]
        ],
    )
    cat_rows = []
    for c in sorted(p.catalog, key=lambda c: c.bound_s):
        ok = (
            '<span style="color:#2ca02c">✔ meets</span>'
            if c.meets
            else '<span style="color:#d62728">✘</span>'
        )
        cat_rows.append(
            [
                _e(c.name),
                fmt_time(c.bound_s) if math.isfinite(c.bound_s) else _e(c.error or "n/a"),
                _tag(c.bound_by) if not c.error else "-",
                ok if c.fits is not False else '<span style="color:#d62728">✘ does not fit</span>',
                f"{c.ratio:.3g}x",
                fmt_rate(c.bandwidth_needed, "B/s"),
                fmt_rate(c.dram_bandwidth, "B/s"),
            ]
        )
    cat = _table(["GPU", "bound", "by", "target", "target/bound", "BW needed", "BW"], cat_rows)
    gpus = ""
    if p.gpus:
        rows = [
            [
                _e(c.name),
                str(c.gpus) if c.gpus else "none",
                str(c.at_least),
                _e(c.plan or "-"),
                fmt_time(c.bound_s) if math.isfinite(c.bound_s) else "-",
                _e(c.reason or ""),
            ]
            for c in sorted(p.gpus, key=lambda c: (c.gpus is None, c.gpus or 0, c.bound_s))
        ]
        head = ["GPU", "GPUs", "proven minimum", "plan", "bound", "note"]
        gpus = f"<div>GPUs needed (hold it and meet the target):</div>{_table(head, rows)}"
    return (
        f'<div style="font-family:sans-serif"><div><b>{_e(p.program)}</b>: '
        f"{_e(p.level.replace('_', '-'))} bound ≤ <b>{fmt_time(p.target_s)}</b> "
        f"(relative to {_e(p.hw)})</div>{needs}"
        f"<details><summary>feasible region (bandwidth ↔ capacity)</summary>{region}</details>"
        f"<div>catalog:</div>{cat}{gpus}</div>"
    )


def comparison_html(c) -> str:
    if not c.bounds:
        return f"<div>{_e(c.program)}: no GPU could run it: {_e(c.errors)}</div>"
    best = c.fastest().cache_aware or 1.0
    top = max(b.unfused for b in c.bounds) or 1.0
    rows = []
    for b in sorted(c.bounds, key=lambda b: b.cache_aware):
        rows.append(
            [
                _e(b.hw),
                fmt_time(b.unfused),
                _tag(b.unfused_bound_by),
                fmt_time(b.fused),
                _tag(b.fused_bound_by),
                f"<b>{fmt_time(b.cache_aware)}</b>",
                _tag(b.cache_aware_bound_by),
                fmt_bytes(b.bytes_cache_aware),
                f"x{b.cache_aware / best:.3g}",
                _bar(b.cache_aware / top, COLORS.get(b.cache_aware_bound_by, "#777"), 120),
            ]
        )
    table = _table(
        ["GPU", "unfused", "by", "fused", "by", "cache-aware", "by", "DRAM bytes", "vs best", ""],
        rows,
    )
    errs = (
        "<div>not comparable: " + _e("; ".join(f"{k}: {v}" for k, v in c.errors.items())) + "</div>"
        if c.errors
        else ""
    )
    return (
        f'<div style="font-family:sans-serif"><b>{_e(c.program)}</b>: bounds per GPU '
        f"(traced once){table}{errs}</div>"
    )


def sweep_html(s) -> str:
    rows = []
    top = max(b.unfused for b in s.bounds) or 1.0
    for n, b in zip(s.sizes, s.bounds):
        mark = ""
        if s.target_s is not None:
            mark = " ✔" if b.cache_aware <= s.target_s else " ✘"
        rows.append(
            [
                _e(n),
                fmt_time(b.unfused),
                fmt_time(b.fused),
                f"<b>{fmt_time(b.cache_aware)}</b>{mark}",
                _tag(b.cache_aware_bound_by),
                _bar(b.cache_aware / top, COLORS.get(b.cache_aware_bound_by, "#777"), 120),
            ]
        )
    target = f", target {fmt_time(s.target_s)}" if s.target_s is not None else ""
    return (
        f'<div style="font-family:sans-serif"><b>{_e(s.program)}</b> on {_e(s.hw)}: '
        f"best-case latency per {_e(s.param)}{target}"
        + _table([s.param, "unfused", "fused", "cache-aware", "by", ""], rows)
        + "</div>"
    )
