"""Plots of the reports (matplotlib, imported lazily).

- :func:`roofline_plot` — every kernel placed by arithmetic intensity (ops per DRAM byte,
  unfused) at the rate its bound allows, under the per-unit ceilings of the GPU (one line per
  rate the program uses) and the DRAM roof; the fused and cache-aware program points too;
- :func:`capacity_plot` — the "ski slope": cache-aware DRAM bytes against on-chip capacity,
  with the GPU's L2 and its total on-chip storage marked (and the catalog's GPUs);
- :func:`kernels_plot` — per-kernel time, stacked by level (unfused, cache-aware, fused; shares
  as in :func:`solar.backend.attribution.kernel_attribution`);
- :func:`region_plot` — the inverse roofline's feasible region, catalog GPUs placed in it;
- :func:`compare_plot` — bounds per GPU; :func:`sweep_plot` — latency per problem size.

- :func:`plot_headroom` — measured / bound per program (or per kernel) of headroom reports.

Each takes an optional matplotlib ``ax`` and returns the Figure. ``solar plot --all
examples/mlp_bf16.py --out docs/img`` writes them all as PNGs.

Figures are plain ``matplotlib.figure.Figure`` s, not pyplot's: a script that makes many keeps
no figure alive, and ``fig.savefig(path)`` writes one. Inside IPython (Jupyter, VS Code, the
terminal's rich front ends) a figure shows as a PNG wherever IPython displays a value (a cell's
last expression, ``display(fig)``): :func:`_figure` registers the PNG formatter that
matplotlib's inline backend would register only once pyplot is imported.
"""

from __future__ import annotations

import io
import math
import sys
from collections.abc import Sequence

from solar.backend.attribution import kernel_attribution
from solar.backend.cache_aware import default_capacities
from solar.backend.result import LEVELS
from solar.backend.units import UNIT_OF_RATE
from solar.fmt import fmt_bytes, fmt_time
from solar.frontend.extras import optional
from solar.hw import list_specs
from solar.report.style import COLORS

KINDS = ("roofline", "capacity", "kernels", "region", "compare")


def _figure(size, layout: str | None = "constrained"):
    """A new Figure (no pyplot), shown as a PNG by IPython when one is running."""
    with optional("plotting"):
        from matplotlib.figure import Figure
    _show_figures_in_ipython(Figure)
    return Figure(figsize=size, layout=layout)


def _show_figures_in_ipython(figure_class) -> None:
    """Register a PNG display formatter for Figures with the running IPython shell (Jupyter,
    VS Code's kernel), as ``matplotlib_inline`` does once pyplot is imported; without IPython,
    nothing (IPython is not imported)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None)
    if not formatters or "image/png" not in formatters:
        return
    png = formatters["image/png"]
    try:
        png.lookup_by_type(figure_class)  # one already (the inline backend's, or ours)
    except KeyError:
        png.for_type(figure_class, _png)


def _png(fig) -> bytes:
    """The PNG bytes of ``fig`` (what a notebook displays)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return buf.getvalue()


def _ax(ax, size=(7.0, 4.5)):
    if ax is not None:
        return ax
    return _figure(size).subplots()


def _color(by: str) -> str:
    return COLORS.get(by, "#7f7f7f")


def _labels(ax, points, fontsize=7, rotation=0) -> None:
    """Annotate ``(x, y, text)`` points, merging coincident ones and staggering neighbours
    (log axes: points within a factor 1.4 in x and 1.5 in y count as neighbours)."""
    merged: list[list] = []
    for x, y, text in sorted(points, key=lambda p: (p[0], p[1])):
        for m in merged:
            if abs(math.log(x / m[0])) < 1e-3 and abs(math.log(y / m[1])) < 1e-3:
                m[2] += f", {text}"
                break
        else:
            merged.append([x, y, text])
    level = 0
    for i, (x, y, text) in enumerate(merged):
        px, py = merged[i - 1][:2] if i else (x, y)
        near = i > 0 and abs(math.log(x / px)) < math.log(1.4) and abs(math.log(y / py)) < 0.4
        level = level + 1 if near else 0
        ax.annotate(
            text,
            (x, y),
            textcoords="offset points",
            xytext=(4, 4 + 9 * (level % 8)),
            fontsize=fontsize,
            rotation=rotation,
        )


