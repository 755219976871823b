"""Cache-aware bound: DRAM traffic forced by finite on-chip memory, for contractions.

Capacity ``S`` is all on-chip storage (L2 + shared memory/L1 + registers of every SM): data
can live in any of them, so only this total is safe for a *lower* bound on DRAM traffic.

For a contraction node ``C[..] += A[..] * B[..]`` whose ranks split cleanly (every rank
appears in at least two of A, B, C; batch ranks in all three; indices are plain ranks), with
``V`` = number of multiply-adds, ``K`` = product of reduction extents, and sizes in words of
the smallest element size among A, B, C (``S_w = S / w``):

- A and B must be DRAM-resident in any implementation (graph inputs, weights or constants:
  they cannot be computed on chip). Otherwise the node gets no extra traffic: a producer fused
  into it could feed it from chip (FlashAttention does exactly that).
- If C is a graph output (stored to DRAM), the tight bound of Smith, Lowery, Langou and van de
  Geijn ("A Tight I/O Lower Bound for Matrix Multiplication", ACM TOMS 2022) applies:
  ``Q >= 2 V / sqrt(S_w) - 2 S_w`` words of traffic on A, B and C.
- If C stays on chip (an intermediate consumed by a fused consumer), a Hong–Kung phase
  argument with the Loomis–Whitney inequality: split the schedule into phases of ``S_w``
  words of traffic on A, B, C. In a phase at most ``2 S_w`` elements of A and of B are
  available (cached or loaded); C partial sums touched are those live at either phase edge
  or moved (≤ 4 S_w) plus those started and finished inside it, each needing a whole row of
  A and column of B (≤ (2 S_w / K)²). A phase thus does at most
  ``F = sqrt(2S · 2S · (4S + 4S²/K²))`` multiply-adds, so ``Q >= S_w (V / F - 1)``.

Both assume no recomputation of partial sums. Traffic on disjoint tensor sets adds up, so
the program's cache-aware bytes = fused bytes + Σ over a set of such nodes with pairwise-
disjoint tensors of (Q - the node's compulsory bytes)⁺. It equals the fused
bytes as S → ∞ and is non-increasing in S.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx

from solar.backend.roofline import fused_bytes

DRAM_RESIDENT = ("input", "weight", "constant")


@dataclass(frozen=True)
class ContractionIO:
    node: str
    tensors: frozenset[str]
    volume: int  # multiply-adds
    reduction: int  # K
    word: int  # bytes per word
    output_in_dram: bool
    compulsory_bytes: int  # this node's share of the fused bytes (A, B, and C if an output)
    rule: str

    def traffic_bytes(self, capacity: float) -> float:
        """Proven lower bound on DRAM bytes moved for A, B (and C) at this capacity."""
        s = capacity / self.word
        if not math.isfinite(s):
            return float(self.compulsory_bytes)
        if self.output_in_dram:
            q = 2 * self.volume / math.sqrt(s) - 2 * s
        else:
            per_phase = math.sqrt(4 * s * s * (4 * s + 4 * s * s / self.reduction**2))
            q = s * (self.volume / per_phase - 1)
        return max(float(self.compulsory_bytes), q * self.word)


def contraction_io(g: nx.MultiDiGraph) -> list[ContractionIO]:
    """The contraction nodes the cache-aware bound applies to (see module docstring)."""
    fio = g.graph["fused_io"]
    out = []
    for n, d in g.nodes(data=True):
        if d.get("kind") != "op" or d["op_kind"] != "contraction" or len(d["operands"]) != 2:
            continue
        a, b = d["operands"]
        c = d["output"]
        if a["role"] not in DRAM_RESIDENT or b["role"] not in DRAM_RESIDENT:
            continue
        if a["base"] == b["base"]:
            continue
        accesses = (a["ranks"], b["ranks"], c["ranks"])
        if any(r is None for ranks in accesses for r in ranks):
            continue
        sets = [set(r) for r in accesses]
        if any(sum(rank in s for s in sets) < 2 for rank in d["ranks"]):
            continue
        volume = math.prod(d["ranks"].values())
        reduction = math.prod(d["ranks"][r] for r in d["reduction_ranks"])
        c_in_dram = c["role"] == "output"
        compulsory = fio["reads"].get(a["base"], 0) + fio["reads"].get(b["base"], 0)
        if c_in_dram:
            compulsory += fio["writes"].get(c["base"], 0)
        tensors = {a["base"], b["base"]} | ({c["base"]} if c_in_dram else set())
        out.append(
            ContractionIO(
                n,
                frozenset(tensors),
                volume,
                reduction,
                min(a["itemsize"], b["itemsize"], c["itemsize"]),
                c_in_dram,
                compulsory,
                "Smith et al. 2022" if c_in_dram else "Hong-Kung/Loomis-Whitney phases",
            )
        )
    return out


@dataclass(frozen=True)
class CacheAwareBytes:
    bytes: float
    capacity: float
    extra: dict[str, float]  # node -> bytes beyond its compulsory traffic
    rules: dict[str, str]


def cache_aware_bytes(g: nx.MultiDiGraph, capacity: float) -> CacheAwareBytes:
    """Fused bytes plus the forced extra traffic of a fixed set of tensor-disjoint nodes.

    The set is chosen without looking at the capacity (largest volume first), so the result
    is a sum of non-increasing functions of the capacity: monotone, as the contract requires.
    """
    chosen: dict[str, float] = {}
    rules: dict[str, str] = {}
    used: set[str] = set()
    for c in sorted(contraction_io(g), key=lambda c: (-c.volume, c.node)):
        if used.isdisjoint(c.tensors):
            used |= c.tensors
            extra = c.traffic_bytes(capacity) - c.compulsory_bytes
            if extra > 0:
                chosen[c.node] = extra
                rules[c.node] = c.rule
    return CacheAwareBytes(fused_bytes(g) + sum(chosen.values()), capacity, chosen, rules)
