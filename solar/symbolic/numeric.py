"""Evaluate many sympy expressions of the size symbols at many points, fast.

``sympy.lambdify`` prints each expression to Python source and compiles it: for the small
expressions of a bound (a polynomial per count, a max of terms per time) the printing is most
of the cost, paid again for every region and every piece a sweep meets. :func:`compile_exprs`
instead walks each expression once into nested Python closures (a shared subexpression is
built once) that compute with plain Python numbers or numpy arrays:

- ``exact=True``: integers stay Python ints (``int`` scalars, or numpy *object* arrays of
  ints for many points), rationals are :class:`fractions.Fraction`; only a float constant, a
  square root or a non-integer power makes a value a float. Counts (bytes, flops) evaluate
  exactly at any size.
- ``exact=False``: floats (float64 arrays), as ``lambdify`` with numpy; counts are exact
  below 2**53.

An expression kind the walk does not know (``Piecewise``, a boolean, ...) is handed to
``sympy.lambdify`` for that subexpression alone, so every expression evaluates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np
import sympy

from solar.symbolic.size import IntGcd

Fn = Callable[[tuple], object]

_FLOOR = np.frompyfunc(math.floor, 1, 1)  # on object arrays: exact for ints and Fractions
_CEIL = np.frompyfunc(math.ceil, 1, 1)
_GCD = np.frompyfunc(math.gcd, 2, 1)


def compile_exprs(
    symbols: Sequence[sympy.Symbol], exprs: Sequence[sympy.Basic], *, exact: bool = False
) -> Callable[..., list]:
    """``f(*values) -> [value of each expression]``, ``values`` one per symbol (numbers, or
    arrays that broadcast together); see the module docstring for ``exact``."""
    index = {s: i for i, s in enumerate(symbols)}
    memo: dict[sympy.Basic, Fn] = {}

    def build(e: sympy.Basic) -> Fn:
        f = memo.get(e)
        if f is None:
            f = memo[e] = _node(e, build, index, symbols, exact)
        return f

    fns = [build(sympy.sympify(e)) for e in exprs]

    def run(*values: object) -> list:
        if exact:
            values = tuple(_exact(v) for v in values)
        else:
            values = tuple(np.asarray(v, dtype=np.float64) for v in values)
        return [f(values) for f in fns]

    return run


def _exact(v: object) -> object:
    if isinstance(v, np.ndarray):
        return np.array([int(x) for x in v.ravel()], dtype=object).reshape(v.shape)
    return int(v)  # type: ignore[call-overload]


def _const(v: object) -> Fn:
    return lambda a: v


def _node(e: sympy.Basic, build, index, symbols, exact: bool) -> Fn:
    if isinstance(e, sympy.Symbol):
        if e not in index:
            raise ValueError(f"no value given for the size {e}")
        i = index[e]
        return lambda a: a[i]
    if e.is_Integer:
        return _const(int(e))  # type: ignore[call-overload]
    if e.is_Rational:
        return _const(Fraction(int(e.p), int(e.q)) if exact else float(e))  # type: ignore[attr-defined]
    if e.is_Float or (e.is_number and e.is_real):
        return _const(float(e))  # type: ignore[arg-type]
    if e.is_Add or e.is_Mul:
        parts = [build(x) for x in e.args]
        if e.is_Add:
            return lambda a: _fold(lambda x, y: x + y, parts, a)
        return lambda a: _fold(lambda x, y: x * y, parts, a)
    if e.is_Pow:
        return _pow(build(e.base), e.exp, build, exact)  # type: ignore[attr-defined]
    if isinstance(e, (sympy.floor, sympy.ceiling)):
        (x,) = (build(t) for t in e.args)
        up = isinstance(e, sympy.ceiling)
        if exact:
            one, many = (math.ceil, _CEIL) if up else (math.floor, _FLOOR)
            return lambda a: _apply(one, many, x(a))
        return (lambda a: np.ceil(x(a))) if up else (lambda a: np.floor(x(a)))
    if isinstance(e, sympy.Mod):
        x, y = (build(t) for t in e.args)
        return lambda a: x(a) % y(a)
    if isinstance(e, IntGcd):
        x, y = (build(t) for t in e.args)
        if exact:
            return lambda a: _apply2(math.gcd, _GCD, x(a), y(a))
        return lambda a: np.gcd(_int64(x(a)), _int64(y(a))).astype(np.float64)
    if isinstance(e, (sympy.Max, sympy.Min)):
        parts = [build(x) for x in e.args]
        pick = np.maximum if isinstance(e, sympy.Max) else np.minimum
        return lambda a: _fold(pick, parts, a)
    if isinstance(e, sympy.Abs):
        (x,) = (build(t) for t in e.args)
        return lambda a: abs(x(a))
    return _lambdified(e, symbols, exact)


def _pow(base: Fn, k: sympy.Expr, build, exact: bool) -> Fn:
    if k.is_Integer and int(k) >= 0:  # type: ignore[call-overload]
        n = int(k)  # type: ignore[call-overload]
        return lambda a: base(a) ** n
    if k.is_Integer:
        n = -int(k)  # type: ignore[call-overload]
        one = Fraction(1) if exact else 1.0
        return lambda a: one / base(a) ** n
    if k == sympy.S.Half:
        return lambda a: np.sqrt(_float(base(a)))
    ex = build(k)
    return lambda a: np.power(_float(base(a)), _float(ex(a)))


def _float(v: object) -> object:
    return v.astype(np.float64) if isinstance(v, np.ndarray) else float(v)  # type: ignore[arg-type]


def _fold(op, parts: list[Fn], a: tuple) -> object:
    t = parts[0](a)
    for f in parts[1:]:
        t = op(t, f(a))
    return t


def _int64(v: object) -> np.ndarray:
    return np.asarray(np.rint(v), dtype=np.int64)


def _apply(one, many, v: object) -> object:
    return many(v) if isinstance(v, np.ndarray) else one(v)


def _apply2(one, many, v: object, w: object) -> object:
    if isinstance(v, np.ndarray) or isinstance(w, np.ndarray):
        return many(v, w)
    return one(v, w)


def _lambdified(e: sympy.Basic, symbols, exact: bool) -> Fn:
    """A kind the walk does not know: ``sympy.lambdify`` of this subexpression (floats)."""
    modules = [{"IntGcd": np.gcd, "floor": np.floor, "Mod": np.mod}, "numpy"]
    f = sympy.lambdify(list(symbols), e, modules=modules, docstring_limit=0)

    def call(a: tuple) -> object:
        args = [_float(x) for x in a] if exact else list(a)
        return f(*args)

    return call