def roofline_plot(b, ax=None, label_kernels: int = 12):
    """Kernels by arithmetic intensity under the per-unit ceilings and the DRAM roof."""
    spec = b.hardware()
    ax = _ax(ax, (8.0, 4.5))
    pts = []
    for k in b.kernels:
        ops, nbytes = sum(k.flops.values()), k.bytes_read + k.bytes_written
        t = max(k.time_s, getattr(k, "latency_s", 0.0))  # its term of the unfused sum
        if ops > 0 and nbytes > 0 and t > 0:
            pts.append((ops / nbytes, ops / t, k))
    total_ops = sum(b.flops.values())
    prog = []
    if total_ops > 0:
        for name, t, nb, marker in (
            ("fused", b.fused, b.bytes_fused, "*"),
            ("cache-aware", b.cache_aware, b.bytes_cache_aware, "D"),
        ):
            if t > 0 and nb > 0:
                prog.append((name, total_ops / nb, total_ops / t, marker))
    xs = [p[0] for p in pts] + [p[1] for p in prog] or [1.0]
    lo, hi = min(xs) / 8, max(xs) * 8
    rates = sorted(set(b.rates_used.values()), key=spec.peak)
    peaks = [spec.peak(r) for r in rates] or [spec.dram_bandwidth * hi]
    top = max(peaks)
    # DRAM roof up to the highest ceiling
    knee = top / spec.dram_bandwidth
    ax.plot(
        [lo, min(knee, hi)],
        [spec.dram_bandwidth * lo, spec.dram_bandwidth * min(knee, hi)],
        color=_color("dram"),
        lw=1.5,
    )
    ax.text(
        lo * 1.3,
        spec.dram_bandwidth * lo * 1.6,
        f"DRAM {spec.dram_bandwidth / 1e12:.3g} TB/s",
        color=_color("dram"),
        fontsize=8,
        rotation=0,
    )
    for r, pk in zip(rates, peaks):
        unit = UNIT_OF_RATE.get(r, "none")
        x0 = max(lo, pk / spec.dram_bandwidth)
        ax.hlines(pk, x0, hi, color=_color(unit), lw=1.2, linestyles="--")
        ax.text(
            hi,
            pk,
            f" {r} {pk / 1e12:.4g} T/s",
            va="center",
            ha="left",
            fontsize=8,
            color=_color(unit),
        )
    for x, y, k in pts:
        if getattr(k, "latency_bound", False):  # below the roofs: a launch or a dependent chain
            ax.scatter(
                [x],
                [y],
                s=44,
                marker="v",
                color=_color("latency"),
                edgecolor="black",
                lw=0.4,
                zorder=3,
            )
        else:
            ax.scatter(
                [x], [y], s=36, color=_color(k.bound_by), edgecolor="black", lw=0.4, zorder=3
            )
    _labels(
        ax, [(x, y, k.name) for x, y, k in sorted(pts, key=lambda p: -p[2].time_s)][:label_kernels]
    )
    for name, x, y, marker in prog:
        big = marker == "D"
        ax.scatter(
            [x],
            [y],
            s=130 if big else 80,
            marker=marker,
            color="gold" if big else "orange",
            edgecolor="black",
            zorder=4 if big else 5,
            label=f"program, {name}",
        )
    for by in sorted({k.bound_by for _, _, k in pts if not getattr(k, "latency_bound", False)}):
        ax.scatter(
            [], [], color=_color(by), edgecolor="black", lw=0.4, label=f"kernel bound by {by}"
        )
    if any(getattr(k, "latency_bound", False) for _, _, k in pts):
        ax.scatter(
            [],
            [],
            marker="v",
            color=_color("latency"),
            edgecolor="black",
            lw=0.4,
            label="kernel bound by latency (launch floor / critical path)",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ymin = min([p[1] for p in pts] + [p[2] for p in prog] + [spec.dram_bandwidth * lo]) / 3
    ax.set_ylim(ymin, top * 3)
    ax.set_xlabel("arithmetic intensity (ops per DRAM byte, unfused kernels)")
    ax.set_ylabel("ops/s at the speed-of-light bound")
    ax.set_title(f"{b.program} on {b.hw}: roofline", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, which="major", alpha=0.3)
    return ax.figure


def capacity_plot(b, ax=None, catalog: bool = True):
    """Cache-aware DRAM bytes against on-chip capacity, L2 and total on-chip marked (from the
    bound's stored cache-aware model)."""
    spec = b.hardware()
    ax = _ax(ax)
    at = b.cache_aware_bytes
    caps = default_capacities()
    ys = [at(c) for c in caps]
    ax.plot(caps, ys, color="#1f77b4", lw=2, label="cache-aware DRAM bytes (lower bound)")
    ax.axhline(b.bytes_fused, color="gray", ls=":", lw=1.2, label="fused (infinite on-chip)")
    for x, name, style in (
        (spec.l2_capacity, f"L2 {fmt_bytes(spec.l2_capacity)}", "--"),
        (spec.on_chip_capacity, f"all on-chip {fmt_bytes(spec.on_chip_capacity)}", "-"),
    ):
        ax.axvline(x, color="#d62728", ls=style, lw=1)
        ax.text(x * 1.08, max(ys) * 0.9, name, rotation=90, va="top", fontsize=8, color="#d62728")
    here = at(spec.on_chip_capacity)
    ax.scatter(
        [spec.on_chip_capacity],
        [here],
        color="#d62728",
        zorder=3,
        label=f"{spec.key}: {fmt_bytes(here)}",
    )
    if catalog:
        others = [s for s in list_specs() if s.key != spec.key]
        ax.scatter(
            [s.on_chip_capacity for s in others],
            [at(s.on_chip_capacity) for s in others],
            marker="|",
            s=120,
            color="black",
            zorder=3,
            label="catalog GPUs (on-chip)",
        )
        _labels(ax, [(s.on_chip_capacity, at(s.on_chip_capacity), s.key) for s in others])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(b.bytes_fused / 1.5, max(ys) * 1.5)
    ax.set_xlabel("on-chip capacity S (bytes: L2 + shared memory + registers)")
    ax.set_ylabel("DRAM bytes")
    ax.set_title(f"{b.program}: DRAM traffic vs on-chip capacity", fontsize=10)
    ax.legend(fontsize=7, loc="upper right")
    ax.grid(True, which="major", alpha=0.3)
    return ax.figure


def kernels_plot(b, ax=None, top: int = 9):
    """Time per level as stacked bars of the kernels' shares."""
    rows = kernel_attribution(b)
    ax = _ax(ax, (7.0, 3.2))
    order = sorted(range(len(rows)), key=lambda i: -rows[i]["unfused_s"])
    named, rest = order[:top], order[top:]
    levels = [("unfused", "unfused_s"), ("cache-aware", "cache_aware_s"), ("fused", "fused_s")]
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    scale, unit = _time_unit(max(b.unfused, b.cache_aware, b.fused))
    for y, (_, key) in enumerate(levels):
        left = 0.0
        for j, i in enumerate(named):
            w = rows[i][key] / scale
            ax.barh(
                y,
                w,
                left=left,
                color=cmap(j % 10),
                edgecolor="white",
                lw=0.5,
                label=rows[i]["kernel"] if y == 0 else None,
            )
            left += w
        w = sum(rows[i][key] for i in rest) / scale
        if rest:
            ax.barh(
                y,
                w,
                left=left,
                color="#cccccc",
                edgecolor="white",
                lw=0.5,
                label=f"{len(rest)} more" if y == 0 else None,
            )
            left += w
        ax.text(left, y, f" {fmt_time(left * scale)}", va="center", fontsize=8)
    ax.set_yticks(range(len(levels)), [lv for lv, _ in levels])
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit}), lower bound")
    ax.set_title(f"{b.program} on {b.hw}: per-kernel time by level", fontsize=10)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return ax.figure


