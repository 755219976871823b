"""Unions of segments: arithmetic progressions ``start + step·[0, len)`` of one step, counted
exactly (per residue class modulo ``step``), as explicit values while small and by a sweep
over the segments beyond the ``segments`` limit."""

from __future__ import annotations

import math

import numpy as np

from solar.ir.footprint.arith import NP_SAFE
from solar.ir.footprint.factors import Factor, listed, nothing, opaque, progression
from solar.ir.limits import current_limits


def runs(v: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Maximal runs ``start + step·[0, len)`` of a sorted array: ``(starts, lens)``."""
    if v.size == 0:
        return v, v
    brk = np.flatnonzero(np.diff(v) != step) + 1
    starts = np.concatenate(([0], brk))
    ends = np.concatenate((brk, [v.size]))
    return v[starts], (ends - starts).astype(np.int64)


def segment_union(starts: np.ndarray, step: int, lens: np.ndarray) -> tuple[int, Factor | None]:
    """``(min, factor)`` of the union of APs ``start + step·[0, len)`` (exact)."""
    keep = lens > 0
    starts, lens = starts[keep], lens[keep]
    if starts.size == 0:
        return 0, nothing()
    if step == 0 or int(lens.max()) == 1:
        return listed(np.unique(starts))
    single = _single_run(starts, step, lens)
    if single is not None:
        return single
    total = int(lens.sum())
    if total <= current_limits().segments:  # small: keep the values (exact structure for later)
        offs = np.repeat(np.cumsum(lens) - lens, lens)
        v = np.repeat(starts, lens) + step * (np.arange(total, dtype=np.int64) - offs)
        return listed(np.unique(v))
    r, q = starts % step, starts // step
    order = np.lexsort((q, r))
    r, q, e = r[order], q[order], q[order] + lens[order]
    cls = np.concatenate(([0], np.cumsum(r[1:] != r[:-1])))
    qmin = int(q.min())
    span = int(e.max()) - qmin + 1
    if int(cls[-1]) * span < NP_SAFE:
        qo = q - qmin + cls * span
        eo = e - qmin + cls * span
        pm = np.maximum.accumulate(eo)
        prev = np.concatenate((qo[:1], pm[:-1]))
        count = int(np.maximum(0, eo - np.maximum(qo, prev)).sum())
    else:  # too many residue classes for one offset sweep: one sweep per class
        count = 0
        bounds = np.flatnonzero(np.diff(cls)) + 1
        for qs, es in zip(np.split(q, bounds), np.split(e, bounds), strict=True):
            pm = np.maximum.accumulate(es)
            prev = np.concatenate((qs[:1], pm[:-1]))
            count += int(np.maximum(0, es - np.maximum(qs, prev)).sum())
    lo = int(starts.min())
    hi = int((starts + step * (lens - 1)).max())
    g = math.gcd(step, int(np.gcd.reduce(starts - lo)))
    return lo, opaque(count, True, hi - lo, g)


def _single_run(
    starts: np.ndarray, step: int, lens: np.ndarray
) -> tuple[int, Factor | None] | None:
    """The union when the segments share one residue class and chain into one run (the causal
    triangle: ``[0, l]`` for every ``l``): one AP, found in O(k log k) for k segments."""
    r = starts % step
    if (r != r[0]).any():
        return None
    q = starts // step
    order = np.argsort(q, kind="stable")
    q, e = q[order], q[order] + lens[order]
    reach = np.maximum.accumulate(e)
    if (q[1:] > reach[:-1]).any():
        return None
    lo_q, hi_q = int(q[0]), int(reach[-1])
    return lo_q * step + int(r[0]), progression(step, hi_q - lo_q)
