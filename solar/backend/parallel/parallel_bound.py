"""The result of a parallel bound, as data: :class:`Plan`, :class:`StageBound` and
:class:`ParallelBound` (computed by :mod:`solar.backend.parallel.model`; its views are
:mod:`solar.report.parallel`).

JSON schema ``solar.parallel/1``::

    {"schema": "solar.parallel/1", "program", "hw", "hw_key": str, "gpus": int,
     "plan": {"tp", "pp", "dp", "micro_batches": int, "text": str,
              "tp_groups": [{"label", "extent", "statements", "kernels"}], "batch": str,
              "stage_starts": [int]},
     "bounds": {"unfused_s", "fused_s", "cache_aware_s", "ideal_s", "single_gpu_fused_s": float,
                "fused_bound_by": str},
     "memory": {"peak_bytes_per_gpu": float, "dram_capacity": int, "fits": bool},
     "link_bandwidth": float, "bubble": float,
     "stages": [{"first_kernel", "last_kernel", "kernels", "compute_s", "compute_by",
                 "bytes_fused", "bytes_cache_aware", "bytes_unfused", "unfused_work_s",
                 "comm_s", "path_s": {level: float}, "fill_s", "drain_s", "peak_bytes"}],
     "collectives": [{"tensor", "kind", "mesh", "n", "tensor_bytes", "kernel", "batch",
                      "fraction", "in_network", "bytes_per_gpu", "time_s", "stage"}],
     "assumptions": [str]}
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from solar.backend.result import Bound, level_name
from solar.fmt import fmt_bytes, fmt_time, jsonable
from solar.frozen import Frozen, thaw
from solar.viewable import Viewable

SCHEMA = "solar.parallel/1"


@dataclass(frozen=True)
class Plan:
    """How ``tp * pp * dp`` GPUs share one program (see the module docstring)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    micro_batches: int = 1
    tp_groups: tuple[int, ...] = ()  # split-group ids split tp ways
    batch_group: int | None = None  # the split group dp and micro-batches split
    starts: tuple[int, ...] = (0,)  # first kernel of each pipeline stage

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def describe(self) -> str:
        text = f"TP {self.tp} x PP {self.pp} x DP {self.dp}"
        return text + (f", {self.micro_batches} micro-batches" if self.pp > 1 else "")

    def assignment(self) -> dict[int, tuple[str, int]]:
        out = {gid: ("tp", self.tp) for gid in self.tp_groups} if self.tp > 1 else {}
        if self.dp > 1:
            out[self.batch_group] = ("dp", self.dp)
        return out


@dataclass(frozen=True)
class StageBound(Frozen):
    """One pipeline stage on one of its GPUs (seconds, bytes)."""

    first_kernel: str
    last_kernel: str
    kernels: int
    compute_s: float
    compute_by: str  # the unit that binds the compute time
    bytes_fused: float
    bytes_cache_aware: float
    bytes_unfused: float
    unfused_work_s: float  # Σ over its kernels of max(compute, memory), no communication
    comm_s: float
    path_s: Mapping[str, float]  # per level: its work between the first arrival and last departure
    fill_s: float  # τ: one micro-batch on its way to the next stage
    drain_s: float  # one micro-batch on its way to the next stage or the outputs
    peak_bytes: float

    def to_dict(self) -> dict:
        return {**self.__dict__, "path_s": dict(self.path_s)}


@dataclass(frozen=True, repr=False)
class ParallelBound(Frozen, Viewable):
    """Bounds of one program on ``gpus`` GPUs under ``plan`` (seconds), with what they rest
    on: per-stage work and communication, the collectives, per-GPU memory. Frozen (lists
    kept as tuples, dicts as read-only mappings)."""

    program: str
    hw: str
    hw_key: str
    gpus: int
    plan: Plan
    tp_groups: tuple[Mapping, ...]  # label, extent, statements, kernels of each group split by tp
    batch: str | None  # the batch axis dp and micro-batches split
    unfused: float
    fused: float
    cache_aware: float
    fused_bound_by: str  # compute unit, "dram", "link" or "pipeline"
    stages: tuple[StageBound, ...]
    collectives: tuple[Mapping, ...]
    peak_bytes: float  # per GPU, the largest over stages
    dram_capacity: int
    ideal_s: float  # any plan on these GPUs: perfect split, no communication (fused)
    link_bandwidth: float  # bytes/s per GPU per direction
    bubble: float  # (pp - 1) / (m + pp - 1)
    assumptions: tuple[str, ...]
    single: Bound | None = field(default=None, repr=False)

    @property
    def fits(self) -> bool:
        return self.peak_bytes <= self.dram_capacity

    def time(self, level: str) -> float:
        return getattr(self, level_name(level))

    @property
    def speedup(self) -> float:
        """Single-GPU fused bound / this plan's fused bound."""
        return self.single.fused / self.fused if self.single and self.fused > 0 else math.nan

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "program": self.program,
            "hw": self.hw,
            "hw_key": self.hw_key,
            "gpus": self.gpus,
            "plan": {
                "tp": self.plan.tp,
                "pp": self.plan.pp,
                "dp": self.plan.dp,
                "micro_batches": self.plan.micro_batches,
                "text": self.plan.describe(),
                "tp_groups": thaw(self.tp_groups),
                "batch": self.batch,
                "stage_starts": list(self.plan.starts),
            },
            "bounds": {
                "unfused_s": self.unfused,
                "fused_s": self.fused,
                "cache_aware_s": self.cache_aware,
                "fused_bound_by": self.fused_bound_by,
                "ideal_s": self.ideal_s,
                "single_gpu_fused_s": self.single.fused if self.single else None,
            },
            "memory": {
                "peak_bytes_per_gpu": self.peak_bytes,
                "dram_capacity": self.dram_capacity,
                "fits": self.fits,
            },
            "link_bandwidth": self.link_bandwidth,
            "bubble": self.bubble,
            "stages": [s.to_dict() for s in self.stages],
            "collectives": thaw(self.collectives),
            "assumptions": list(self.assumptions),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(jsonable(self.to_dict()), indent=indent)

    def __repr__(self) -> str:
        return (
            f"ParallelBound({self.program!r} on {self.gpus} x {self.hw}, {self.plan.describe()}: "
            f"fused {fmt_time(self.fused)}, cache-aware {fmt_time(self.cache_aware)}, "
            f"{fmt_bytes(self.peak_bytes)} per GPU)"
        )