def phases_plot(b, ax=None):
    """A training step's time per level as stacked bars of its phases (forward, backward,
    recompute, optimizer): the kernels' shares of each bound summed by phase."""
    rows = kernel_attribution(b)
    phases = [p.phase for p in b.phases] or [""]
    ax = _ax(ax, (7.0, 2.8))
    levels = [("unfused", "unfused_s"), ("cache-aware", "cache_aware_s"), ("fused", "fused_s")]
    colors = {"forward": "#4c72b0", "backward": "#dd8452", "recompute": "#937860"}
    colors["optimizer"] = "#55a868"
    scale, unit = _time_unit(max(b.unfused, b.cache_aware, b.fused))
    for y, (_, key) in enumerate(levels):
        left = 0.0
        for ph in phases:
            w = sum(r[key] for r, k in zip(rows, b.kernels) if k.phase == ph) / scale
            ax.barh(y, w, left=left, color=colors.get(ph, "#999999"), edgecolor="white",
                    lw=0.5, label=(ph or "program") if y == 0 else None)  # fmt: skip
            left += w
        ax.text(left, y, f" {fmt_time(left * scale)}", va="center", fontsize=8)
    ax.set_yticks(range(len(levels)), [lv for lv, _ in levels])
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit}), lower bound")
    ax.set_title(f"{b.program} on {b.hw}: time by phase and level", fontsize=10)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return ax.figure


def _time_unit(t: float) -> tuple[float, str]:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return scale, unit
    return 1e-9, "ns"


