"""Longest paths into the steps of recurrence chains (the critical path's dynamic program of
:mod:`solar.backend.latency`), numerically and, when a chain's step count is a symbol, as
sequences that are affine past a prefix.

For a chain of ``T`` steps with step floor ``a``, fed by earlier chains (each source step ``t``
reads the producer's step ``t + δ``), ``P[t]`` is the longest path sum into step ``t``, ``N[t]``
its edges and ``M[t]`` its largest edge floor::

    Q[t] = max over sources of P_src[t + δ] + w  (Q[0] >= 0: a chain may start fresh)
    P[t] = max over s <= t of Q[s] + (t - s)·a

(:func:`dp`, vectorised over ``t``; ties go to the latest ``s`` and the first source). With
``T`` a symbol the program cannot be run over ``T`` steps, but its answer is simple: a chain
without sources has ``P[t] = t·a``, and a chain whose sources have affine tails of the same
length (``δ <= 0``, the same direction: stacked layers fed step by step) has one too. Past the
last point where the winning source or the running maximum can change (crossings of affine
functions, computed from the plain floors), ``P``, ``N`` and ``M`` are affine in ``t``
(:class:`Tail`); the prefix before it is computed by :func:`dp` itself. A source read in
reverse step order (``t -> T - 1 + δ - t``: a bidirectional RNN's next layer) offers a
candidate that only falls along ``t``, its largest at ``t = 0`` a formula of ``T``; where it
beats every other candidate for all ``T`` past a threshold (a guard), the chain's tail is that
start plus ``t·a`` from step 0, its intercept and edges formulas of ``T`` (a chain fed by such a
tail in turn is specialized). :func:`chain_tail`
builds a tail or returns None where this does not apply (the caller then specializes ``T``);
:func:`tail_best` is the longest path over ``t < T`` with ``T`` kept as an expression.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sympy

from solar.algebra.size import Real, Size, expr_of

#: a numeric source of :func:`dp`: (P, N, M, steps, w, (coef_b, const_b), (coef_a, const_a),
#: copy), the producer's arrays over its ``steps`` steps
Source = tuple


def dp(T: int, a: float, sources: Sequence[Source]):
    """``(P, N, M, R, QN, QM, best)`` of the chain's first ``T`` steps (module docstring;
    ``R = Q - t·a``, ``best[t]`` the ``s`` of ``P[t]``)."""
    t = np.arange(T)
    Q = np.full(T, -np.inf)
    QN = np.zeros(T, dtype=np.int64)
    QM = np.zeros(T)
    Q[0] = 0.0
    for P, N, M, steps, w_s, (cb, kb), (ca, ka), copy in sources:
        w, coef_b, const_b, coef_a, const_a = float(w_s), int(cb), int(kb), int(ca), int(ka)
        u = coef_b * t + const_b
        ta = (u - const_a) * coef_a  # coef_a is +1 or -1: its own inverse
        if not copy:
            ta = ta - 1  # derived from the producer's old state: its previous step
        valid = (ta >= -1) & (ta < steps)
        safe = np.clip(ta, 0, steps - 1)
        base = np.where(ta >= 0, P[safe], 0.0)
        edges = np.where(ta >= 0, N[safe], 0) + (1 if copy else 2)
        big = np.where(ta >= 0, np.maximum(M[safe], w), w)
        cand = np.where(valid, base + w, -np.inf)
        better = cand > Q
        Q = np.where(better, cand, Q)
        QN = np.where(better, edges, QN)
        QM = np.where(better, big, QM)
    R = Q - t * a
    run = np.maximum.accumulate(R)
    best = np.maximum.accumulate(np.where(run <= R, t, 0))
    P = t * a + run
    N = QN[best] + (t - best)
    M = np.where(t > best, np.maximum(QM[best], a), QM[best])
    return P, N, M, R, QN, QM, best


@dataclass(frozen=True)
class Tail:
    """``P``, ``N``, ``M`` of a chain: arrays on ``[0, K)``, and for ``t >= K``
    ``P = slope·t + icpt``, ``N = t + n0``, ``M = m`` (``icpt`` and ``n0`` formulas of ``T``
    where the chain is fed in reverse step order, ``K`` then 0)."""

    P: np.ndarray
    N: np.ndarray
    M: np.ndarray
    slope: float
    icpt: float
    n0: int
    m: float

    @property
    def K(self) -> int:
        return len(self.P)

    def arrays(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``P, N, M`` on ``[0, n)``, the tail written out (``n >= K``)."""
        t = np.arange(self.K, n)
        icpt, n0 = float(self.icpt), int(self.n0)  # a formula's is specialized (as n is)
        return (
            np.concatenate([self.P, self.slope * t + icpt]),
            np.concatenate([self.N, t + n0]),
            np.concatenate([self.M, np.full(t.size, self.m)]),
        )


