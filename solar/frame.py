"""Tabular views of reports for notebooks: pandas DataFrames and HTML (``_repr_html_``).

- :func:`bound_frame` — one row per kernel (``by="kernel"``) with its unfused numbers and its
  share of the fused and cache-aware bounds, or one row per level (``by="level"``);
- :func:`kernel_attribution` — how each level's time splits over the kernels: a level's time
  is ``max(compute, DRAM bytes / bandwidth)``; when DRAM binds, a kernel's share is its DRAM
  bytes at that level over the bandwidth (graph inputs charged to their first reader, graph
  outputs to their last writer, cache-aware extra traffic to the node that forces it); when a
  unit binds, the level's time split in proportion to the kernels' time on that unit. Shares
  add up to the level's time exactly;
- :func:`provision_frame`, :func:`comparison_frame`, :func:`sweep_frame` for the other reports;
- ``*_html`` renderers used by the reports' ``_repr_html_``.

pandas is imported only when a DataFrame is asked for.
"""

from __future__ import annotations

import html
import math

from solar.report import fmt_bytes, fmt_ops, fmt_time

# ---------------------------------------------------------------------------------------------
# shared helpers


def spec_of(b, hw=None):
    """The HardwareSpec a Bound was computed on (``hw`` overrides)."""
    from solar.hw import load_spec

    if hw is not None:
        return load_spec(hw)
    spec = getattr(b, "spec", None)
    if spec is not None:
        return spec
    try:
        return load_spec(b.hw_key)
    except ValueError as e:
        raise ValueError(
            f"cannot find the spec {b.hw_key!r} this bound was computed on; pass hw=<spec>"
        ) from e


def _pd():
    try:
        import pandas as pd
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("to_dataframe() needs pandas: pip install pandas") from e
    return pd


