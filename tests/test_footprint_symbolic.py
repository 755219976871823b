"""Closed forms of guarded groups with symbolic sizes (solar/ir/footprint/rows.py, and a
group's dims outside it in solar/ir/footprint/groups.py): the answer computed with sizes,
evaluated at other sizes where its guards hold, equals the numeric path's answer there, and
its count equals a brute-force enumeration of the access; no size is specialized."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy

from solar.algebra.size import Recording, Size, expr_of, recording, symbol
from solar.ir.footprint.domain import LinearGuard
from solar.ir.footprint.groups import _inner_eval, group_values
from solar.ir.footprint.rows import row_values
from solar.ir.limits import limits

N = symbol("N")
W = symbol("W")


def _size(e: sympy.Expr, at: dict) -> int:
    """A Size of expression ``e`` at the point ``at``."""
    return Size(int(e.subs(at)), e) if e.free_symbols else int(e)


def _fields(out, at: dict | None = None) -> tuple:
    """``(min, kind, n, diam, gap, g, exact)`` of a ``(min, factor)`` answer, evaluated at
    ``at`` when given."""

    def v(x):
        return int(expr_of(x).subs(at)) if at is not None else int(x)

    lo, fac = out
    if fac is None:
        return (v(lo), None)
    return (v(lo), type(fac).__name__, v(fac.n), v(fac.diam), v(fac.gap), v(fac.g), fac.exact)


def _holds(rec: Recording, at: dict) -> bool:
    return all(bool(r.subs(at)) for r in rec.guards)


def _brute(rng, guards, f) -> int:
    """Distinct values of the form over the group's executed instances, enumerated."""
    dims = list(rng)
    vals = set()
    for pt in itertools.product(*(range(*rng[d]) for d in dims)):
        x = dict(zip(dims, pt, strict=True))
        if all(g.lo <= g.const + sum(c * x[d] for d, c in g.coefs) < g.hi for g in guards):
            vals.add(sum(c * x[d] for d, c in f.items()))
    return len(vals)


# a group of two dims l, s in [0, n) (sympy expressions of N and W), its guards as
# (coefs, const, lo, hi), the form, and the dim solved as an interval
TRI = (("l", -1), ("s", 1))
CASES = {
    "causal_rowmajor": ([(TRI, 0, 1 - N, 1)], {"l": 1, "s": N}, "l"),
    "causal_colmajor": ([(TRI, 0, 1 - N, 1)], {"l": N, "s": 1}, "l"),
    "causal_inner_s": ([(TRI, 0, 1 - N, 1)], {"s": 1, "l": N}, "s"),
    "causal_keys_only": ([(TRI, 0, 1 - N, 1)], {"l": 3 * W}, "l"),
    "causal_queries_only": ([(TRI, 0, 1 - N, 1)], {"s": 3 * W}, "s"),
    "causal_exists": ([(TRI, 0, 1 - N, 1)], {"s": 5}, "l"),
    "strict_upper": ([(TRI, 0, 1, N)], {"l": N, "s": 1}, "l"),
    "strict_upper_rowmajor": ([(TRI, 0, 1, N)], {"l": 1, "s": N}, "l"),
    "band": ([(TRI, 0, -3, 1)], {"l": 1, "s": N}, "l"),
    "band_colmajor": ([(TRI, 0, -3, 1)], {"l": N, "s": 1}, "l"),
    "anti_diagonal": ([((("l", 1), ("s", 1)), 0, 2, N)], {"l": 1, "s": N}, "l"),
    "diagonal": ([(TRI, 0, 0, 1)], {"l": 1, "s": N}, "l"),
    "negative_form": ([(TRI, 0, 1 - N, 1)], {"l": -1, "s": -N}, "l"),
}


def _instance(case: str, at: dict, sized: bool):
    gs, form, inner = CASES[case]

    def val(e):
        e = sympy.sympify(e)
        return _size(e, at) if sized else int(e.subs(at))

    n = val(N)
    rng = {"l": (0, n), "s": (0, n)}
    guards = [LinearGuard(c, val(k), val(lo), val(hi)) for c, k, lo, hi in gs]
    f = {d: val(c) for d, c in form.items()}
    return rng, guards, f, inner, [d for d in rng if d != inner]


@pytest.mark.parametrize("case", list(CASES))
def test_rows_closed_form_equals_numeric(case):
    traced = {N: 24, W: 7}
    with limits(segments=16), recording() as rec:
        out = row_values(*_instance(case, traced, sized=True))
    assert out is not None, case
    assert not [r for r in rec.guards if isinstance(r, sympy.Eq)], rec.guards
    checked = 0
    for n, w in [(24, 7), (9, 2), (13, 5), (31, 1), (40, 3)]:
        at = {N: n, W: w}
        if not _holds(rec, at):
            continue
        with limits(segments=16):
            ref = _inner_eval(*_instance(case, at, sized=False))
        assert _fields(out, at) == _fields(ref), (case, at)
        rng, guards, f, *_ = _instance(case, at, sized=False)
        count = ref[1].n if ref[1] is not None else 1
        assert count == _brute(rng, guards, f), (case, at)
        checked += 1
    assert checked >= 3, rec.guards


