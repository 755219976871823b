"""Value sets of affine forms over a domain, and the footprint of one access.

An unguarded loop dim gives a progression, a guarded group its :mod:`groups` set; the groups
are independent, so the form's value set is the Minkowski sum of one set per group
(:mod:`sums`). An access's storage offset is an affine form of the loop dims
(:func:`flat_form`); its footprint is the number of values of that form, at most the base's
numel (accesses are assumed in bounds).

A view that reinterprets its base's bytes as another element type counts base elements too:
an element of a wider type covers ``k`` consecutive base elements, one of a narrower type lies
inside one base element (which is touched whole: a memory transaction moves at least a sector,
never part of an element), see :func:`access_set`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solar.algebra.memo import memo
from solar.algebra.size import integer
from solar.ir.affine import Affine
from solar.ir.footprint.arith import cdiv, concrete, form_range
from solar.ir.footprint.domain import Domain, components, domain, statement_domain
from solar.ir.footprint.factors import (
    Factor,
    Progression,
    listed,
    materialize,
    nothing,
    opaque,
    progression,
)
from solar.ir.footprint.groups import group_values
from solar.ir.footprint.record import Footprint
from solar.ir.footprint.sums import ValueSet, fold, scaled_range
from solar.ir.limits import Limits, current_limits
from solar.ir.program import Program, Statement
from solar.ir.scalar import Indirect


def form_set(dom: Domain, terms: tuple[tuple[str, int], ...], const: int) -> ValueSet:
    """Values of ``const + Σ terms`` over the domain (under the limits in force)."""
    return _form_set(dom, terms, const, current_limits())


# Keyed on the limits in force: the paths taken (and a lower bound's value) depend on them.
@memo(maxsize=16384)
def _form_set(
    dom: Domain, terms: tuple[tuple[str, int], ...], const: int, limits: Limits
) -> ValueSet:
    if dom.empty:
        return ValueSet(0, (nothing(),))
    rng = dom.rng
    f = dict(terms)
    parts: list[Factor] = []
    for dims, guards in components(f, dom.guards):
        if not guards:
            (d,) = dims
            lo, p = scaled_range(f[d], *rng[d])
        else:
            lo, p = group_values(dims, rng, guards, f)
        const += lo
        if p:
            parts.append(p)
    return fold(const, parts)


def has_indirect(index: Sequence[object]) -> bool:
    """Whether an index has a data-dependent entry."""
    return any(isinstance(e, Indirect) for e in index)


def injective_layout(program: Program, tensor: str) -> bool:
    """Whether distinct indices of ``tensor`` address distinct storage elements (a plain
    tensor, or a view whose strides do not overlap)."""
    decl = program.tensors[tensor]
    if decl.view is None:
        return True
    span = 0  # largest offset reachable with the smaller strides
    strides = zip(decl.shape, decl.view.strides, strict=True)
    for stride, n in sorted((abs(st), n) for n, st in strides if n > 1):
        if stride <= span:
            return False
        span += stride * (n - 1)
    return True


def flat_form(program: Program, tensor: str, index: Sequence[Affine | Indirect]) -> Affine:
    """Storage offset of ``tensor[index]`` as an affine form; indirect entries contribute
    nothing (stride 0: the provable-minimum convention of :mod:`solar.ir.footprint`)."""
    decl = program.tensors[tensor]
    if len(index) != len(decl.shape):
        raise ValueError(f"{tensor} has {len(decl.shape)} dims, indexed by {len(index)}")
    if decl.view is not None:
        strides, flat = decl.view.strides, Affine((), decl.view.offset)
    else:
        strides, acc = [], 1
        for n in reversed(decl.shape):
            strides.append(acc)
            acc *= n
        strides, flat = tuple(reversed(strides)), Affine()
    for s, e in zip(strides, index, strict=True):
        if s and not isinstance(e, Indirect):
            flat = flat + Affine.of(e) * integer(s)
    return flat


#: the loop dim over the base elements one element of a wider view covers
_PART = "·part"


def access_set(program: Program, st: Statement, tensor: str, index) -> ValueSet:
    """Storage offsets (base elements) ``tensor[index]`` takes over the executed instances of
    ``st``. A view that reinterprets its base as a wider type (``view_as_complex``) covers
    ``k`` base elements per element: the form ``k·F + j`` with a part dim ``j < k``; a
    narrower one (``view_as_real``, ``view(uint8)``) touches the base element ``floor(F / k)``,
    an affine form when the terms not divisible by ``k`` stay inside one element (a trailing
    part index), else :func:`_floor_set`."""
    flat = flat_form(program, tensor, index)
    dom = statement_domain(st)
    size = program.tensors[tensor].itemsize
    base = program.tensors[program.base(tensor)].itemsize
    if size > base:
        k = size // base
        ext = tuple((d.name, concrete(d.extent)) for d in st.dims) + ((_PART, k),)
        wide = flat * k + Affine.of(_PART)
        return form_set(domain(ext, tuple(st.guards)), wide.terms, wide.const)
    if size < base and not dom.empty:
        k = base // size
        rest = {d: a for d, a in flat.terms if a % k}
        lo, hi = form_range(rest, flat.const % k, dom.rng)
        if lo >= 0 and hi < k:
            terms = tuple((d, a // k) for d, a in flat.terms if d not in rest)
            return form_set(dom, terms, flat.const // k)
        return _floor_set(form_set(dom, flat.terms, flat.const), k)
    return form_set(dom, flat.terms, flat.const)


def _floor_set(s: ValueSet, k: int) -> ValueSet:
    """``{floor(v / k) : v in s}``: exact for an interval or a set small enough to enumerate,
    else a lower bound (each of its values holds at most ``k`` values of ``s``)."""
    diam = sum(f.diam for f in s.factors)
    one_run = all(isinstance(f, Progression) and f.step == 1 for f in s.factors)
    if s.exact and one_run and len(s.factors) < 2:
        n = (s.const + diam) // k - s.const // k + 1
        return ValueSet(s.const // k, tuple(f for f in [progression(1, n)] if f))
    v = materialize(s.factors) if s.exact else None
    if v is not None:
        lo, f = listed(np.unique((v + int(s.const)) // int(k)))
        return ValueSet(lo, (f,) if f else ())
    f = opaque(cdiv(s.count, k), False, diam // k + 1, 1)
    return ValueSet(s.const // k, (f,) if f else ())


def indirect_min(program: Program, st: Statement, tensor: str, index) -> int:
    """Provable minimum of the elements an access with indirect entries touches."""
    n = access_set(program, st, tensor, index).count  # exact, or itself a lower bound
    if not injective_layout(program, tensor):
        n = min(n, 1)
    return min(n, program.tensors[program.base(tensor)].numel)


def access_footprint(
    program: Program, st: Statement, tensor: str, index: tuple[Affine | Indirect, ...]
) -> Footprint:
    """Distinct storage elements of ``tensor``'s base that ``tensor[index]`` touches over the
    executed instances of ``st`` (with indirect entries: the provable minimum, inexact)."""
    numel = program.tensors[program.base(tensor)].numel
    if has_indirect(index):
        return Footprint(indirect_min(program, st, tensor, index), False)
    s = access_set(program, st, tensor, index)
    return Footprint(min(s.count, numel), s.exact)
