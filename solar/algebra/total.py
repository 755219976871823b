"""``sum`` of times that builds a symbolic time's expression once, not once per term.

Adding two sympy expressions builds a new one (sympy's ``Add.flatten``): a sum of ``n``
symbolic times adds ``n`` times, each a new expression with its own Float coefficients and
assumptions (about 0.2 ms each). A symbolic analysis sums per-kernel times in several places,
and every new piece of a bound repeats those sums with one kernel's term changed, so most of
them are new expressions. :func:`sum_times` gives exactly what ``sum`` gives, value and
expression, but collects the terms of a *linear* sum (numbers times monomials of the size
symbols, the form of a roofline time) in one pass, as ``Add.flatten`` collects them one
addition after another: per monomial, the coefficients added in the order of the terms
(sympy's Number addition, correctly rounded, commutative), a zero coefficient dropped, then
one ``Add`` of the collected terms. Any other expression (a ``floor``, a ``Max``, a power of
a number) is summed term by term, as ``sum`` does.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable

import sympy

from solar.algebra.size import Real, Size, real


def sum_times(xs: Iterable[object], *, in_order: bool = False) -> object:
    """``sum(xs)``: the same value and, for symbolic times, the same expression (see the
    module docstring). ``in_order``: plain numbers too are added one by one (the value of a
    loop ``acc = acc + x``; Python 3.12's ``sum`` of floats compensates rounding); symbolic
    times always are, as ``sum`` adds them."""
    items = list(xs)
    if not any(isinstance(x, Real) for x in items) or any(isinstance(x, Size) for x in items):
        return functools.reduce(operator.add, items, 0) if in_order else sum(items)
    value: float = 0
    for x in items:
        value = value + (x.hint if isinstance(x, Real) else x)  # type: ignore[operator]
    exprs = [x.expr if isinstance(x, Real) else sympy.sympify(x) for x in items]
    expr = _linear_sum(exprs)
    if expr is None:
        return sum(items)
    return real(value, expr)


def _monomial(s: sympy.Basic) -> bool:
    """A product of powers of symbols (no number in it)."""
    factors = s.args if s.is_Mul else (s,)
    return bool(factors) and all(
        f.is_Symbol or (f.is_Pow and f.base.is_Symbol and f.exp.is_Integer and f.exp > 0)
        for f in factors
    )


def _linear_sum(exprs: list[sympy.Expr]) -> sympy.Expr | None:
    """The sum of ``exprs`` as sympy adds them one by one, or None where a term is not a
    number or a number times a monomial."""
    coeff: sympy.Expr = sympy.S.Zero
    terms: dict[sympy.Basic, sympy.Expr] = {}
    for e in exprs:
        for o in e.args if e.is_Add else (e,):
            if o.is_Number:
                if not (o.is_Float or o.is_Rational):
                    return None  # nan, oo
                coeff = coeff + o
                continue
            if o.is_Mul:
                c, s = o.as_coeff_Mul()
            else:
                c, s = sympy.S.One, o
            if not (c.is_Float or c.is_Rational) or not _monomial(s):
                return None
            old = terms.get(s)
            terms[s] = c if old is None else old + c
    if not (coeff.is_Float or coeff.is_Rational):
        return None
    args: list[sympy.Expr] = [] if coeff is sympy.S.Zero else [coeff]
    for s, c in terms.items():
        if c.is_zero:
            continue
        if c is sympy.S.One:
            args.append(s)
        elif s.is_Mul:
            args.append(s._new_rawargs(*((c,) + s.args)))  # as Add.flatten writes c*s
        else:
            args.append(sympy.Mul(c, s))
    return sympy.Add(*args)