def test_causal_count_is_triangular():
    with limits(segments=16), recording():
        lo, fac = row_values(*_instance("causal_rowmajor", {N: 24, W: 1}, sized=True))
    assert sympy.expand(expr_of(fac.n) - N * (N + 1) / 2) == 0
    assert lo == 0


def test_dims_outside_the_group_are_not_specialized():
    """A group of plain dims whose form and ranges elsewhere hold sizes (a causal mask under
    symbolic batch and heads) is enumerated without reading those sizes."""
    b = Size(3, symbol("B"))
    rng = {"b": (0, b), "l": (0, 50), "s": (0, 50)}
    guards = [LinearGuard(TRI, 0, -49, 1)]
    f = {"b": 2500 * b, "l": 1, "s": 50}
    with recording() as rec:
        sym = group_values(["l", "s"], rng, guards, f)
    assert not rec.guards
    plain = group_values(["l", "s"], {**rng, "b": (0, 3)}, guards, {**f, "b": 7500})
    assert _fields(sym) == _fields(plain)


def test_plain_ints_take_the_numeric_path():
    """Plain sizes: row_values is never consulted; the answer is numpy's."""
    rng, guards, f, inner, others = _instance("causal_rowmajor", {N: 24, W: 1}, sized=False)
    lo, fac = _inner_eval(rng, guards, f, inner, others)
    assert fac.n == 24 * 25 // 2
    assert isinstance(fac.n, int) and not isinstance(fac.n, Size)
    assert np.int64(lo) == 0


def _random_group(r):
    """A random two-dim group: ranges, one or two guards with unit coefficients, a form
    (each a sympy expression of N)."""
    ends = [N, N + r.randint(-2, 3), 2 * N - r.randint(0, 3)]
    rng = {"x": (r.randint(0, 2), r.choice(ends)), "y": (r.randint(0, 2), r.choice(ends))}
    guards = []
    for _ in range(r.randint(1, 2)):
        a, b = r.choice([-1, 1]), r.choice([-1, 0, 1] if guards else [-1, 1])
        lo = r.choice([-N, 1 - N, -3, 0, 1, 2])
        hi = r.choice([1, 2, 4, N, N - 1, 2 * N])
        guards.append(((("x", a), ("y", b)), r.randint(-2, 2), lo, hi))
    coef = [0, 1, -1, 2, N, -N, N + 1, 2 * N + 3, 3 * W]
    form = {"x": r.choice(coef), "y": r.choice(coef)}
    return rng, guards, form


def _build(rng, guards, form, at, sized):
    def val(e):
        e = sympy.sympify(e)
        return _size(e, at) if sized else int(e.subs(at))

    return (
        {d: (val(a), val(b)) for d, (a, b) in rng.items()},
        [LinearGuard(c, val(k), val(lo), val(hi)) for c, k, lo, hi in guards],
        {d: val(c) for d, c in form.items()},
    )


@pytest.mark.parametrize("seed", range(100))
def test_random_groups_closed_form_equals_numeric(seed):
    """A random group (ranges, unit-coefficient guards, form) with symbolic sizes: where
    rows.py answers, its answer evaluated at other sizes inside its guards is the numeric
    answer there, whose count is the brute-force count."""
    import random

    r = random.Random(seed)
    rng0, guards0, form0 = _random_group(r)
    traced = {N: 20, W: 3}
    for inner in ("x", "y"):
        others = ["y" if inner == "x" else "x"]
        try:
            with limits(segments=8), recording() as rec:
                rng, guards, f = _build(rng0, guards0, form0, traced, sized=True)
                out = row_values(rng, guards, f, inner, others)
        except ZeroDivisionError:
            continue
        if out is None:
            continue
        for n, w in [(20, 3), (7, 1), (11, 2), (16, 5), (25, 2)]:
            at = {N: n, W: w}
            if not _holds(rec, at):
                continue
            rng, guards, f = _build(rng0, guards0, form0, at, sized=False)
            if any(a >= b for a, b in rng.values()):
                continue
            with limits(segments=8):
                ref = _inner_eval(rng, guards, f, inner, others)
            assert _fields(out, at) == _fields(ref), (seed, inner, at, rec.guards)
            count = ref[1].n if ref[1] is not None else 1
            if ref[1] is not None and ref[1].n == 0:
                count = 0
            assert count == _brute(rng, guards, f), (seed, inner, at)
