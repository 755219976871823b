"""How many GPUs a program needs: per catalogue GPU, the fewest that hold it and meet a
target time, with the plan (docs/overview.md, many GPUs).

For one GPU kind and a target ``T`` at a bound level:

- **at least** (proven, for any plan): ``ceil(resident / capacity)`` — every byte of the graph
  inputs and weights is held by some GPU for the whole run — and ``ceil(ideal / T)``, where
  ``ideal = max(total compute, fused bytes / DRAM bandwidth)`` on one GPU: ``N`` GPUs share
  the work and every input, weight and output byte at best evenly;
- **a plan**: from that count up to the host's GPUs (``interconnect.host_gpus``), the first
  count whose best plan (:func:`solar.api.bound_parallel`) fits in each GPU's memory and whose
  bound at the level meets ``T``. Its bound is a lower bound for that plan, so "meets" means
  the target is not ruled out for it; a GPU kind whose plans cannot hold the program is never
  a match. A count ``N`` has a plan only when it factors as ``TP x PP x DP`` with the TP degree
  dividing a weight axis, the DP degree dividing the batch and PP at most the kernels, so the
  counts found can jump (a proven minimum of 5, then 8 GPUs for a projection whose axes are
  powers of two); :attr:`GpuCount.tried` records every count tried and its outcome
  (:data:`OUTCOMES`).

:func:`gpus_per_gpu_kind` runs the search per catalogue GPU, one task each, on the executors
of :mod:`solar.questions.executors` (serial, local processes, or Ray).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solar.api import bound_graph, bound_parallel
from solar.backend.memory import RESIDENT
from solar.backend.parallel.model import NoInterconnectError, ParallelModel
from solar.backend.result import level_name
from solar.backend.units import compute_time
from solar.hw import load_spec
from solar.questions.executors import map_tasks, one_line, resolve_executor

#: what a count tried can come to, in the order of the search's checks
OUTCOMES = {
    "no plan": "no TP x PP x DP factorisation splits the program that many ways",
    "does not fit": "its best plan does not fit in each GPU's memory",
    "misses": "its best plan's bound is above the target",
    "meets": "its best plan fits and meets the target",
}


@dataclass(frozen=True)
class GpuCount:
    """The GPUs of one kind a program needs to meet a target (see the module docstring)."""

    key: str
    name: str
    level: str
    target_s: float
    gpus: int | None  # the fewest found whose plan holds the program and meets the target
    at_least: int  # proven: fewer GPUs of this kind cannot
    plan: str | None  # that plan, in words
    bound_s: float  # its bound at the level (inf: none found)
    peak_bytes: float  # per GPU, of that plan (or of the largest count with a plan tried)
    capacity: int  # one GPU's device memory
    reason: str | None = None  # why none was found
    tried: tuple[tuple[int, str], ...] = ()  # (count, outcome of OUTCOMES), in search order

    @property
    def meets(self) -> bool:
        return self.gpus is not None

    def to_dict(self) -> dict:
        return {**self.__dict__, "meets": self.meets}


def at_least(single, g, spec, target_s: float) -> int:
    """Proven lower bound on the GPU count (see the module docstring); ``single`` is the
    bound of graph ``g`` on one GPU."""
    resident = sum(t.bytes for t in g.info.tensors.values() if t.role in RESIDENT)
    ideal = max(compute_time(single.flops, spec).seconds, single.bytes_fused / spec.dram_bandwidth)
    return max(1, math.ceil(resident / spec.dram_capacity), math.ceil(ideal / target_s - 1e-12))


def gpus_needed(
    g,
    hw,
    target_s: float,
    *,
    level: str = "cache_aware",
    max_gpus: int | None = None,
    model: ParallelModel | None = None,
) -> GpuCount:
    """The fewest GPUs of ``hw`` that hold ``g``'s program and meet ``target_s`` at
    ``level`` (up to ``max_gpus``, default the host's GPUs)."""
    level = level_name(level)
    spec = load_spec(hw)
    single = bound_graph(g, spec)
    low = at_least(single, g, spec, target_s)
    ic = spec.interconnect
    top = max_gpus or (ic.host_gpus if ic is not None else 1)

    tried: list[tuple[int, str]] = []

    def result(n, plan, t, peak, reason=None):
        return GpuCount(
            spec.key, spec.name, level, target_s, n, low, plan, t, peak, spec.dram_capacity,
            reason, tuple(tried),
        )  # fmt: skip

    def outcome(fits: bool, t: float) -> str:
        return "meets" if fits and t <= target_s else "misses" if fits else "does not fit"

    if low <= 1:
        tried.append((1, outcome(single.fits, single.time(level))))
        if tried[-1][1] == "meets":
            return result(1, "one GPU", single.time(level), single.memory.peak_bytes)
    last_peak, reason = single.memory.peak_bytes, None
    model = model if model is not None else ParallelModel(g)
    for n in range(max(2, low), top + 1):
        try:
            pb = bound_parallel(g, spec, n, level=level, model=model, single=single)
        except NoInterconnectError as e:
            return result(None, None, math.inf, last_peak, one_line(e))
        except ValueError:  # no plan splits the program n ways: try the next count
            tried.append((n, "no plan"))
            continue
        last_peak = pb.peak_bytes
        tried.append((n, outcome(pb.fits, pb.time(level))))
        if tried[-1][1] == "meets":
            return result(n, pb.plan.describe(), pb.time(level), pb.peak_bytes)
        reason = "no plan fits in memory" if not pb.fits else "no plan meets the target"
    if low > top:
        reason = f"needs at least {low} GPUs, a host has {top}"
    return result(None, None, math.inf, last_peak, reason or f"no plan up to {top} GPUs")


def tried_text(tried: tuple[tuple[int, str], ...]) -> str:
    """``"5-7 no plan, 8 meets"``: the counts tried, runs of one outcome joined."""
    runs: list[list] = []
    for n, what in tried:
        if runs and runs[-1][2] == what and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n, what])
    return ", ".join(f"{a}{f'-{b}' if b > a else ''} {what}" for a, b, what in runs)


def _task(g, key, target_s, level, max_gpus, model=None):
    """One catalogue GPU (a top-level function: executors pickle it)."""
    try:
        return gpus_needed(g, key, target_s, level=level, max_gpus=max_gpus, model=model)
    except ValueError as e:  # a unit the GPU lacks, ...
        spec = load_spec(key)
        return GpuCount(
            spec.key,
            spec.name,
            level,
            target_s,
            None,
            0,
            None,
            math.inf,
            math.nan,
            spec.dram_capacity,
            one_line(e),
        )


def gpus_per_gpu_kind(
    g,
    specs,
    target_s: float,
    *,
    level: str = "cache_aware",
    max_gpus: int | None = None,
    jobs: int | None = 1,
    ray: str | None = None,
) -> list[GpuCount]:
    """:func:`gpus_needed` for each of ``specs`` (names or HardwareSpecs), one task per GPU
    kind: serially by default, on ``jobs`` local processes, or on a Ray cluster (``ray``)."""
    specs = [load_spec(s) for s in specs]
    if resolve_executor(jobs, ray) == "serial" or len(specs) <= 1:
        model = ParallelModel(g)  # one split analysis shared by every GPU kind
        return [_task(g, s, target_s, level, max_gpus, model) for s in specs]
    # a spec travels as its dict (a HardwareSpec holds read-only mappings pickle refuses)
    items = [(g, s.to_dict(), target_s, level, max_gpus) for s in specs]
    return map_tasks(_task, items, jobs=jobs, ray=ray)
