"""Latency bounds (issue 13; soundness argument in docs/bounds.md): what no bandwidth or peak
removes -- kernel launches and chains of dependent steps.

- **Launch floor** ``λ`` (``spec.launch_floor_s``): a kernel that does any work (ops or DRAM
  bytes) is at least one launch. Kernels run one after another (one stream), and each ends at
  least ``λ`` after the one before, so the unfused level is ``Σ_i max(roofline_i, λ, cp_i)``;
  any implementation launches at least one kernel, so the fused and cache-aware levels are at
  least ``λ``.
- **Critical path of sequential work**: the loop-carried chains of looped kernels
  (:mod:`solar.ir.recurrence`, on each kernel record's ``chains``) form a DAG of steps --
  a chain's step ``t`` after its step ``t-1``, and a stacked layer's step after the step of the
  layer below that wrote its input (a wavefront; reversed directions map ``t -> T-1-t``). Each
  edge into a step costs that step's *floor*, for the work ``W`` (per lane) that depends on
  the predecessor::

      φ(W) = min( W at one SM's peak,  max(sync, W over all SMs) )

  (on one SM no synchronisation is needed; on several, a value crosses SMs at least once,
  ``sync = spec.sync_floor_s``). Two consecutive steps may overlap (the next step may start on
  the first values of the previous one), so only every other edge of a path is a disjoint
  window: a path of edge floors ``φ_1 .. φ_n`` takes at least ``(Σ φ - max φ) / 2`` (the first
  edge has no synchronisation to charge, hence ``- max φ``). The longest such path is the
  program's critical path ``CP``; each kernel's own chains give its ``cp_i``.

The bound at every level is ``max(throughput bound, latency bound)``.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

import numpy as np

from solar.algebra.size import Size, integer, to_real
from solar.algebra.total import sum_times
from solar.backend.chain_paths import Tail, chain_tail, dp, tail_best
from solar.backend.units import compute_time
from solar.fmt import fmt_time
from solar.frozen import Frozen
from solar.graph.types import Chain

LEVELS = ("unfused", "fused", "cache_aware")


def step_floor(ops: dict[str, float], spec) -> tuple[float, float, float]:
    """``(φ, on one SM, spread over SMs)`` of a dependent step of ``ops`` (one lane)."""
    if not any(ops.values()):
        return 0.0, 0.0, 0.0
    all_sms = compute_time(ops, spec).seconds
    one = all_sms * spec.sm_count
    spread = max(spec.sync_floor_s, all_sms)
    return min(one, spread), one, spread


def _per_lane(ops: dict[str, float], lanes: int, scale: float = 1.0) -> dict[str, float]:
    return {k: v * scale / max(lanes, 1) for k, v in ops.items()}


@dataclass(frozen=True)
class ChainFloor:
    """One chain's step floor and its own critical path (seconds)."""

    kernel: str
    state: str
    steps: int
    lanes: int
    step_s: float  # φ of one step (one lane)
    one_sm_s: float  # the step's work at one SM's peak
    spread_s: float  # max(sync, the step's work over all SMs)
    critical_path_s: float  # this chain alone: (steps - 2) x φ / 2

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Latency(Frozen):
    """The latency terms of a bound: launch floor, critical path, and the levels they give.
    Frozen: sequences are tuples, mappings read-only (what is given is frozen)."""

    launch_floor_s: float
    sync_floor_s: float
    launches: int  # kernels that do work (each at least one launch)
    critical_path_s: float  # the program's longest dependent path (wavefront over chains)
    critical_steps: int  # edges on that path
    critical_sum_s: float  # Σ of the step floors along it (before the overlap halving)
    critical_max_s: float  # the largest step floor along it
    chains: tuple[ChainFloor, ...] = ()
    kernel_s: tuple[float, ...] = ()  # per kernel: max(λ, its chains' cp)
    throughput: dict[str, float] = field(default_factory=dict)  # level -> without latency
    bounds: dict[str, float] = field(default_factory=dict)  # level -> the latency bound
    # level -> the final bound: max(throughput, latency); the unfused level adds per kernel,
    # Σ max(roofline_i, latency_i), and is at least the critical path
    final: dict[str, float] = field(default_factory=dict)

    def binds(self, level: str) -> bool:
        """Whether latency raised the bound at ``level`` above the throughput bound."""
        return self.final.get(level, 0.0) > self.throughput.get(level, 0.0)

    def to_dict(self) -> dict:
        return {
            "launch_floor_s": self.launch_floor_s,
            "sync_floor_s": self.sync_floor_s,
            "launches": self.launches,
            "critical_path": {
                "seconds": self.critical_path_s,
                "steps": self.critical_steps,
                "sum_of_step_floors_s": self.critical_sum_s,
                "max_step_floor_s": self.critical_max_s,
            },
            "chains": [c.to_dict() for c in self.chains],
            "throughput_s": dict(self.throughput),
            "latency_s": dict(self.bounds),
        }

    def lines(self) -> list[str]:
        """What the text report says about latency (empty when nothing applies)."""
        out = []
        if self.launches and self.launch_floor_s:
            out.append(
                f"launches: {self.launches} kernels x launch floor {fmt_time(self.launch_floor_s)}"
                f" = {fmt_time(self.launches * self.launch_floor_s)} (unfused); at least one "
                "launch at every level"
            )
        if self.critical_steps and self.critical_path_s > 0:
            mean = self.critical_sum_s / self.critical_steps
            out.append(
                f"critical path: {self.critical_steps} dependent steps x {fmt_time(mean)} "
                f"per-step floor (mean), ({fmt_time(self.critical_sum_s)} - "
                f"{fmt_time(self.critical_max_s)}) / 2 = {fmt_time(self.critical_path_s)}"
            )
            for c in sorted(self.chains, key=lambda c: -c.steps * c.step_s)[:4]:
                out.append(
                    f"  chain {c.kernel}:{c.state}: {c.steps} steps x {c.lanes} lanes, step "
                    f"floor {fmt_time(c.step_s)} = min(one SM {fmt_time(c.one_sm_s)}, "
                    f"spread {fmt_time(c.spread_s)})"
                )
        return out

    def assumptions(self) -> list[str]:
        out = []
        if self.launch_floor_s:
            out.append(
                f"latency: every kernel that does work is at least one launch of "
                f"{fmt_time(self.launch_floor_s)} (the spec's kernel_launch floor: dependent "
                "kernels on one stream, no programmatic dependent launch); unfused kernels run "
                "one after another"
            )
        if self.chains:
            out.append(
                "critical path: the recurrence is evaluated step by step (the new state from the "
                "old one, no parallel-scan reformulation); a step's dependent work runs on one SM "
                "at its "
                f"peak, or on several with a {fmt_time(self.sync_floor_s)} SM-to-SM "
                "handoff (the spec's sm_sync floor); two consecutive steps may overlap, so half "
                "of each step's floor counts (docs/bounds.md)"
            )
        return out


