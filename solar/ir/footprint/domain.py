"""The iteration domain of a statement: per-dim ranges plus the guards joining several dims.

Guards on one loop dim shrink that dim's range; constant guards decide emptiness; a guard
that always holds on the box is dropped, the others are clipped to their expression's range.
Loop dims joined by a common multi-dim guard form a *group* (:func:`components`): groups are
independent of each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from solar.algebra.memo import memo
from solar.ir.footprint.arith import at_least, at_most, bound_int, concrete, form_range, solve
from solar.ir.program import Guard, Statement


@dataclass(frozen=True)
class LinearGuard:
    """``lo <= const + Σ coef·x_dim < hi`` over two or more loop dims."""

    coefs: tuple[tuple[str, int], ...]
    const: int
    lo: int
    hi: int


@dataclass(frozen=True)
class Domain:
    """The executed instances of a loop box: ranges, and the guards they do not capture."""

    ranges: tuple[tuple[str, int, int], ...]  # (dim, lo, hi) half-open, all non-empty
    guards: tuple[LinearGuard, ...]  # multi-dim guards, clipped, never trivially true
    empty: bool

    @property
    def rng(self) -> dict[str, tuple[int, int]]:
        return {d: (lo, hi) for d, lo, hi in self.ranges}


# Depends on nothing but its arguments (no size limit), so it is cached without the limits.
@memo(maxsize=8192)
def domain(extents: tuple[tuple[str, int], ...], guards: tuple[Guard, ...]) -> Domain:
    """The domain of the box ``0 <= x_d < n_d`` (``extents``) under ``guards``."""
    ranges = {d: (0, n) for d, n in extents}
    empty = Domain((), (), True)
    multi: list[tuple[dict[str, int], int, int, int]] = []
    for g in guards:
        lo, hi = bound_int(g.lo), bound_int(g.hi)
        e = g.expr
        unknown = set(e.dims) - ranges.keys()
        if unknown:
            raise ValueError(f"guard {g} uses loop dims {sorted(unknown)} not in the nest")
        if lo >= hi:
            return empty
        if e.is_const:
            if not lo <= e.const < hi:
                return empty
        elif len(e.terms) == 1:
            ((d, a),) = e.terms
            xl, xh = solve(a, e.const, lo, hi)
            rl, rh = ranges[d]
            ranges[d] = (at_least(rl, xl), at_most(rh, xh))
        else:
            multi.append((e.coefs, e.const, lo, hi))
    if any(lo >= hi for lo, hi in ranges.values()):
        return empty
    out = []
    for coefs, const, lo, hi in multi:
        emin, emax = form_range(coefs, const, ranges)
        lo2, hi2 = at_least(emin, lo), at_most(emax + 1, hi)
        if lo2 >= hi2:
            return empty
        if lo2 == emin and hi2 == emax + 1:
            continue
        out.append(LinearGuard(tuple(sorted(coefs.items())), const, lo2, hi2))
    return Domain(tuple((d, lo, hi) for d, (lo, hi) in ranges.items()), tuple(out), False)


def statement_domain(st: Statement) -> Domain:
    """The domain of a statement's executed instances."""
    ext = tuple((d.name, concrete(d.extent)) for d in st.dims)
    return domain(ext, tuple(st.guards))


def components(
    dims: Iterable[str], guards: Sequence[LinearGuard]
) -> list[tuple[list[str], list[LinearGuard]]]:
    """Connected components of loop dims under shared guards, with their guards."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for d in dims:
        parent.setdefault(d, d)
    for g in guards:
        ds = [d for d, _ in g.coefs]
        for d in ds:
            parent.setdefault(d, d)
        for d in ds[1:]:
            parent[find(d)] = find(ds[0])
    comps: dict[str, tuple[list[str], list[LinearGuard]]] = {}
    for d in parent:
        comps.setdefault(find(d), ([], []))[0].append(d)
    for g in guards:
        comps[find(g.coefs[0][0])][1].append(g)
    return list(comps.values())
