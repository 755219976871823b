"""The result of an analysis, as frozen data: :class:`Bound` (and its :class:`KernelRow` s).

The analysis computes everything a view needs (per-kernel shares of every level, the
cache-aware model as its proven I/O items, the GPU's figures, the assumptions as records), so
a Bound holds no graph, IR or spec object: ``Bound.from_json(b.to_json())`` draws every view
as ``b`` does. Its text table, HTML, DataFrame and plots are views (:mod:`solar.report`),
reached through :class:`~solar.viewable.Viewable`.

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
     "assumptions": [str],
     # added (still solar.bound/1; files without them load, their views lack what they give):
     "assumption_records": [{"kind": str, "values": {...}, "text": str}],
     "gpu": {the HardwareSpec's to_dict(): peaks, bandwidth, capacities, ...},
     "rates_used": {op_class: rate},
     "cache_aware_model": {"fused_bytes": int, "items": [{"kind": "contraction" | "barrier",
                            ...the item's fields}]},
     "energy": {"levels": [{"level": str, "joules": float, "terms": [{"kind": "op" | "dram" |
                "static", "what": str, "amount": float, "per": float, "joules": float}]}]
                (empty without energy costs), "reason": str (why empty), "measured_on": str,
                "method": str, "uncharged": [rate]}}

Each kernel also carries its shares of the fused and cache-aware levels (``fused_s``,
``cache_aware_s``, ``fused_bytes``, ``cache_aware_bytes``: :mod:`solar.backend.attribution`)
and its ``cold_bytes``; ``totals.bytes`` the fused bytes read (``fused_read``); ``memory``
the live bytes per kernel (``timeline``).

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

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from solar.backend.assumptions import Assumption, note
from solar.backend.cache_aware import CacheAwareModel
from solar.backend.energy import EnergyFloor
from solar.backend.latency import LEVELS, ChainFloor, Latency
from solar.backend.memory import PeakMemory
from solar.backend.phases import PhaseRow
from solar.fmt import fmt_time
from solar.frozen import Frozen, thaw
from solar.viewable import Viewable

SCHEMA = "solar.bound/1"
__all__ = ["LEVELS", "SCHEMA", "Bound", "KernelRow", "level_name"]


def level_name(level: str) -> str:
    """``"cache-aware"`` / ``"Cache_Aware"`` -> ``"cache_aware"``; unknown levels rejected."""
    key = level.replace("-", "_").lower()
    if key not in LEVELS:
        raise ValueError(f"unknown level {level!r}; one of {', '.join(LEVELS)}")
    return key


@dataclass(frozen=True, kw_only=True)
class KernelRow(Frozen):
    """One kernel: its unfused roofline (work, bytes, compute and memory time, what binds),
    its latency floor, and its shares of the fused and cache-aware levels."""

    name: str
    op: str
    source: str
    module: str
    flops: Mapping[str, int]
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
    fused_s: float = 0.0  # share of the fused level (solar.backend.attribution)
    cache_aware_s: float = 0.0  # share of the cache-aware level
    fused_bytes: float = 0.0  # share of the fused DRAM bytes
    cache_aware_bytes: float = 0.0  # share of the cache-aware DRAM bytes
    cold_bytes: float = 0.0  # first reads of inputs, weights, constants (solar.gpu.violations)

    @property
    def unfused_s(self) -> float:
        """This kernel's term of the unfused sum: max(roofline, latency)."""
        return max(self.time_s, self.latency_s)

    @property
    def latency_bound(self) -> bool:
        """Whether latency (a launch, a critical path) binds this kernel's unfused term."""
        return self.latency_s > self.time_s

    def to_dict(self) -> dict:
        return {**self.__dict__, "flops": dict(self.flops)}

    @classmethod
    def from_dict(cls, d: dict) -> KernelRow:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(frozen=True, repr=False)
