"""DataFrame views (pandas, imported only when a DataFrame is asked for).

- :func:`bound_frame` — one row per kernel (``by="kernel"``) with its unfused numbers, its
  phase and origin (training steps) and its share of the fused and cache-aware bounds
  (stored by the analysis: :mod:`solar.backend.attribution`), one row per level
  (``by="level"``), or one row per phase of a training step (``by="phase"``);
- :func:`provision_frame`, :func:`comparison_frame`, :func:`sweep_frame` for the other results.
"""

from __future__ import annotations

import math

from solar.frontend.extras import optional


def _pd():
    with optional("to_dataframe()"):
        import pandas as pd
    return pd


# ---------------------------------------------------------------------------------------------
# DataFrames


def bound_frame(b, by: str = "kernel"):
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
        if b.energy.available:  # the energy floor (J); no column without measured costs
            df["energy_j"] = [b.energy.at(lv) for lv in df.index]
        return df
    if by == "phase":
        return _phase_frame(b, pd)
    if by != "kernel":
        raise ValueError(f"by must be 'kernel', 'level' or 'phase', got {by!r}")
    rows = []
    for k in b.kernels:
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
            "latency_s": k.latency_s,
            "unfused_s": k.unfused_s,
            "bound_by": "latency" if k.latency_bound else k.bound_by,
            "exact": k.exact,
            "phase": k.phase,
            "origin": k.origin,
        }
        row["fused_share_s"] = k.fused_s
        row["cache_aware_share_s"] = k.cache_aware_s
        row["fusion_gap_s"] = k.unfused_s - k.fused_s
        rows.append(row)
    df = pd.DataFrame(rows).set_index("kernel")
    flop_cols = [c for c in df.columns if c.startswith("flops_")]
    df[flop_cols] = df[flop_cols].fillna(0).astype("int64")
    return df


def _phase_frame(b, pd):
    """One row per phase of a training step (empty for other programs)."""
    rows = [
        {
            "phase": p.phase,
            "kernels": p.kernels,
            "flops": sum(p.flops.values()),
            **{f"flops_{c}": n for c, n in p.flops.items()},
            "dram_bytes": p.bytes,
            "unfused_s": p.unfused_s,
            "compute_s": p.compute_s,
        }
        for p in b.phases
    ]
    df = pd.DataFrame(rows, columns=None if rows else ["phase"]).set_index("phase")
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
