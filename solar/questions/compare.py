"""Cross-GPU comparison (docs/overview.md): one program, every level's bound on several GPUs.

``compare(model, inputs, hw=["A100", "H100", "B200"])`` (or ``hw="all"``: the whole catalog)
traces and lifts once, then analyses the same einsum graph against each spec: the work and the
fused bytes are the same on every GPU; compute times, bottlenecks and the cache-aware bytes
(which depend on each GPU's on-chip capacity) differ. A GPU without a unit the program needs
is listed with the reason instead of a bound. Where a GPU's spec has measured energy costs
(:mod:`solar.hw.energy`), each bound carries its energy floor, and :meth:`Comparison.least_energy`
is the GPU that spends the fewest joules on the program (provisioning by energy).

JSON schema ``solar.compare/1``::

    {"schema": "solar.compare/1", "program": str,
     "gpus": [{"hw": str, "hw_key": str, "on_chip_capacity": int, "dram_bandwidth": float,
               "bounds": {"unfused_s", "fused_s", "cache_aware_s": float,
                          "unfused_bound_by", "fused_bound_by", "cache_aware_bound_by": str},
               "bytes": {"unfused": int, "fused": int, "cache_aware": float},
               "energy_j": {level: float | null (null: no measured energy costs)},
               "energy_reason": str (why null)}],
     "errors": {hw_key: str},
     "gpus": int,  # with gpus > 1: each GPU kind's best plan of that many GPUs
     "parallel": [solar.parallel/1 objects]}

``compare(..., gpus=8)`` adds, per GPU kind, the bound of the best tensor/pipeline/data
parallel plan of 8 GPUs (:func:`solar.api.bound_parallel`); a kind with no such plan (no
interconnect block, fewer GPUs per host) is listed in ``errors``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from solar.api import bound_graph, bound_parallel, trace_and_lift
from solar.backend.parallel.model import ParallelModel
from solar.backend.parallel.parallel_bound import ParallelBound
from solar.backend.result import Bound
from solar.fmt import fmt_time
from solar.frozen import Frozen, thaw
from solar.hw import list_specs, load_spec
from solar.viewable import Viewable

SCHEMA = "solar.compare/1"
#: the GPUs :func:`compare` and :func:`compare_graph` bound when none are named
DEFAULT_HW = ("A100", "H100", "B200")


def resolve_hw(hw) -> list:
    """``"all"``, ``"A100,H100"``, a name, a spec, or a list of those -> specs."""
    if isinstance(hw, str):
        if hw.strip().lower() == "all":
            return list_specs()
        names: Iterable = [h for h in hw.split(",") if h.strip()] if "," in hw else [hw]
    elif isinstance(hw, Iterable) and not isinstance(hw, dict):
        names = list(hw)
    else:
        names = [hw]
    specs = [load_spec(h.strip() if isinstance(h, str) else h) for h in names]
    if not specs:
        raise ValueError("compare needs at least one GPU")
    return specs


@dataclass(frozen=True, repr=False)
class Comparison(Frozen, Viewable):
    """One program's bounds on several GPUs (``errors``: GPUs that cannot run it, and why)."""

    program: str
    bounds: tuple[Bound, ...]
    errors: Mapping[str, str] = field(default_factory=dict)
    gpus: int = 1
    parallel: tuple[ParallelBound, ...] = ()  # with gpus > 1

    def bound(self, hw: str) -> Bound:
        """The bound on the GPU with this key or name."""
        for b in self.bounds:
            if hw in (b.hw_key, b.hw):
                return b
        key = load_spec(hw).key
        for b in self.bounds:
            if b.hw_key == key:
                return b
        raise KeyError(f"{hw} is not in this comparison ({', '.join(self.keys)})")

    @property
    def keys(self) -> list[str]:
        return [b.hw_key for b in self.bounds]

    def fastest(self, level: str = "cache_aware") -> Bound:
        return min(self.bounds, key=lambda b: b.time(level))

    def least_energy(self, level: str = "cache_aware") -> Bound | None:
        """The GPU with the lowest energy floor at ``level`` (provisioning by energy); GPUs
        whose spec has no measured energy costs take no part (None: none has them)."""
        known = [b for b in self.bounds if b.energy.available]
        return min(known, key=lambda b: b.energy.at(level)) if known else None

    def to_dict(self) -> dict:
        gpus = []
        for b in self.bounds:
            d = b.to_dict()
            spec = b.hardware() if b.gpu else None
            gpus.append(
                {
                    "hw": b.hw,
                    "hw_key": b.hw_key,
                    "on_chip_capacity": spec.on_chip_capacity if spec else None,
                    "dram_bandwidth": spec.dram_bandwidth if spec else None,
                    "bounds": d["bounds"],
                    "bytes": d["totals"]["bytes"],
                    "compute_s": d["totals"]["compute_s"],
                    "energy_j": {lv: b.energy.at(lv) for lv in ("unfused", "fused", "cache_aware")},
                    "energy_reason": b.energy.reason,
                }
            )
        out = {"schema": SCHEMA, "program": self.program, "gpus": gpus, "errors": thaw(self.errors)}
        if self.gpus > 1:
            out["gpus_per_plan"] = self.gpus
            out["parallel"] = [p.to_dict() for p in self.parallel]
        return out

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __repr__(self) -> str:
        parts = ", ".join(f"{b.hw_key} {fmt_time(b.cache_aware)}" for b in self.bounds)
        return f"Comparison({self.program!r}: cache-aware {parts})"


def compare_graph(g, hw=DEFAULT_HW, gpus: int = 1) -> Comparison:
    """:func:`compare` on an already lifted graph."""
    bounds, errors, parallel = [], {}, []
    model = ParallelModel(g) if gpus > 1 else None
    for spec in resolve_hw(hw):
        try:
            b = bound_graph(g, spec)
        except ValueError as e:  # a unit the GPU lacks
            errors[spec.key] = str(e).splitlines()[0]
            continue
        bounds.append(b)
        if model is not None:
            try:
                parallel.append(bound_parallel(g, spec, gpus, model=model, single=b))
            except ValueError as e:  # no interconnect, too few GPUs per host, no plan
                errors[spec.key] = str(e).splitlines()[0]
    return Comparison(g.info.name, bounds, errors, gpus, parallel)


def compare(
    model,
    inputs,
    hw=DEFAULT_HW,
    *,
    precision: str | None = None,
    name: str | None = None,
    gpus: int = 1,
) -> Comparison:
    """Bounds of ``model(*inputs)`` on each GPU of ``hw`` (names, specs, or ``"all"``): traced
    once, analysed per spec; with ``gpus > 1`` also each kind's best plan of that many GPUs."""
    _, g = trace_and_lift(model, inputs, precision=precision, name=name)
    return compare_graph(g, hw, gpus)