# ---------------------------------------------------------------------------------------------
# The critical path over chains


@dataclass
class _Node:
    kernel: int
    chain: Chain
    rec_s: float
    P: np.ndarray = field(default_factory=lambda: np.zeros(0))  # longest path sum to (c, t)
    N: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # its edges
    M: np.ndarray = field(default_factory=lambda: np.zeros(0))  # its largest edge
    tail: Tail | None = None  # with a symbolic step count: P, N, M as affine tails


class _LastWriters:
    """The last kernel before a given one that writes a tensor: each tensor's writers in
    order, searched (a copy of the writers so far per kernel would take kernels x tensors
    memory: gigabytes for a recurrent model of 40,000 kernels)."""

    def __init__(self, g) -> None:
        self.by_tensor: dict[str, list[int]] = {}
        for i, k in enumerate(g.info.kernels):
            for t in k.writes:
                self.by_tensor.setdefault(t, []).append(i)

    def before(self, kernel: int, tensor: str) -> int | None:
        writers = self.by_tensor.get(tensor, [])
        j = bisect_left(writers, kernel)
        return writers[j - 1] if j else None


def _producers(node: _Node, nodes: list[_Node], writers: _LastWriters):
    """(producer node, its output record, the input record) for each input of ``node`` that an
    earlier chain wrote last, with the same lanes."""
    for inp in node.chain.inputs:
        k = writers.before(node.kernel, inp.tensor)
        if k is None:
            continue
        lanes_in = sorted(p for p, _ in inp.lanes)
        for other in nodes:
            if other.kernel != k:
                continue
            for out in other.chain.outputs:
                if out.tensor == inp.tensor and sorted(p for p, _ in out.lanes) == lanes_in:
                    yield other, out, inp


def _walk(node: _Node, sources) -> None:
    """Longest paths into every step of ``node`` (:func:`~solar.backend.chain_paths.dp`); a
    symbolic step count keeps them as affine tails where the structure allows
    (:func:`~solar.backend.chain_paths.chain_tail`), else it is specialized here."""
    if isinstance(node.chain.steps, Size) or any(src.tail is not None for src, *_ in sources):
        node.tail = chain_tail(
            node.chain.steps,
            node.rec_s,
            [(src.tail, src.chain.steps, w, b, a, copy) for src, w, b, a, copy in sources],
        )
        if node.tail is not None:
            return
    T = int(node.chain.steps)  # numeric walk: a symbolic step count is specialized here
    numeric = []
    for src, w, b, a, copy in sources:
        steps = int(src.chain.steps)
        P, N, M = src.tail.arrays(steps) if src.tail is not None else (src.P, src.N, src.M)
        numeric.append((P, N, M, steps, w, b, a, copy))
    node.P, node.N, node.M, *_ = dp(T, float(node.rec_s), numeric)


