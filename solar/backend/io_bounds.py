"""Proven lower bounds on slow-memory (DRAM) traffic as functions of fast-memory capacity.

Pure arithmetic, no graph: :mod:`solar.backend.cache_aware` reads the einsum graph and feeds
these. Sizes are in *words* here (the caller divides bytes by the smallest element size
involved, so a bound in words times that size is a bound in bytes).

Model (red–blue pebble game of Hong & Kung, 1981). A fast memory of ``S`` words (all on-chip
storage) and an unbounded slow memory; a value can be used only while in fast memory; loads
and stores between them are the I/O counted. Assumptions, stated in every report:

- *classical* algorithm: every multiply-add of the iteration space is performed (no Strassen-
  like schemes, no algebraic rewriting of the contraction); partial sums may be combined in any
  order;
- *no recomputation*: each product and each partial sum is computed once;
- a value held on chip occupies at least one word (no compression).

Segment argument (Hong & Kung; Irony, Toledo & Tiskin 2004; Ballard, Demmel, Holtz & Schwartz
2011). Cut the schedule into segments of exactly ``M`` I/O operations on the node's tensors
(the last one shorter). If no segment can perform more than ``F`` of the ``V`` multiply-adds,
there are at least ``V / F`` segments, all but the last full, so ``Q >= M (V / F - 1)``. Any
``M`` gives a bound; :data:`MU_GRID` fixes the choices ``M = μ S``.

In a segment of a contraction ``C[..] += A[..] * B[..]`` whose A and B live in DRAM:

- A and B elements usable: in fast memory at the start or loaded during it, so with ``a``,
  ``b`` and ``c0`` the A, B and C values resident at the start: ``a + b + c0 <= S + M``;
- C elements updated: with a partial sum resident at the start or loaded, or (if created in
  the segment) resident at the end or stored, or — only when C stays on chip for a fused
  consumer — *completed and consumed* inside the segment (``P`` of them). Start and end
  residents are at most ``S`` each, so ``a + b + c <= T + P`` with ``T = 2S + M``, and ``P = 0``
  when C is written to DRAM (every partial sum then survives the segment, being an output).
- A completed C element had all of its at least ``k_min`` products in the segment.

The number of multiply-adds in a set of iteration points is bounded by Hölder–Brascamp–Lieb
inequalities on its projections: Loomis–Whitney ``|V| <= sqrt(|A(V)| |B(V)| |C(V)|)`` when every
loop rank indexes (injectively) at least two of A, B, C. Convolutions index the input by
``σp + δr``; fixing the tap ``r`` inside a block of ``σ/gcd(σ,δ)`` consecutive taps makes that
index injective in ``(p, r)``, so the points split into ``G`` *tap classes* each obeying
Loomis–Whitney, and Cauchy–Schwarz over the classes gives ``|V| <= sqrt(G |A| |B| |C|)``
when one of the arrays is partitioned by the classes (the weights: their index holds ``r``),
``G sqrt(|A||B||C|)`` otherwise (Demmel & Dinh, "Communication-optimal convolutional neural
nets", 2018, derive the same shape of bound with HBL). With ``λ = sqrt(G)`` (or ``G``) the
per-segment bound ``F`` is the least of

1. ``V``;
2. the joint bound, with ``s = a + b <= S + M`` (so ``ab <= s²/4``): when C is written to DRAM
   ``F <= λ max_s (s/2) sqrt(T - s)``, i.e. ``λ (T/3)^{3/2}`` once ``M >= S``; when C stays on
   chip, ``P·k_min <= λ sqrt(a b P)`` gives ``P <= λ² ab / k_min²`` and
   ``F² <= λ² max_s [s²(T-s)/4 + λ² s⁴/(16 k_min²)]`` — at ``S ≫ k_min²`` this is
   ``F ≈ λ²(S + M)²/(4 k_min)``: the FlashAttention
   ``Ω(N² d² / S)`` law for ``QKᵀ`` with on-chip scores (Dao et al. 2022, Prop. 3; tight by
   Saha & Ye, "The I/O complexity of attention", 2024), here with explicit constants;
3. one array capped at its size: ``λ sqrt(|C|) (S + M) / 2`` (``a + b <= S + M``), and when C
   is written to DRAM ``λ sqrt(|A|) T / 2`` and ``λ sqrt(|B|) T / 2``;
4. per-element multiplicities: ``(S + M)·mult_A``, ``(S + M)·mult_B``, and ``T·mult_C`` (C in
   DRAM) or ``(T + λ²(S + M)²/(4 k_min²))·mult_C`` (C on chip), ``mult_X`` being the most
   multiply-adds one element of X takes part in.

Every term grows at least linearly in ``S`` (or is ``V``), so each ``M = μS`` bound and their
maximum are non-increasing in ``S``, and all vanish once ``F`` reaches ``V``.

For a plain matrix product with C written to DRAM, the tight bound of Smith, Lowery, Langou and
van de Geijn ("A tight I/O lower bound for matrix multiplication", ACM TOMS 2022) is also
used: ``Q >= 2V/sqrt(S) - 2S``. (They bound the reads of ``C := AB + C``; a schedule for
``C = AB`` plus one read of C per element at the creation of its partial sum is one for
``C := AB + C``, and each of C's elements is written at least once, so the total I/O of
``C = AB`` obeys the same bound.)

Live-set spill (a barrier): when a consumer needs every element of a group of ``g`` values of
``T`` *after* a reduction over that whole group completes, all ``g`` are live at that moment;
at most ``S`` fit on chip, so ``g - S`` values must be (re)loaded afterwards — once more if
``T`` is in DRAM anyway, stored and loaded (2 transfers) if ``T`` is an intermediate (no
recomputation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solar.algebra.size import sqrt, to_real

#: Segment sizes ``M = μ S`` tried by :class:`SegmentBound` (a fixed set, so the maximum over
#: it stays non-increasing in ``S``).
MU_GRID: tuple[float, ...] = tuple(2.0 ** (k / 2) for k in range(-4, 9))


def smith_matmul_words(volume: float, s_words: float) -> float:
    """Smith et al. (TOMS 2022): I/O of a classical ``m x k`` by ``k x n`` product,
    ``2 mnk / sqrt(S) - 2S`` words (may be negative: then it says nothing)."""
    if not math.isfinite(s_words):
        return -math.inf
    return 2.0 * volume / sqrt(s_words) - 2.0 * s_words


def _joint_onchip(t: float, s_max: float, lam: float, k: float) -> float:
    """``max_{0 <= s <= s_max} s²(t - s)/4 + λ² s⁴ / (16 k²)`` (rule 2 with C on chip)."""
    q = lam * lam / (16.0 * k * k)
    top = min(t, s_max)

    def h(s: float) -> float:
        return s * s * (t - s) / 4.0 + q * s**4

    best = h(top)
    # h'(s) = (s/4)(2t - 3s + 16 q s²): interior maxima are roots of 16q s² - 3s + 2t
    a, b, c = 16.0 * q, -3.0, 2.0 * t
    disc = b * b - 4 * a * c
    if disc >= 0:
        r = sqrt(disc)
        for s in ((-b - r) / (2 * a), (-b + r) / (2 * a)):
            if 0 < s < top:
                best = max(best, h(s))
    return best


@dataclass(frozen=True)
class SegmentBound:
    """The segment/HBL lower bound of one contraction node (see the module docstring).

    ``a_size``/``b_size``/``c_size`` are upper bounds on the distinct elements of A, B, C the
    node touches; ``*_mult`` upper bounds on the multiply-adds one element takes part in;
    ``k_min`` a lower bound on the products of every C element (``None``: unknown, then rule 2
    is not used when C stays on chip); ``classes`` the tap classes ``G`` and ``partitioned``
    whether an array is split by them (``λ = sqrt(G)``, else ``G``)."""

    volume: int
    a_size: int
    b_size: int
    c_size: int
    a_mult: int
    b_mult: int
    c_mult: int
    output_in_dram: bool
    k_min: int | None = None
    classes: int = 1
    partitioned: bool = True

    @property
    def lam(self) -> float:
        return sqrt(self.classes) if self.partitioned else to_real(self.classes)

    def per_segment(self, s: float, m: float) -> float:
        """Upper bound ``F`` on multiply-adds in a segment of ``m`` I/O with ``s`` words."""
        lam, t, sm = self.lam, 2.0 * s + m, s + m
        terms = [to_real(self.volume), sm * self.a_mult, sm * self.b_mult]
        terms.append(lam * sqrt(self.c_size) * sm / 2.0)
        if self.output_in_dram:
            top = min(2.0 * t / 3.0, sm)  # s = a + b <= S + M; s²(t-s)/4 peaks at 2t/3
            terms.append(lam * top / 2.0 * sqrt(t - top))
            terms.append(lam * sqrt(self.a_size) * t / 2.0)
            terms.append(lam * sqrt(self.b_size) * t / 2.0)
            terms.append(t * self.c_mult)
        elif self.k_min:
            terms.append(lam * sqrt(_joint_onchip(t, sm, lam, self.k_min)))
            p = lam * lam * sm * sm / (4.0 * self.k_min**2)
            terms.append((t + p) * self.c_mult)
        return min(terms)

    def words_at(self, s: float, mu: float) -> float:
        """The bound with segments of ``M = μ S`` I/O: ``M (V/F - 1)``, at least 0."""
        m = mu * s
        f = self.per_segment(s, m)
        return max(0.0, m * (self.volume / f - 1.0)) if f > 0 else 0.0

    def words(self, s: float) -> float:
        """Best of the fixed segment sizes: a lower bound on I/O words, non-increasing in
        ``s``; 0 at infinite capacity."""
        if not math.isfinite(s):
            return 0.0
        if s <= 0:
            raise ValueError("capacity must be positive")
        return max(self.words_at(s, mu) for mu in MU_GRID)


def barrier_spill_bytes(group_bytes: float, capacity: float, transfers: int) -> float:
    """Live-set bound: ``transfers`` × the bytes of a group that cannot be on chip."""
    if not math.isfinite(capacity):
        return 0.0
    return transfers * max(0.0, group_bytes - capacity)