@dataclass(frozen=True)
class _Affine:
    """A source's candidate ``slope·t + c`` for ``t >= start``, its edges ``t + n`` and its
    largest floor ``m``."""

    slope: float
    c: float
    n: int
    m: float
    start: int


_NOISE = 1e-9  # relative: closer values may be ordered either way by rounding


def _plain(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, (Size, Real, bool))


def chain_tail(T: int, a: float, sources: Sequence[tuple]) -> Tail | None:
    """The :class:`Tail` of a chain of ``T`` steps (a :class:`Size`) with step floor ``a``;
    ``sources``: ``(tail, steps, w, (coef_b, const_b), (coef_a, const_a), copy)`` per producer.
    None where the module docstring's conditions fail."""
    if not _plain(a):
        return None
    forms, flipped, forward = [], [], []
    for src in sources:
        tail, steps, w, (cb, kb), (ca, ka), copy = src
        if tail is None or not _plain(w) or expr_of(steps) != expr_of(T):
            return None
        if not (_plain(cb) and _plain(ca)) or cb * ca not in (1, -1):
            return None
        if not (_plain(tail.icpt) and _plain(tail.n0)):
            return None  # a tail whose intercept is a formula (itself fed in reverse)
        if cb * ca == -1:
            f = _flipped(T, a, src)
            if f is None:
                return None
            flipped.append(f)
            continue
        d = ca * (kb - ka) - (0 if copy else 1)
        if not _plain(d) or d > 0:
            return None
        n = d + tail.n0 + (1 if copy else 2)
        c = tail.slope * d + tail.icpt + w
        forms.append(_Affine(tail.slope, c, n, max(tail.m, w), tail.K - d))
        shift = d + (0 if copy else 1)  # ta = t + shift - (1 if not copy): plain, as d
        forward.append((tail, steps, w, (1, shift), (1, 0), copy))
    if flipped:
        return _from_flipped(T, a, forms, forward, flipped)
    k2 = _settled(forms)
    if k2 is None:
        return None
    if not forms:
        slope, icpt, n0, m, k3 = a, 0.0, 0, max(0.0, a), 1
    else:
        win = max(range(len(forms)), key=lambda i: (forms[i].slope, forms[i].c, -i))
        f = forms[win]
        *_, R, QN, QM, best = dp(k2 + 1, a, _numeric(forward, k2 + 1))
        prefmax = float(R[:k2].max())
        r = f.slope - a
        if r > _NOISE * abs(a):  # the winning source outgrows the chain: the path follows it
            k3 = max(k2, math.ceil((prefmax - f.c) / r) + 2)
            slope, icpt, n0, m = f.slope, f.c, f.n, f.m
        elif r < -_NOISE * abs(a):  # R falls along the tail: one start, then a·t
            s = int(best[k2])
            k3 = k2 + 1
            slope, icpt, n0, m = a, float(R.max()), int(QN[s]) - s, max(float(QM[s]), a)
        else:  # R level along the tail: a start among the (rounding-)tied maxima
            top = max(prefmax, f.c)
            tol = _NOISE * abs(top)
            tied = [i for i in range(k2) if R[i] >= top - tol]
            starts = {(int(QN[i]) - i, max(float(QM[i]), a)) for i in tied}
            if f.c >= top - tol:  # the tail itself: started now (QM) or earlier (max with a)
                starts |= {(f.n, f.m), (f.n, max(f.m, a))}
            if len(starts) != 1:
                return None
            ((n0, m),) = starts
            k3 = k2 + 1
            slope, icpt = a, top
    if not k3 <= T:
        return None
    P, N, M, *_ = dp(k3, a, _numeric(forward, k3))
    return Tail(P, N, M, slope, icpt, n0, m)


@dataclass(frozen=True)
class _Flipped:
    """A source read in reverse step order (step ``t`` reads the producer's step
    ``T - 1 + δ - t``, ``δ <= 0``): its candidate ``V = alpha·T + beta`` at ``t = 0``
    (``value``, a formula of ``T``), that path's edges ``n`` (a formula) and largest floor
    ``m``, valid for ``T >= min_T`` (the producer's step read there lies on its tail)."""

    alpha: float
    beta: float
    value: float
    n: int
    m: float
    min_T: int