def critical_path(g, spec) -> tuple[list[ChainFloor], list[float], tuple[float, int, float, float]]:
    """Per chain floors, per kernel ``cp_i`` (its chains alone), and the program's critical
    path ``(seconds, edges, Σ floors, max floor)``."""
    nodes: list[_Node] = []
    floors: list[ChainFloor] = []
    kernels = g.info.kernels
    kernel_cp = [0.0] * len(kernels)
    writers = _LastWriters(g)
    for ki, k in enumerate(kernels):
        for c in k.chains:
            phi, one, spread = step_floor(_per_lane(c.ops, c.lanes), spec)
            alone = max(0.0, (c.steps - 2) * phi / 2)
            floors.append(ChainFloor(k.name, c.state, c.steps, c.lanes, phi, one, spread, alone))
            kernel_cp[ki] = max(kernel_cp[ki], alone)
            node = _Node(ki, c, phi)
            sources = []
            for src, out, inp in _producers(node, nodes, writers):
                frac = min(1.0, out.elements / max(out.slice_elements, 1))
                ops = _per_lane(inp.mixing_ops, c.lanes, frac)
                for cls, v in _per_lane(inp.mixed_ops, c.lanes).items():
                    ops[cls] = ops.get(cls, 0.0) + v
                w = step_floor(ops, spec)[0]
                sources.append((src, w, (inp.coef, inp.const), (out.coef, out.const), out.copy))
            _walk(node, sources)
            nodes.append(node)
    best = (0.0, 0, 0.0, 0.0)
    for n in nodes:
        if n.tail is not None:
            s, edges, big = tail_best(n.tail, n.chain.steps)
        elif not len(n.P):
            continue
        else:
            i = int(np.argmax(n.P))
            s, edges, big = to_real(n.P[i]), integer(n.N[i]), to_real(n.M[i])
        cp = max(0.0, (s - big) / 2)
        if cp > best[0]:
            best = (cp, edges, s, big)
    return floors, kernel_cp, best


# ---------------------------------------------------------------------------------------------
# The levels


def latency_bound(g, spec, kernels, throughput: dict[str, float]) -> Latency:
    """The latency terms of graph ``g`` on ``spec``, given its per-kernel rooflines
    (:func:`solar.backend.roofline.kernel_times`) and the throughput bound of each level."""
    lam = spec.launch_floor_s
    works = [
        bool(k.ops and any(k.ops.values())) or (k.bytes_read + k.bytes_written) > 0 for k in kernels
    ]
    floors, kernel_cp, (cp, steps, total, big) = critical_path(g, spec)
    kernel_s = [max(lam if w else 0.0, c) for w, c in zip(works, kernel_cp, strict=True)]
    launches = sum(works)
    one = lam if launches else 0.0
    bounds = {
        "unfused": max(sum(kernel_s), cp),
        "fused": max(one, cp),
        "cache_aware": max(one, cp),
    }
    unfused = max(sum_times(max(k.time_s, s) for k, s in zip(kernels, kernel_s, strict=True)), cp)
    final = {
        "unfused": max(unfused, throughput["unfused"]),
        "fused": max(throughput["fused"], bounds["fused"]),
        "cache_aware": max(throughput["cache_aware"], bounds["cache_aware"]),
    }
    return Latency(
        lam,
        spec.sync_floor_s,
        launches,
        cp,
        steps,
        total,
        big,
        floors,
        kernel_s,
        dict(throughput),
        bounds,
        final,
    )


def unfused_bound_by(kernels, kernel_s: list[float], cp: float) -> str:
    """What binds the unfused sum: the unit (or ``dram``/``latency``) holding most of it."""
    terms: dict[str, list[float]] = {}  # per label: 0.0, then its kernels' terms, in order
    for k, s in zip(kernels, kernel_s, strict=True):
        by = "latency" if s > k.time_s else k.bound_by
        terms.setdefault(by, [0.0]).append(max(k.time_s, s))
    if not terms:
        return "latency" if cp > 0 else "none"
    sums = {by: sum_times(ts, in_order=True) for by, ts in terms.items()}
    if cp > sum_times(sums.values()):
        return "latency"
    return max(sums, key=sums.__getitem__)
