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
(:class:`Tail`); the prefix before it is computed by :func:`dp` itself. :func:`chain_tail`
builds a tail or returns None where this does not apply (the caller then specializes ``T``);
:func:`tail_best` is the longest path over ``t < T`` with ``T`` kept as an expression.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solar.symbolic.size import Real, Size, expr_of

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
    ``P = slope·t + icpt``, ``N = t + n0``, ``M = m``."""

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
        return (
            np.concatenate([self.P, self.slope * t + self.icpt]),
            np.concatenate([self.N, t + self.n0]),
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
    forms = []
    for tail, steps, w, (cb, kb), (ca, ka), copy in sources:
        if tail is None or not _plain(w) or expr_of(steps) != expr_of(T):
            return None
        if not (_plain(cb) and _plain(ca)) or cb * ca != 1:
            return None
        d = ca * (kb - ka) - (0 if copy else 1)
        if not _plain(d) or d > 0:
            return None
        n = d + tail.n0 + (1 if copy else 2)
        c = tail.slope * d + tail.icpt + w
        forms.append(_Affine(tail.slope, c, n, max(tail.m, w), tail.K - d))
    k2 = _settled(forms)
    if k2 is None:
        return None
    if not forms:
        slope, icpt, n0, m, k3 = a, 0.0, 0, max(0.0, a), 1
    else:
        win = max(range(len(forms)), key=lambda i: (forms[i].slope, forms[i].c, -i))
        f = forms[win]
        *_, R, QN, QM, best = dp(k2 + 1, a, _numeric(sources, k2 + 1))
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
    P, N, M, *_ = dp(k3, a, _numeric(sources, k3))
    return Tail(P, N, M, slope, icpt, n0, m)


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
    i = int(np.argmax(tail.P))
    pm = float(tail.P[i])
    last = T - 1 if tail.slope > 0 else tail.K
    v = last * tail.slope + tail.icpt
    if v > pm:
        return v, last + tail.n0, tail.m
    return pm, int(tail.N[i]), float(tail.M[i])