def _flipped(T: int, a: float, src: tuple) -> _Flipped | None:
    """The :class:`_Flipped` of a source whose coefficients multiply to -1 (None: its read
    step is no ``T - 1 + δ - t`` with a constant ``δ <= 0``)."""
    tail, _, w, (cb, kb), (ca, ka), copy = src
    delta = sympy.expand(ca * (expr_of(kb) - expr_of(ka)) - (0 if copy else 1) - (expr_of(T) - 1))
    if not delta.is_Integer or delta > 0:
        return None
    d = int(delta)
    j0 = T - 1 + d  # the producer's step read at t = 0: a Size
    return _Flipped(
        alpha=tail.slope,
        beta=tail.slope * (d - 1) + tail.icpt + w,
        value=j0 * tail.slope + tail.icpt + w,  # j0 first: a Size times a float keeps T
        n=j0 + tail.n0 + (1 if copy else 2),
        m=max(tail.m, w),
        min_T=tail.K + 1 - d,
    )


_MARGIN = 1e-6  # steps: a dominance threshold never lands on a (rounding-)tie


def _from_flipped(
    T: int, a: float, forms: list[_Affine], forward: list[tuple], flipped: list[_Flipped]
) -> Tail | None:
    """The tail of a chain with sources read in reverse. A reversed source's candidate
    ``R = Q - t·a`` falls strictly along ``t`` (its producer's ``P`` never falls, ``a > 0``),
    so it can only start the path at ``t = 0``; where the largest such start beats every
    other candidate at every step (each an affine function of ``T``: the forward sources'
    prefix maximum, their forms at ``T - 1`` or at the prefix's end, the other reversed
    starts) for all ``T`` from a threshold (a guard), the path is that start followed by the
    chain itself: ``P[t] = V + t·a``, ``N[t] = n + t``, ``M[t] = m`` (``m >= a``). None where
    that fails (a crossing that moves with ``T``, a tie, ``a`` or ``m`` too small)."""
    if not a > 0:
        return None
    win = max(range(len(flipped)), key=lambda i: (flipped[i].alpha, flipped[i].beta, -i))
    top = flipped[win]
    if top.m < a:
        return None
    k = max([1, *(f.start for f in forms)])
    R = dp(k, a, _numeric(forward, k))[3]
    others = [(0.0, float(R.max()))]
    for f in forms:
        r = f.slope - a
        others.append((r, f.c - r) if r > 0 else (0.0, r * k + f.c))
    others += [(g.alpha, g.beta) for i, g in enumerate(flipped) if i != win]
    lo = max([k + 1, *(g.min_T for g in flipped)])
    for alpha, beta in others:
        da, db = top.alpha - alpha, top.beta - beta
        if da < 0:
            return None
        if da > 0:
            lo = max(lo, math.floor(-db / da + _MARGIN) + 1)
    for alpha, beta in others:
        gap = (top.alpha - alpha) * lo + top.beta - beta
        scale = (abs(top.alpha) + abs(alpha)) * lo + abs(top.beta) + abs(beta) + a
        if not gap > _NOISE * scale:
            return None
    if not lo <= T:
        return None
    empty = np.zeros(0)
    return Tail(empty, np.zeros(0, dtype=np.int64), empty, a, top.value, top.n, top.m)


def _settled(forms: list[_Affine]) -> int | None:
    """A step from which every source's candidate is affine and the first source of the
    largest ``(slope, c)`` wins strictly (None: an exact tie whose edges or floors differ)."""
    k = max([1, *(f.start for f in forms)])
    if not forms:
        return k
    win = max(range(len(forms)), key=lambda i: (forms[i].slope, forms[i].c, -i))
    w = forms[win]
    for i, f in enumerate(forms):
        if i == win:
            continue
        if f.slope == w.slope and f.c == w.c and (f.n, f.m) != (w.n, w.m):
            return None
        if f.slope < w.slope:
            k = max(k, math.floor((f.c - w.c) / (w.slope - f.slope)) + 2)
    return k


def _numeric(sources: Sequence[tuple], n: int) -> list[Source]:
    """The sources of :func:`dp` over ``n`` steps, their tails written out to ``n``."""
    out = []
    for tail, _, w, b, a, copy in sources:
        P, N, M = tail.arrays(n)
        out.append((P, N, M, n, w, b, a, copy))
    return out


def tail_best(tail: Tail, T: int) -> tuple[float, int, float]:
    """``(P, N, M)`` at the first step of ``t < T`` with the largest ``P`` (``T >= K``)."""
    last = T - 1 if tail.slope > 0 else tail.K
    v = last * tail.slope + tail.icpt
    if not tail.K:
        return v, last + tail.n0, tail.m
    i = int(np.argmax(tail.P))
    pm = float(tail.P[i])
    if v > pm:
        return v, last + tail.n0, tail.m
    return pm, int(tail.N[i]), float(tail.M[i])