def region_plot(p, ax=None):
    """Minimum DRAM bandwidth per on-chip capacity for the target; catalog GPUs placed."""
    ax = _ax(ax, (8.5, 4.5))
    xs = [pt.capacity for pt in p.region]
    ys = [pt.bandwidth for pt in p.region]
    finite = [y for y in ys if math.isfinite(y)]
    gpus = [c for c in p.catalog if not c.error]
    ytop = max(finite + [c.dram_bandwidth for c in gpus] + [1.0]) * 4
    if finite:
        ax.plot(xs, ys, color="#1f77b4", lw=2, label="minimum DRAM bandwidth")
        ax.fill_between(xs, ys, ytop, color="#1f77b4", alpha=0.12, label="feasible (memory)")
        ax.axhline(p.bandwidth_floor, color="gray", ls=":", lw=1, label="infinite on-chip")
    for c in gpus:
        ok_mem = c.dram_bandwidth >= c.bandwidth_needed
        color = "#2ca02c" if c.meets else ("#ff7f0e" if ok_mem else "#d62728")
        ax.scatter(
            [c.on_chip_capacity], [c.dram_bandwidth], color=color, edgecolor="black", zorder=3
        )
    _labels(ax, [(c.on_chip_capacity, c.dram_bandwidth, c.key) for c in gpus])
    for color, label in (
        ("#2ca02c", "meets the target"),
        ("#ff7f0e", "memory ok, compute too slow"),
        ("#d62728", "memory too slow"),
    ):
        ax.scatter([], [], color=color, edgecolor="black", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(min(finite + [c.dram_bandwidth for c in gpus]) / 4, ytop)
    ax.set_xlabel("on-chip capacity (bytes)")
    ax.set_ylabel("DRAM bandwidth (bytes/s)")
    ax.set_title(
        f"{p.program}: {p.level.replace('_', '-')} bound <= {fmt_time(p.target_s)} "
        f"(compute x{p.compute_scale:.2g} of {p.hw_key})",
        fontsize=10,
    )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(True, which="major", alpha=0.3)
    return ax.figure


def compare_plot(c, ax=None):
    """Unfused, cache-aware and fused bounds per GPU."""
    ax = _ax(ax, (7.5, 3.8))
    bounds = sorted(c.bounds, key=lambda b: b.cache_aware)
    scale, unit = _time_unit(max((b.unfused for b in bounds), default=1.0))
    width = 0.27
    for j, (label, attr, color) in enumerate(
        (
            ("unfused", "unfused", "#aec7e8"),
            ("cache-aware", "cache_aware", "#1f77b4"),
            ("fused", "fused", "#ff7f0e"),
        )
    ):
        xs = [i + (j - 1) * width for i in range(len(bounds))]
        ax.bar(xs, [getattr(b, attr) / scale for b in bounds], width, label=label, color=color)
    ax.set_xticks(range(len(bounds)), [b.hw_key for b in bounds], rotation=20, fontsize=8)
    ax.set_ylabel(f"time ({unit}), lower bound")
    ax.set_title(f"{c.program}: bounds per GPU", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return ax.figure


def sweep_plot(s, ax=None):
    """Bounds per problem size (log-log), the target if any."""
    ax = _ax(ax)
    for label, attr, color, style in (
        ("unfused", "unfused", "#aec7e8", "-"),
        ("cache-aware", "cache_aware", "#1f77b4", "-"),
        ("fused", "fused", "#ff7f0e", "--"),
    ):
        ax.plot(
            s.sizes,
            [getattr(b, attr) for b in s.bounds],
            marker="o",
            label=label,
            color=color,
            ls=style,
            lw=2.5 if style == "-" else 1.2,
        )
    if s.target_s is not None:
        ax.axhline(s.target_s, color="#d62728", ls="--", label=f"target {fmt_time(s.target_s)}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(s.param)
    ax.set_ylabel("best-case latency (s)")
    ax.set_title(f"{s.program} on {s.hw}: latency per {s.param}", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return ax.figure


def plot_bound(b, kind: str = "roofline", **kw):
    """``Bound.plot(kind)``: ``roofline``, ``capacity``, ``kernels`` or ``phases`` (a training
    step's time per level by phase)."""
    fns = {"roofline": roofline_plot, "capacity": capacity_plot, "kernels": kernels_plot}
    fns["phases"] = phases_plot
    if kind not in fns:
        raise ValueError(f"kind must be one of {', '.join(fns)}, got {kind!r}")
    return fns[kind](b, **kw)


# ---------------------------------------------------------------------------------------------
# headroom (measured / bound)

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
    reports = [r for r in reports if r is not None and _get(r, "measured") is not None]
    if per_kernel and len(reports) == 1 and not isinstance(reports[0], dict):
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
    fig = _figure((max(6.0, 0.28 * len(labels) + 2), 4.8), layout=None)
    ax = fig.subplots()
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
    return fig


def headroom_report_plot(r, path=None):
    """``HeadroomReport.plot()``: headroom per level and per kernel; saved to ``path`` if given."""
    return plot_headroom([r], path, per_kernel=True)


def headroom_batch_plot(batch, path=None):
    """``BatchReport.plot()``: headroom per program of a batch; saved to ``path`` if given."""
    return plot_headroom([e.report for e in batch.entries if e.report is not None], path)
