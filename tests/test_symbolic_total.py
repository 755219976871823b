"""sum_times (solar.algebra.total) is ``sum``: the same value and, for symbolic times, the
same sympy expression, argument for argument, as adding one term after another (the
expression it builds in one pass is checked against the one sympy builds term by term),
cancellations, zero terms, plain numbers and other expressions included."""

from __future__ import annotations

import functools
import operator
import random

import sympy

from solar.algebra.size import Real, Size, symbol
from solar.algebra.total import _linear_sum, sum_times

B, C = symbol("batch"), symbol("context")
MONOMIALS = [B, C, B * C, B**2, B**2 * C]


def _time(rng: random.Random) -> float:
    """A plain time, or a Real of a linear form in the monomials (its value at B=7, C=3)."""
    kind = rng.random()
    if kind < 0.15:
        return rng.choice([0.0, 5e-7, rng.random() * 1e-5])
    terms = [sympy.Float(rng.choice([1, -1]) * rng.random() * 1e-6) * m for m in MONOMIALS]
    expr = sum(rng.sample(terms, rng.randint(1, 3)), sympy.Float(rng.random() * 1e-4))
    if kind < 0.25:
        expr = expr * sympy.Rational(1, 3)  # a rational factor: still a linear form
    return Real(float(expr.subs({B: 7, C: 3})), expr)


def test_sum_times_is_sum_value_and_expression():
    rng = random.Random(21)
    for _ in range(300):
        xs = [_time(rng) for _ in range(rng.randint(1, 40))]
        if rng.random() < 0.3:  # a term and its negation: the monomial cancels on the way
            x = next((x for x in xs if isinstance(x, Real)), None)
            if x is not None:
                xs.insert(rng.randint(0, len(xs)), Real(-x.hint, -x.expr))
        want, got = sum(xs), sum_times(xs)
        assert type(got) is type(want)
        assert float(got) == float(want) if not isinstance(want, Real) else got.hint == want.hint
        if isinstance(want, Real):
            exprs = [x.expr if isinstance(x, Real) else sympy.sympify(x) for x in xs]
            assert _linear_sum(exprs) is not None  # the one pass, not sum's fallback
            assert sympy.srepr(got.expr) == sympy.srepr(want.expr)
        ordered = functools.reduce(operator.add, [0.0, *xs], 0)
        assert sum_times([0.0, *xs], in_order=True) == ordered  # the value of a loop of +=


def test_sum_times_leaves_other_expressions_to_sum():
    n = symbol("n")
    odd = [Real(1.0, sympy.floor(n / 2) * sympy.Float(1e-9)), Real(2.0, sympy.Float(1e-9) * n)]
    assert _linear_sum([x.expr for x in odd]) is None  # not a linear form: summed as sum does
    assert sympy.srepr(sum_times(odd).expr) == sympy.srepr(sum(odd).expr)
    assert sum_times([1.0, 2.5]) == 3.5 and sum_times([]) == 0
    assert sum_times([Size(3, n), 1]) == 4  # sizes: sum itself