class Bound(Frozen, Viewable):
    """Speed-of-light bounds of one program on one GPU (seconds), with the work and DRAM
    bytes they rest on, per kernel and in total, and the assumptions stated. Frozen: lists
    given to the constructor are kept as tuples, dicts as read-only mappings."""

    program: str
    hw: str
    hw_key: str
    unfused: float
    fused: float
    cache_aware: float
    unfused_bound_by: str
    fused_bound_by: str
    cache_aware_bound_by: str
    flops: Mapping[str, int]
    bytes_unfused: int
    bytes_fused: int
    bytes_cache_aware: float
    compute_s: Mapping[str, float]
    kernels: tuple[KernelRow, ...]
    assumption_records: tuple[Assumption, ...]
    bytes_fused_read: int = 0  # of bytes_fused, what is read (the rest is written)
    memory: PeakMemory | None = None  # peak live bytes over the kernel order
    phases: tuple[PhaseRow, ...] = ()  # a training step's parts
    dram_capacity: int = 0  # the GPU's device memory (bytes)
    latency: Latency | None = None  # launch floor and critical path (solar.backend.latency)
    gpu: Mapping = field(default_factory=dict, repr=False)  # the spec's figures (to_dict())
    rates_used: Mapping[str, str] = field(default_factory=dict)  # op class -> the rate it ran at
    # DRAM bytes against on-chip capacity (the proven I/O items; None: not computed)
    cache_model: CacheAwareModel | None = field(default=None, repr=False)
    # joules per level (solar.backend.energy); none, and why, for a spec without energy costs
    energy: EnergyFloor = field(
        default_factory=lambda: EnergyFloor(reason="not computed"), repr=False
    )

    @property
    def assumptions(self) -> list[str]:
        """The assumptions as sentences (rendered from :attr:`assumption_records`)."""
        return [a.text for a in self.assumption_records]

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

    def hardware(self):
        """The :class:`~solar.hw.spec.HardwareSpec` this bound is for, rebuilt from its stored
        figures (a bound from a file without them: the catalogue's spec of ``hw_key``)."""
        from solar.hw import load_spec

        try:
            return load_spec(thaw(self.gpu) or self.hw_key)
        except ValueError as e:
            raise ValueError(
                f"cannot find the spec {self.hw_key!r} this bound was computed on: the bound "
                "stores no GPU figures (a file written before they were) and the catalogue has "
                "no such GPU; bound the program again"
            ) from e

    def cache_aware_bytes(self, capacity: float) -> float:
        """Proven DRAM bytes of the program at on-chip ``capacity`` bytes (the curve of the
        capacity plot and of provisioning)."""
        if self.cache_model is None:
            raise ValueError(
                f"this bound of {self.program!r} has no cache-aware model (loaded from a file "
                "written before it was stored): bound the program again"
            )
        return self.cache_model.bytes(capacity)

    def to_dict(self) -> dict:
        memory = None
        if self.memory is not None:
            memory = {
                **self.memory.to_dict(),
                "dram_capacity": self.dram_capacity,
                "fits": self.fits,
                "timeline": list(self.memory.timeline),
            }
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
                    "fused_read": self.bytes_fused_read,
                },
                "compute_s": dict(self.compute_s),
            },
            "memory": memory,
            "latency": None if self.latency is None else self.latency.to_dict(),
            "kernels": [k.to_dict() for k in self.kernels],
            "phases": [p.to_dict() for p in self.phases],
            "assumptions": self.assumptions,
            "assumption_records": [a.to_dict() for a in self.assumption_records],
            "gpu": thaw(self.gpu),
            "rates_used": dict(self.rates_used),
            "cache_aware_model": None if self.cache_model is None else self.cache_model.to_dict(),
            "energy": self.energy.to_dict(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d: dict) -> Bound:
        """The Bound of :meth:`to_dict` (``solar.bound/1``; fields added later may be absent)."""
        if d.get("schema") != SCHEMA:
            raise ValueError(f"not a {SCHEMA} object (schema {d.get('schema')!r})")
        bounds, totals = d["bounds"], d["totals"]
        kernels = [KernelRow.from_dict(k) for k in d["kernels"]]
        records = [Assumption.from_dict(a) for a in d.get("assumption_records", ())]
        if "assumption_records" not in d:  # an older file: its sentences, as notes
            records = [note(a) for a in d.get("assumptions", ())]
        m = d.get("memory")
        memory = None
        if m is not None:
            memory = PeakMemory(
                peak_bytes=m["peak_bytes"],
                peak_kernel=m["peak_kernel"],
                resident_bytes=m["resident_bytes"],
                at_peak=dict(m["at_peak"]),
                timeline=tuple(m.get("timeline", ())),
                at_peak_use=dict(m.get("at_peak_use", {})),
            )
        final = {lv: bounds[f"{lv}_s"] for lv in LEVELS}
        lat = d.get("latency")
        latency = None if lat is None else _latency(lat, kernels, final)
        model = d.get("cache_aware_model")
        return cls(
            program=d["program"],
            hw=d["hw"],
            hw_key=d["hw_key"],
            unfused=final["unfused"],
            fused=final["fused"],
            cache_aware=final["cache_aware"],
            unfused_bound_by=bounds["unfused_bound_by"],
            fused_bound_by=bounds["fused_bound_by"],
            cache_aware_bound_by=bounds["cache_aware_bound_by"],
            flops=dict(totals["flops"]),
            bytes_unfused=totals["bytes"]["unfused"],
            bytes_fused=totals["bytes"]["fused"],
            bytes_cache_aware=totals["bytes"]["cache_aware"],
            bytes_fused_read=totals["bytes"].get("fused_read", 0),
            compute_s=dict(totals["compute_s"]),
            kernels=kernels,
            assumption_records=records,
            memory=memory,
            phases=[PhaseRow(**p) for p in d.get("phases", ())],
            dram_capacity=(m or {}).get("dram_capacity", 0),
            latency=latency,
            gpu=dict(d.get("gpu") or {}),
            rates_used=dict(d.get("rates_used") or {}),
            cache_model=None if model is None else CacheAwareModel.from_dict(model),
            energy=_energy(d.get("energy")),
        )

    @classmethod
    def from_json(cls, text: str) -> Bound:
        """The Bound of :meth:`to_json` text."""
        return cls.from_dict(json.loads(text))

    def __repr__(self) -> str:
        return (
            f"Bound({self.program!r} on {self.hw}: unfused {fmt_time(self.unfused)}, "
            f"fused {fmt_time(self.fused)}, cache-aware {fmt_time(self.cache_aware)})"
        )


def _energy(d: dict | None) -> EnergyFloor:
    """The energy floor of a bound file (a file written before floors were: none, and why)."""
    if d is None:
        return EnergyFloor(reason="a bound file written before energy floors were computed")
    return EnergyFloor.from_dict(d)


def _latency(d: dict, kernels: Sequence[KernelRow], final: dict[str, float]) -> Latency:
    """A :class:`Latency` from its ``to_dict`` (per-kernel floors from the kernels, the final
    bounds from the levels)."""
    cp = d["critical_path"]
    return Latency(
        launch_floor_s=d["launch_floor_s"],
        sync_floor_s=d["sync_floor_s"],
        launches=d["launches"],
        critical_path_s=cp["seconds"],
        critical_steps=cp["steps"],
        critical_sum_s=cp["sum_of_step_floors_s"],
        critical_max_s=cp["max_step_floor_s"],
        chains=[ChainFloor(**c) for c in d["chains"]],
        kernel_s=[k.latency_s for k in kernels],
        throughput=dict(d["throughput_s"]),
        bounds=dict(d["latency_s"]),
        final=dict(final),
    )
