"""The result of an analysis, as data: :class:`Bound` (and its :class:`KernelRow` s).

Its text table, HTML, DataFrame and plots are views (:mod:`solar.report`), reached through
:class:`~solar.viewable.Viewable`.

JSON schema ``solar.bound/1`` (stable; agents may rely on it)::

    {"schema": "solar.bound/1", "program": str, "hw": str (spec name), "hw_key": str,
     "bounds": {"unfused_s": float, "fused_s": float, "cache_aware_s": float,
                "unfused_bound_by": str, "fused_bound_by": str, "cache_aware_bound_by": str},
     "totals": {"flops": {op_class: int}, "bytes": {"unfused": int, "fused": int,
                "cache_aware": float}, "compute_s": {unit: float}},
     "memory": {"peak_bytes": int, "peak_kernel": str, "resident_bytes": int,
                "at_peak": {role: int}, "dram_capacity": int, "fits": bool,
                "at_peak_use": {use: int} (training steps only)},
     "latency": {"launch_floor_s": float, "sync_floor_s": float, "launches": int,
                 "critical_path": {"seconds": float, "steps": int,
                                   "sum_of_step_floors_s": float, "max_step_floor_s": float},
                 "chains": [{"kernel", "state", "steps": int, "lanes": int, "step_s",
                             "one_sm_s", "spread_s", "critical_path_s": float}],
                 "throughput_s": {level: float}, "latency_s": {level: float}},
     "kernels": [{"name", "op", "source", "module", "flops": {op_class: int},
                  "bytes_read": int, "bytes_written": int, "compute_s", "memory_s",
                  "time_s": float, "bound_by": str, "exact": bool, "latency_s": float,
                  "phase": str, "origin": str}],
     "phases": [{"phase", "kernels": int, "flops": {op_class: int}, "bytes": int,
                 "unfused_s": float, "compute_s": float}]  (empty unless a training step),
     "assumptions": [str]}

``bound_by`` is a physical unit (``tensor``, ``fma``, ``fp64``, ``int``, ``sfu``), ``dram``,
or ``latency`` (a launch floor or a critical path of dependent steps binds: see
:mod:`solar.backend.latency`). Each level's bound is ``max(throughput, latency)``:
``latency.throughput_s`` holds the bounds without the latency terms, ``latency.latency_s``
the latency terms alone (unfused: ``Σ_i latency_s`` of the kernels, at least the critical
path). A kernel's ``time_s`` is its roofline (what its own device time is compared with);
its term of the unfused sum is ``max(time_s, latency_s)``.

A training step's kernels carry ``phase`` (forward, backward, recompute, optimizer) and
``origin`` (the forward kernel a backward kernel differentiates, the parameters an optimizer
kernel updates); other programs leave both empty.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from solar.backend.latency import Latency
from solar.backend.memory import PeakMemory
from solar.backend.phases import PhaseRow
from solar.fmt import fmt_time
from solar.viewable import Viewable

SCHEMA = "solar.bound/1"
#: The three bound levels of docs/bounds.md, in the order reports show them.
LEVELS = ("unfused", "fused", "cache_aware")


def level_name(level: str) -> str:
    """``"cache-aware"`` / ``"Cache_Aware"`` -> ``"cache_aware"``; unknown levels rejected."""
    key = level.replace("-", "_").lower()
    if key not in LEVELS:
        raise ValueError(f"unknown level {level!r}; one of {', '.join(LEVELS)}")
    return key


@dataclass(frozen=True)
class KernelRow:
    name: str
    op: str
    source: str
    module: str
    flops: dict[str, int]
    bytes_read: int
    bytes_written: int
    compute_s: float
    memory_s: float
    time_s: float
    bound_by: str
    exact: bool
    phase: str = ""  # a training step's kernels: forward, backward, recompute or optimizer
    origin: str = ""  # what a backward / optimizer kernel belongs to
    latency_s: float = 0.0  # launch floor and own critical path (issue 13), unfused term

    @property
    def unfused_s(self) -> float:
        """This kernel's term of the unfused sum: max(roofline, latency)."""
        return max(self.time_s, self.latency_s)

    @property
    def latency_bound(self) -> bool:
        """Whether latency (a launch, a critical path) binds this kernel's unfused term."""
        return self.latency_s > self.time_s

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(repr=False)
class Bound(Viewable):
    """Speed-of-light bounds of one program on one GPU (seconds), with the work and DRAM
    bytes they rest on, per kernel and in total, and the assumptions stated."""

    program: str
    hw: str
    hw_key: str
    unfused: float
    fused: float
    cache_aware: float
    unfused_bound_by: str
    fused_bound_by: str
    cache_aware_bound_by: str
    flops: dict[str, int]
    bytes_unfused: int
    bytes_fused: int
    bytes_cache_aware: float
    compute_s: dict[str, float]
    kernels: list[KernelRow]
    assumptions: list[str]
    memory: PeakMemory | None = None  # peak live bytes over the kernel order
    phases: list[PhaseRow] = field(default_factory=list)  # a training step's parts
    dram_capacity: int = 0  # the GPU's device memory (bytes)
    latency: Latency | None = None  # launch floor and critical path (solar.backend.latency)
    graph: object = field(default=None, repr=False)  # the einsum graph (networkx)
    ir: object = field(default=None, repr=False)  # the Affine Loop IR program
    spec: object = field(default=None, repr=False)  # the HardwareSpec the bound is for

    @property
    def fits(self) -> bool | None:
        """Whether the program's peak live bytes fit in the GPU's device memory (None when
        either is unknown)."""
        if self.memory is None or not self.dram_capacity:
            return None
        return self.memory.peak_bytes <= self.dram_capacity

    def time(self, level: str) -> float:
        """The bound at ``level`` (``unfused``, ``fused``, ``cache_aware``), in seconds."""
        return getattr(self, level_name(level))

    def bound_by(self, level: str) -> str:
        """What binds the bound at ``level``: a physical unit or ``dram``."""
        return getattr(self, f"{level_name(level)}_bound_by")

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "program": self.program,
            "hw": self.hw,
            "hw_key": self.hw_key,
            "bounds": {
                "unfused_s": self.unfused,
                "fused_s": self.fused,
                "cache_aware_s": self.cache_aware,
                "unfused_bound_by": self.unfused_bound_by,
                "fused_bound_by": self.fused_bound_by,
                "cache_aware_bound_by": self.cache_aware_bound_by,
            },
            "totals": {
                "flops": dict(self.flops),
                "bytes": {
                    "unfused": self.bytes_unfused,
                    "fused": self.bytes_fused,
                    "cache_aware": self.bytes_cache_aware,
                },
                "compute_s": dict(self.compute_s),
            },
            "memory": None
            if self.memory is None
            else {**self.memory.to_dict(), "dram_capacity": self.dram_capacity, "fits": self.fits},
            "latency": None if self.latency is None else self.latency.to_dict(),
            "kernels": [k.to_dict() for k in self.kernels],
            "phases": [p.to_dict() for p in self.phases],
            "assumptions": list(self.assumptions),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __repr__(self) -> str:
        return (
            f"Bound({self.program!r} on {self.hw}: unfused {fmt_time(self.unfused)}, "
            f"fused {fmt_time(self.fused)}, cache-aware {fmt_time(self.cache_aware)})"
        )
