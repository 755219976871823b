"""Text views of multi-GPU results: a parallel plan's bound (:class:`ParallelBound`) and the
multi-GPU tables of comparisons and provisions."""

from __future__ import annotations

import math

from rich.table import Table

from solar.backend.parallel.parallel_bound import ParallelBound
from solar.fmt import fmt_bytes, fmt_time
from solar.report.table import render


def _x(a: float, b: float) -> str:
    return f"x{a / b:.3g}" if b > 0 and math.isfinite(a) and math.isfinite(b) else "-"


def fit_text(peak: float, capacity: float, hw: str) -> str:
    verdict = "fits" if peak <= capacity else "DOES NOT FIT"
    return f"{fmt_bytes(peak)} per GPU of {hw}'s {fmt_bytes(capacity)}: {verdict}"


def parallel_renderables(p: ParallelBound) -> list:
    head = f"{p.program} on {p.gpus} x {p.hw}: {p.plan.describe()}"
    s = Table(title=head)
    for col in ("level", "time", "vs 1 GPU", "meaning"):
        s.add_column(col)
    one = p.single
    s.add_row(
        "unfused",
        fmt_time(p.unfused),
        _x(one.unfused, p.unfused) if one else "-",
        "one kernel per operator per GPU, and the plan's communication",
    )
    s.add_row(
        "fused",
        fmt_time(p.fused),
        _x(one.fused, p.fused) if one else "-",
        f"the plan's speed of light, bound by {p.fused_bound_by}",
    )
    s.add_row(
        "cache-aware",
        fmt_time(p.cache_aware),
        _x(one.cache_aware, p.cache_aware) if one else "-",
        "fused, with each GPU's finite on-chip memory",
    )
    s.add_row(
        "ideal",
        fmt_time(p.ideal_s),
        _x(one.fused, p.ideal_s) if one else "-",
        f"any plan: a perfect {p.gpus}-way split with no communication",
    )
    out: list = [s]
    if p.tp_groups:
        t = Table(title=f"tensor parallel: split {p.plan.tp} ways (from the einsum graph)")
        for col in ("split axis", "extent", "per GPU", "statements", "kernels"):
            t.add_column(col)
        for grp in p.tp_groups:
            names = grp["kernels"]
            t.add_row(
                grp["label"],
                str(grp["extent"]),
                str(grp["extent"] // p.plan.tp),
                str(grp["statements"]),
                ", ".join(names[:4]) + (f" (+{len(names) - 4})" if len(names) > 4 else ""),
            )
        out.append(t)
    if p.batch and p.plan.dp > 1:
        out.append(f"data parallel: {p.batch} split {p.plan.dp} ways")
    out.append(_stage_table(p))
    if p.collectives:
        out.append(_collective_table(p))
    else:
        out.append("collectives: none (the split needs no communication)")
    out.append("peak memory: " + fit_text(p.peak_bytes, p.dram_capacity, p.hw))
    out.append("assumptions:\n" + "\n".join(f"  - {a}" for a in p.assumptions))
    return out


def _stage_table(p: ParallelBound) -> Table:
    t = Table(title="per GPU, per pipeline stage" if p.plan.pp > 1 else "per GPU")
    cols = (
        "stage",
        "kernels",
        "compute",
        "DRAM (fused)",
        "communication",
        "micro-batch τ",
        "peak memory",
    )
    for col in cols:
        t.add_column(col, justify="left" if col in ("stage", "kernels") else "right")
    for i, st in enumerate(p.stages):
        t.add_row(
            str(i),
            f"{st.first_kernel} .. {st.last_kernel} ({st.kernels})",
            fmt_time(st.compute_s),
            f"{fmt_bytes(st.bytes_fused)} {fmt_time(st.bytes_fused / _bw(p))}",
            fmt_time(st.comm_s),
            fmt_time(st.fill_s) if p.plan.pp > 1 else "-",
            fmt_bytes(st.peak_bytes),
        )
    return t


def _bw(p: ParallelBound) -> float:
    return p.single.gpu.get("dram_bandwidth", math.inf)


def _collective_table(p: ParallelBound, limit: int = 12) -> Table:
    rows = sorted(p.collectives, key=lambda c: -c["time_s"])
    total = sum(c["time_s"] for c in rows)
    t = Table(
        title=f"collectives it cannot avoid ({len(rows)}, {fmt_time(total)} in all at "
        f"{p.link_bandwidth / 1e9:g} GB/s per GPU per direction)"
    )
    for col in ("tensor", "collective", "GPUs", "tensor bytes", "bytes per GPU", "time", "stage"):
        t.add_column(col, justify="left" if col in ("tensor", "collective") else "right")
    for c in rows[:limit]:
        kind = c["kind"] + (" (in-network)" if c.get("in_network") else "")
        t.add_row(
            c["tensor"],
            f"{kind}, {c['mesh']}",
            str(c["n"]),
            fmt_bytes(c["tensor_bytes"]),
            fmt_bytes(c["bytes_per_gpu"]),
            fmt_time(c["time_s"]),
            str(c["stage"]),
        )
    if len(rows) > limit:
        t.add_row(f"... {len(rows) - limit} more", "", "", "", "", "", "")
    return t


def parallel_text(p: ParallelBound) -> str:
    return render(parallel_renderables(p))