def kernel_attribution(b, hw=None) -> list[dict]:
    """Per kernel: ``unfused_s`` (its own bound), ``fused_s`` and ``cache_aware_s`` (its share
    of those levels), ``fused_bytes`` and ``cache_aware_bytes`` (its share of their DRAM
    bytes). See the module docstring for the rule."""
    from solar.backend.cache_aware import CacheAwareModel
    from solar.backend.roofline import graph_ops
    from solar.backend.units import compute_time

    g = b.graph
    spec = spec_of(b, hw)
    kernels = g.graph["kernels"]
    index = {k["name"]: i for i, k in enumerate(kernels)}
    fio = g.graph["fused_io"]
    fused = [0.0] * len(kernels)
    for base, nbytes in fio["reads"].items():
        i = next((j for j, k in enumerate(kernels) if base in k["reads"]), 0)
        fused[i] += nbytes
    for base, nbytes in fio["writes"].items():
        hits = [j for j, k in enumerate(kernels) if base in k["writes"]]
        fused[hits[-1] if hits else len(kernels) - 1] += nbytes
    extra = [0.0] * len(kernels)
    ca = CacheAwareModel(g).at(spec.on_chip_capacity)
    for node, x in ca.extra.items():
        extra[index.get(g.nodes[node].get("kernel"), 0)] += x
    per_unit = [compute_time(graph_ops(g, k["statements"]), spec).per_unit for k in kernels]

    def shares(time: float, by: str, nbytes: list[float]) -> list[float]:
        if by == "dram":
            return [x / spec.dram_bandwidth for x in nbytes]
        w = [pu.get(by, 0.0) for pu in per_unit]
        total = sum(w)
        if total <= 0:
            return [time / len(kernels)] * len(kernels)
        return [time * x / total for x in w]

    ca_bytes = [f + x for f, x in zip(fused, extra)]
    f_sh = shares(b.fused, b.fused_bound_by, fused)
    c_sh = shares(b.cache_aware, b.cache_aware_bound_by, ca_bytes)
    rows = []
    for i, k in enumerate(b.kernels):
        rows.append(
            {
                "kernel": k.name,
                "unfused_s": k.time_s,
                "fused_s": f_sh[i],
                "cache_aware_s": c_sh[i],
                "fused_bytes": fused[i],
                "cache_aware_bytes": ca_bytes[i],
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------
# DataFrames


def bound_frame(b, by: str = "kernel", hw=None):
    """A Bound as a DataFrame: ``by="kernel"`` (default) or ``by="level"``."""
    pd = _pd()
    if by == "level":
        rows = [
            {
                "level": "unfused",
                "time_s": b.unfused,
                "bound_by": b.unfused_bound_by,
                "dram_bytes": b.bytes_unfused,
            },
            {
                "level": "fused",
                "time_s": b.fused,
                "bound_by": b.fused_bound_by,
                "dram_bytes": b.bytes_fused,
            },
            {
                "level": "cache_aware",
                "time_s": b.cache_aware,
                "bound_by": b.cache_aware_bound_by,
                "dram_bytes": b.bytes_cache_aware,
            },
        ]
        df = pd.DataFrame(rows).set_index("level")
        df["flops"] = sum(b.flops.values())
        df["hw"] = b.hw
        return df
    if by != "kernel":
        raise ValueError(f"by must be 'kernel' or 'level', got {by!r}")
    shares = kernel_attribution(b, hw) if b.graph is not None else None
    rows = []
    for i, k in enumerate(b.kernels):
        ops = sum(k.flops.values())
        nbytes = k.bytes_read + k.bytes_written
        row = {
            "kernel": k.name,
            "op": k.op,
            "source": k.source,
            "module": k.module,
            "flops": ops,
            **{f"flops_{c}": n for c, n in k.flops.items()},
            "bytes_read": k.bytes_read,
            "bytes_written": k.bytes_written,
            "intensity": ops / nbytes if nbytes else math.inf,
            "compute_s": k.compute_s,
            "memory_s": k.memory_s,
            "unfused_s": k.time_s,
            "bound_by": k.bound_by,
            "exact": k.exact,
        }
        if shares is not None:
            row["fused_share_s"] = shares[i]["fused_s"]
            row["cache_aware_share_s"] = shares[i]["cache_aware_s"]
            row["fusion_gap_s"] = k.time_s - shares[i]["fused_s"]
        rows.append(row)
    df = pd.DataFrame(rows).set_index("kernel")
    flop_cols = [c for c in df.columns if c.startswith("flops_")]
    df[flop_cols] = df[flop_cols].fillna(0).astype("int64")
    return df


def provision_frame(p, part: str = "catalog"):
    """``part="catalog"`` (one row per GPU), ``"region"`` (capacity -> minimum bandwidth) or
    ``"peaks"`` (one row per rate)."""
    pd = _pd()
    if part == "catalog":
        return pd.DataFrame([c.to_dict() for c in p.catalog]).set_index("key")
    if part == "region":
        return pd.DataFrame([pt.__dict__ for pt in p.region])
    if part == "peaks":
        rows = [{"rate": r, "needed_ops_per_s": v} for r, v in sorted(p.peaks.items())]
        return pd.DataFrame(rows).set_index("rate")
    raise ValueError(f"part must be 'catalog', 'region' or 'peaks', got {part!r}")


def comparison_frame(c):
    pd = _pd()
    rows = []
    for gpu in c.to_dict()["gpus"]:
        rows.append(
            {
                "hw_key": gpu["hw_key"],
                "hw": gpu["hw"],
                **gpu["bounds"],
                "bytes_unfused": gpu["bytes"]["unfused"],
                "bytes_fused": gpu["bytes"]["fused"],
                "bytes_cache_aware": gpu["bytes"]["cache_aware"],
                "on_chip_capacity": gpu["on_chip_capacity"],
                "dram_bandwidth": gpu["dram_bandwidth"],
            }
        )
    return pd.DataFrame(rows).set_index("hw_key")


def sweep_frame(s):
    pd = _pd()
    df = pd.DataFrame(s.to_dict()["points"]).set_index("size")
    df.index.name = s.param
    return df


# ---------------------------------------------------------------------------------------------
# HTML

_CSS_TABLE = "border-collapse:collapse;font-size:12px;margin:4px 0"
_TD = "padding:2px 8px;border-bottom:1px solid #ddd;text-align:right"
_TDL = "padding:2px 8px;border-bottom:1px solid #ddd;text-align:left"
_TH = "padding:2px 8px;border-bottom:2px solid #999;text-align:left"
COLORS = {
    "dram": "#d62728",
    "tensor": "#1f77b4",
    "fma": "#2ca02c",
    "sfu": "#9467bd",
    "fp64": "#8c564b",
    "int": "#e377c2",
    "none": "#7f7f7f",
}


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
    try:
        shares = kernel_attribution(b) if b.graph is not None else None
    except ValueError:
        shares = None
    ktop = max((k.time_s for k in b.kernels), default=1.0) or 1.0
    krows = []
    for i, k in enumerate(b.kernels):
        nbytes = k.bytes_read + k.bytes_written
        ops = sum(k.flops.values())
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
                f"<b>{fmt_time(k.time_s)}</b>",
                _tag(k.bound_by),
                _bar(k.time_s / ktop, COLORS.get(k.bound_by, "#777"), 100),
                fmt_time(shares[i]["fused_s"]) if shares else "-",
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
        f"<details open><summary>{len(b.kernels)} kernels (unfused, each through DRAM)"
        f"</summary>{kernels}</details>"
        f"<details><summary>assumptions</summary><ul>{notes}</ul></details></div>"
    )


def provision_html(p) -> str:
    from solar.provisioning import fmt_rate

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
                ok,
                f"{c.ratio:.3g}x",
                fmt_rate(c.bandwidth_needed, "B/s"),
                fmt_rate(c.dram_bandwidth, "B/s"),
            ]
        )
    cat = _table(["GPU", "bound", "by", "target", "target/bound", "BW needed", "BW"], cat_rows)
    return (
        f'<div style="font-family:sans-serif"><div><b>{_e(p.program)}</b>: '
        f"{_e(p.level.replace('_', '-'))} bound ≤ <b>{fmt_time(p.target_s)}</b> "
        f"(relative to {_e(p.hw)})</div>{needs}"
        f"<details><summary>feasible region (bandwidth ↔ capacity)</summary>{region}</details>"
        f"<div>catalog:</div>{cat}</div>"
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
