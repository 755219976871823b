"""Instance counts and distinct tuples (used by the op counts).

:func:`guarded_count` counts executed instances (or distinct combinations of some loop dims
among them); :func:`distinct_tuples` counts distinct tuples of several affine forms over a
statement's executed instances: the number of distinct argument tuples a hoisted scalar
subexpression must be evaluated on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from solar.ir.affine import Affine
from solar.ir.footprint.arith import NP_SAFE, cdiv, concrete, form_range, sized
from solar.ir.footprint.domain import Domain, LinearGuard, components, domain, statement_domain
from solar.ir.footprint.forms import form_set
from solar.ir.footprint.groups import group_values
from solar.ir.footprint.record import Footprint
from solar.ir.footprint.sized import lattice_count
from solar.ir.footprint.sums import fold, scaled_range
from solar.ir.program import Guard, Statement


def _project_count(dom: Domain, dims: Iterable[str]) -> Footprint:
    """Distinct combinations of ``dims`` among the domain's points."""
    if dom.empty:
        return Footprint(0, True)
    rng = dom.rng
    want = dict.fromkeys(dims)  # in order: a set's order varies with the hash seed
    total, exact = 1, True
    for comp, guards in components(want, dom.guards):
        used = [d for d in comp if d in want]
        if not guards:
            total *= math.prod(rng[d][1] - rng[d][0] for d in used)
            continue
        if len(used) == len(comp) and sized(v for d in comp for v in rng[d]):
            n = lattice_count(comp, rng, guards)  # the count below, with sizes kept
            if n is not None:
                if n == 0:
                    return Footprint(0, True)
                total *= n
                continue
        f, acc = {}, 1
        for d in sorted(used, key=lambda d: rng[d][1] - rng[d][0]):
            f[d] = acc
            acc *= rng[d][1] - rng[d][0]
        _, p = group_values(comp, rng, guards, f)
        n = p.n if p else 1
        if p and not p.exact:
            exact = False
        if n == 0:
            return Footprint(0, p.exact if p else True)
        total *= n
    return Footprint(total, exact)


def guarded_count(
    extents: Mapping[str, int], guards: Sequence[Guard], dims: Iterable[str] | None = None
) -> Footprint:
    """Executed instances of the loop box under ``guards`` (all ``lo <= expr < hi``), or, with
    ``dims``, the distinct combinations of those loop dims among the executed instances."""
    dom = domain(tuple((d, concrete(n)) for d, n in extents.items()), tuple(guards))
    return _project_count(dom, extents if dims is None else dims)


def statement_instances(st: Statement) -> Footprint:
    """Executed instances of a statement (guards applied)."""
    return _project_count(statement_domain(st), st.extents)


def _injective_form(terms: Mapping[str, int], rng: Mapping[str, tuple[int, int]]) -> bool:
    parts = [p for d, c in terms.items() if (p := scaled_range(c, *rng[d])[1])]
    s = fold(0, parts)
    return s.exact and s.count == math.prod(rng[d][1] - rng[d][0] for d in terms)


def _widths(
    dims: Iterable[str],
    fixed: set[str],
    rng: Mapping[str, tuple[int, int]],
    guards: Sequence[LinearGuard],
) -> dict[str, tuple[int, int]]:
    """Per dim of ``dims``, a range ``[0, w)`` whose width bounds the values the dim takes
    among the executed instances once the ``fixed`` dims are given: its loop range, narrowed by
    every guard over that dim and fixed dims only (``lo <= a·x + b < hi`` leaves at most
    ``ceil((hi - lo) / |a|)`` values of ``x``)."""
    out = {}
    for d in dims:
        w = rng[d][1] - rng[d][0]
        for g in guards:
            coefs = dict(g.coefs)
            if d in coefs and set(coefs) <= fixed | {d}:
                w = min(w, cdiv(g.hi - g.lo, abs(coefs[d])))
        out[d] = (0, w)
    return out


def distinct_tuples(st: Statement, forms: Sequence[Affine]) -> Footprint:
    """Distinct values of the tuple ``(form_1(x), ..., form_k(x))`` over the executed
    instances ``x`` of ``st``: how often a function of those values must be evaluated."""
    dom = statement_domain(st)
    forms = list(dict.fromkeys(f for f in forms if not f.is_const))
    if dom.empty:
        return Footprint(0, True)
    dims = dict.fromkeys(d for f in forms for d in f.dims)  # in order (not a set's)
    rng = dom.rng
    det: set[str] = set()
    changed = True
    while changed:
        changed = False
        for f in forms:
            rest = {d: c for d, c in f.terms if d not in det}
            if rest and _injective_form(rest, _widths(rest, det, rng, dom.guards)):
                det |= rest.keys()
                changed = True
    if dims.keys() <= det:
        return _project_count(dom, dims)
    if len(forms) == 1:
        s = form_set(dom, forms[0].terms, forms[0].const)
        return Footprint(s.count, s.exact)
    flat, radix = Affine(), 1
    for f in forms:
        lo, hi = form_range(f.coefs, 0, rng)
        flat = flat + (Affine(f.terms) - lo) * radix
        radix *= hi - lo + 1
    if radix < NP_SAFE >> 8:
        s = form_set(dom, flat.terms, 0)
        return Footprint(s.count, s.exact)
    lbs = [_project_count(dom, [d for d in dims if d in det]).elements]
    for f in forms:
        lbs.append(form_set(dom, f.terms, f.const).count)
    return Footprint(max(lbs), False)
