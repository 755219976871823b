"""Views of a compiled program's bounds and headroom (issue 33): the per-kernel table (kernel,
the source lines it covers, measured, the bound of its group, binding unit, headroom), the
three-term decomposition, and a plot of both."""

from __future__ import annotations

from rich.table import Table

from solar.fmt import fmt_time
from solar.gpu.compiled_headroom import CompiledHeadroom
from solar.questions.kernel_groups import CompiledBound
from solar.report.table import render

#: kernel names longer than this are cut in tables (Inductor's fused names run long)
NAME_WIDTH = 44


def _short(name: str, width: int = NAME_WIDTH) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def _lines(sources, n: int = 2) -> str:
    s = list(sources)
    return ", ".join(s[:n]) + (f" +{len(s) - n}" if len(s) > n else "")


def _tail(b: CompiledBound) -> list:
    out: list = []
    for k in b.kernels:
        if k.unmapped:
            out.append(f"unmapped kernel {_short(k.name)}: {k.unmapped}")
        elif k.mapped_by != "provenance":
            out.append(
                f"kernel {_short(k.name)} mapped by its {k.mapped_by} "
                f"({', '.join(k.sources)}): its nodes carry no provenance"
            )
    for u in b.uncovered:
        where = f" at {u.source}" if u.source else ""
        out.append(f"no kernel computes {u.kernel} ({u.op}{where}): {u.why}")
    for g in b.groups:
        if g.absorbed:
            out.append(f"group {g.index} also counts {', '.join(g.absorbed)} (no kernel names it)")
    return out


def compiled_bound_renderables(b: CompiledBound) -> list:
    t = Table(
        title=f"{b.program} compiled ({b.compiler}, {b.mode}) on {b.hw}: {len(b.kernels)} "
        f"kernels in {len(b.groups)} groups"
    )
    for c in ("group", "kernels", "source", "fused bound", "by", "floor in a run", "by", "bytes"):
        t.add_column(c)
    for g in b.groups:
        t.add_row(
            str(g.index),
            "\n".join(_short(n) for n in g.names),
            _lines(g.sources),
            fmt_time(g.fused_s),
            g.fused_bound_by,
            fmt_time(g.bound_s),
            g.bound_by,
            f"{g.bytes:,.0f}",
        )
    out: list = [
        t,
        f"fused bound {fmt_time(b.fused_s)} ({b.fused_bound_by}); sum of the group fused bounds "
        f"{fmt_time(b.groups_s)}: the fusion choices cost {fmt_time(b.fusion_cost_s)}",
    ]
    out += _tail(b) + [f"note: {n}" for n in b.notes]
    return out


def compiled_bound_text(b: CompiledBound) -> str:
    return render(compiled_bound_renderables(b))


def _pct(x: float | None, m: float | None) -> str:
    return f"{x / m:.0%}" if x is not None and m else "-"


def compiled_headroom_renderables(r: CompiledHeadroom) -> list:
    m = r.measured
    title = (
        f"{r.program} compiled ({r.mode}) on {r.hw}: measured {fmt_time(m.median_s) if m else '-'}"
    )
    if m:
        title += f" (median of {m.reps}" + (", L2 flushed)" if m.flushed else ")")
    t = Table(title=title)
    for c in ("group", "kernel", "source", "measured", "floor", "by", "headroom"):
        t.add_column(c)
    offset = 0
    gi = 0
    for b in r.bounds:
        for g in b.groups:
            gh = r.groups[gi]
            names = [b.kernels[i].name for i in g.kernels]
            meas = [r.kernels[offset + i].seconds for i in g.kernels]
            for j, (n, s) in enumerate(zip(names, meas, strict=True)):
                first = j == 0
                t.add_row(
                    str(gh.index) if first else "",
                    _short(n),
                    _lines(g.sources) if first else "",
                    fmt_time(s) if s is not None else "-",
                    fmt_time(g.bound_s) if first else "",
                    g.bound_by if first else "",
                    (f"{gh.headroom:.2f}x" if gh.headroom is not None else "-") if first else "",
                )
            gi += 1
        offset += len(b.kernels)
    terms = r.terms
    ms = terms["measured_s"]
    d = Table(title="where the time goes (terms add up to the measured time)")
    for c in ("term", "time", "share"):
        d.add_column(c)
    rows = [
        ("fused bound (the whole program fused)", terms["fused_bound_s"]),
        ("fusion choices (sum of group fused bounds - fused bound)", terms["fusion_s"]),
        ("kernel quality (groups measured - group fused bounds)", terms["kernel_quality_s"]),
        ("launches, gaps, unmatched work (measured - groups measured)", terms["launch_and_gaps_s"]),
    ]
    for name, x in rows:
        d.add_row(name, fmt_time(x) if x is not None else "-", _pct(x, ms))
    out: list = [
        t,
        "floor: what the group's kernels cannot beat with L2 flushed before the run (compute, "
        "latency, DRAM for first reads of inputs and weights and bytes beyond twice the L2)",
        d,
    ]
    if terms["kernel_quality_s"] is not None and terms["kernel_quality_s"] < 0:
        out.append(
            "kernel quality is negative: the groups ran faster than their fused bounds, "
            "reading data earlier kernels left in L2"
        )
    for b in r.bounds:
        out += _tail(b)
    if r.unmatched:
        s = sum(x[1] for x in r.unmatched)
        ops = sorted({op or n for n, _, op in r.unmatched})
        out.append(
            f"{fmt_time(s)} of device time in {len(r.unmatched)} activities matched to no "
            f"generated kernel (under {', '.join(_short(o, 40) for o in ops[:4])})"
        )
    out += [f"VIOLATION: {v}" for v in r.violations]
    out += [f"note: {n}" for n in r.notes]
    return out


def compiled_headroom_text(r: CompiledHeadroom) -> str:
    return render(compiled_headroom_renderables(r))


def plot_compiled_headroom(r: CompiledHeadroom, path: str | None = None, *, top: int = 20):
    """The three-term decomposition as one stacked bar, and the ``top`` groups by measured
    time with their bound beside; saved to ``path`` if given."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1, 3]})
    terms = r.terms
    parts = [
        ("fused bound", terms["fused_bound_s"]),
        ("fusion choices", terms["fusion_s"]),
        ("kernel quality", terms["kernel_quality_s"]),
        ("launches & gaps", terms["launch_and_gaps_s"]),
    ]
    bottom = 0.0
    for name, x in parts:
        if x is None:
            continue
        a.bar([0], [x * 1e6], bottom=[bottom], label=name)
        bottom += x * 1e6
    a.set_xticks([])
    a.set_ylabel("µs")
    a.set_title("measured, in terms")
    a.legend(fontsize=8)
    gs = sorted((g for g in r.groups if g.measured_s is not None), key=lambda g: -g.measured_s)[
        :top
    ]
    xs = range(len(gs))
    b.bar([x - 0.2 for x in xs], [g.measured_s * 1e6 for g in gs], width=0.4, label="measured")
    b.bar([x + 0.2 for x in xs], [g.bound_s * 1e6 for g in gs], width=0.4, label="group bound")
    b.set_xticks(list(xs))
    b.set_xticklabels([str(g.index) for g in gs])
    b.set_xlabel("group (by measured time)")
    b.set_ylabel("µs")
    b.set_yscale("log")
    b.set_title(f"{r.program}: kernel groups, measured vs bound")
    b.legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig
