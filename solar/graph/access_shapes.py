"""What the cache-aware I/O bounds need of one affine access, read off the einsum graph.

An access's index, in the graph's rank names, as ``({rank: coef}, const)`` per axis
(:func:`access_indices`); a view's broadcast axes dropped where its layout does not overlap
(:func:`layout`); and its :class:`AccessShape` (:func:`access_shape`): the ranks its element
depends on, its tap axes (a window ``p + r`` of a convolution), an upper bound on the
distinct elements it touches and on the instances each element takes part in, and the exact
count of in-bounds index tuples. That count of a window is the IR's footprint machinery
(:mod:`solar.ir.footprint`), so this module is where the backend's questions about an access
meet it: the backend reads graphs only. Computed when an analysis asks (its decisions on
symbolic sizes are the analysis's guards, not the trace's).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from solar.algebra.size import Size
from solar.graph.types import OpNode, TensorAccess
from solar.ir.affine import Affine
from solar.ir.footprint.domain import domain
from solar.ir.footprint.forms import form_set
from solar.ir.limits import current_limits
from solar.ir.program import Guard

Form = tuple[dict[str, int], int]  # an affine index as ({rank: coef}, const)


def access_indices(node: OpNode) -> list[list[Form]] | None:
    """Per access (operands in order, then the output): per axis, the affine index in rank
    names as ``({rank: coef}, const)``; None when an entry is data-dependent."""
    accs = [*node.operands, node.output]
    if any(a.indirect for a in accs):
        return None
    return [[(e.coefs, e.const) for e in a.index] for a in accs]  # type: ignore[union-attr]


def _mixed_radix(coefs: dict[str, int], ranks: dict[str, int]) -> bool:
    """Whether ``Σ coef·rank`` is injective on the box (each |coef| exceeds the span of the
    smaller ones)."""
    span = 0
    for c, r in sorted((abs(c), r) for r, c in coefs.items()):
        if c <= span:
            return False
        span += c * (ranks[r] - 1)
    return True


@dataclass(frozen=True)
class AccessShape:
    """What the bound needs of one access: the ranks its element depends on, its tap axes
    ``(p, r, coef_p, coef_r)`` (two ranks that may collide), an upper bound on the distinct
    elements it touches, and an upper bound on the instances one element takes part in."""

    deps: frozenset[str]
    taps: tuple[tuple[str, str, int, int], ...]
    size: int
    mult: int
    tuples: int | None  # exact count of in-bounds index tuples over the box, None: unknown


def _tap_values(cp: int, np_: int, cr: int, nr: int, const: int, size: int) -> int | None:
    """Distinct values of ``cp·p + cr·r + const`` in ``[0, size)`` over ``p < np_, r < nr``."""
    if np_ * nr > current_limits().enum:
        return None
    if any(isinstance(x, Size) for x in (cp, np_, cr, nr, const, size)):
        form = Affine.build({"p": cp, "r": cr}, const)  # a window: counted with its sizes
        s = form_set(domain((("p", np_), ("r", nr)), (Guard(form, 0, size),)), form.terms, 0)
        if s.exact:
            return s.count
    import numpy as np

    cp, np_, cr, nr, const, size = (int(x) for x in (cp, np_, cr, nr, const, size))
    v = np.add.outer(cp * np.arange(np_, dtype=np.int64), cr * np.arange(nr, dtype=np.int64))
    v = v.ravel() + const
    return int(np.unique(v[(v >= 0) & (v < size)]).size)


def access_shape(axes: Sequence[Form], shape: Sequence[int], ranks: dict[str, int], numel: int):
    """Analyse one access (None when it is not of the supported affine forms)."""
    if len(axes) != len(shape):
        return None
    seen: set[str] = set()
    taps = []
    size, tuples, per_elem = 1, 1, 1
    for (coefs, const), dim in zip(axes, shape):
        if seen & set(coefs):
            return None
        seen |= set(coefs)
        if not coefs:
            continue
        n = math.prod(ranks[r] for r in coefs)
        if _mixed_radix(coefs, ranks):
            size *= min(n, dim)
            if tuples is not None:
                lo = const + sum(min(0, c * (ranks[r] - 1)) for r, c in coefs.items())
                hi = const + sum(max(0, c * (ranks[r] - 1)) for r, c in coefs.items())
                tuples = tuples * n if lo >= 0 and hi < dim else None
        elif len(coefs) == 2:
            (p, cp), (r, cr) = sorted(coefs.items())
            span = abs(cp) * (ranks[p] - 1) + abs(cr) * (ranks[r] - 1) + 1
            size *= min(dim, n, span)
            per_elem *= min(ranks[p], ranks[r])
            taps.append((p, r, cp, cr))
            if tuples is not None:
                t = _tap_values(cp, ranks[p], cr, ranks[r], const, dim)
                tuples = None if t is None else tuples * t
        else:
            return None
    mult = per_elem * math.prod(n for r, n in ranks.items() if r not in seen)
    return AccessShape(frozenset(seen), tuple(taps), min(size, numel), mult, tuples)


def layout(acc: TensorAccess, axes: list[Form]):
    """Drop broadcast (stride-0) axes of a view whose layout does not overlap; returns
    (axes, shape, layout known injective?) or None for an access of another rank. A row-major
    tensor is injective; an overlapping view is left to the footprint check."""
    shape = list(acc.shape)
    if len(shape) != len(axes):
        return None
    if acc.strides is None:
        return axes, shape, True
    if len(acc.strides) != len(axes):
        return None
    keep = [i for i, st in enumerate(acc.strides) if st]
    span = 0
    for st, n in sorted((abs(acc.strides[i]), shape[i]) for i in keep if shape[i] > 1):
        if st <= span:
            return axes, shape, False
        span += st * (n - 1)
    return [axes[i] for i in keep], [shape[i] for i in keep], True
