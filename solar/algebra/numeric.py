"""Evaluate many sympy expressions of the size symbols at many points, fast.

``sympy.lambdify`` prints each expression to Python source with sympy's printers, which is
most of its cost for the small expressions of a bound, paid again for every region and piece
a sweep meets. :func:`compile_exprs` walks the expressions once and writes one straight-line
Python function itself: a line per distinct subexpression (shared ones computed once), the
constants bound by name. Building it costs about what one walk costs; calling it costs a
few operations per node, on plain Python numbers or numpy arrays:

- ``exact=True``: integers stay Python ints (``int`` scalars, or numpy *object* arrays of
  ints for many points), rationals are :class:`fractions.Fraction`; only a float constant,
  a square root or a non-integer power makes a value a float. Counts (bytes, flops)
  evaluate exactly at any size.
- ``exact=False``: float64 (arrays), as ``lambdify`` with numpy; counts are exact below
  2**53.

An expression kind the walk does not know (``Piecewise``, a boolean, ...) is handed to
``sympy.lambdify`` for that subexpression alone, so every expression evaluates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np
import sympy

from solar.algebra.size import IntGcd

_FLOOR = np.frompyfunc(math.floor, 1, 1)  # on object arrays: exact for ints and Fractions
_CEIL = np.frompyfunc(math.ceil, 1, 1)
_GCD = np.frompyfunc(math.gcd, 2, 1)


def _exact_floor(x):
    return _FLOOR(x) if isinstance(x, np.ndarray) else math.floor(x)


def _exact_ceil(x):
    return _CEIL(x) if isinstance(x, np.ndarray) else math.ceil(x)


def _exact_gcd(x, y):
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return _GCD(x, y)
    return math.gcd(x, y)


def _exact_max(x, y):
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return np.maximum(x, y)
    return max(x, y)


def _exact_min(x, y):
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return np.minimum(x, y)
    return min(x, y)


def _float(v):
    return v.astype(np.float64) if isinstance(v, np.ndarray) else float(v)


def _int64(v):
    return np.asarray(np.rint(v), dtype=np.int64)


#: the helpers the generated code calls, per mode
_HELPERS = {
    True: {
        "floor": _exact_floor,
        "ceil": _exact_ceil,
        "gcd": _exact_gcd,
        "sqrt": lambda x: np.sqrt(_float(x)),
        "power": lambda x, y: np.power(_float(x), _float(y)),
        "maximum": _exact_max,
        "minimum": _exact_min,
        "args": lambda vs: tuple(_exact(v) for v in vs),
        "one": Fraction(1),
    },
    False: {
        "floor": np.floor,
        "ceil": np.ceil,
        "gcd": lambda x, y: np.gcd(_int64(x), _int64(y)).astype(np.float64),
        "sqrt": np.sqrt,
        "power": np.power,
        "maximum": np.maximum,
        "minimum": np.minimum,
        "args": lambda vs: tuple(np.asarray(v, dtype=np.float64) for v in vs),
        "one": 1.0,
    },
}


def _exact(v: object) -> object:
    if isinstance(v, np.ndarray):
        return np.array([int(x) for x in v.ravel()], dtype=object).reshape(v.shape)
    return int(v)  # type: ignore[call-overload]


def compile_exprs(
    symbols: Sequence[sympy.Symbol], exprs: Sequence[sympy.Basic], *, exact: bool = False
) -> Callable[..., list]:
    """``f(*values) -> [value of each expression]``, ``values`` one per symbol (numbers, or
    arrays that broadcast together); see the module docstring for ``exact``. Where an
    expression divides by zero (a guard of a quotient, at a size where its divisor is 0)
    its value is NaN (floats: every comparison with it is false)."""
    exprs = [sympy.sympify(e) for e in exprs]
    fast = _function(list(symbols), exprs, exact)
    floats: list[Callable[..., list]] = []

    def run(*values: object) -> list:
        try:
            with np.errstate(all="ignore"):
                return fast(*values)
        except ZeroDivisionError:  # exact ints: evaluate as floats (x/0 -> inf or NaN)
            if not floats:
                floats.append(_function(list(symbols), exprs, False))
            with np.errstate(all="ignore"):
                return floats[0](*values)

    return run


def _function(symbols: list[sympy.Symbol], exprs: list[sympy.Basic], exact: bool):
    gen = _Writer(symbols, exact)
    outs = [gen.name(e) for e in exprs]
    params = ", ".join(f"a{i}" for i in range(len(symbols)))
    body = [f"def _compiled({params}):"]
    if symbols:
        body.append(f"    {params}, = args(({params},))")
    body += [f"    {line}" for line in gen.lines]
    body.append(f"    return [{', '.join(outs)}]")
    namespace = {**_HELPERS[exact], **gen.consts}
    exec(compile("\n".join(body), "<solar.algebra.numeric>", "exec"), namespace)  # noqa: S102
    return namespace["_compiled"]


class _Writer:
    """One line ``tK = ...`` per distinct subexpression; constants and fallbacks by name."""

    def __init__(self, symbols: list[sympy.Symbol], exact: bool) -> None:
        self.symbols, self.exact = symbols, exact
        self.index = {s: f"a{i}" for i, s in enumerate(symbols)}
        self.names: dict[sympy.Basic, str] = {}
        self.lines: list[str] = []
        self.consts: dict[str, object] = {}

    def const(self, v: object) -> str:
        name = f"c{len(self.consts)}"
        self.consts[name] = v
        return name

    def name(self, e: sympy.Basic) -> str:
        if e in self.names:
            return self.names[e]
        if isinstance(e, sympy.Symbol):
            if e not in self.index:
                raise ValueError(f"no value given for the size {e}")
            return self.index[e]
        code = self._code(e)
        if code.isidentifier():
            self.names[e] = code
            return code
        out = f"t{len(self.lines)}"
        self.lines.append(f"{out} = {code}")
        self.names[e] = out
        return out

    def _code(self, e: sympy.Basic) -> str:
        if e.is_Integer:
            return self.const(int(e))  # type: ignore[call-overload]
        if e.is_Rational:
            p, q = int(e.p), int(e.q)  # type: ignore[attr-defined]
            return self.const(Fraction(p, q) if self.exact else p / q)
        if e.is_Float or (e.is_number and e.is_real):
            return self.const(float(e))  # type: ignore[arg-type]
        if e.is_Pow:
            return self._pow(e)
        if e.is_Add or e.is_Mul:
            return (" + " if e.is_Add else " * ").join(self.name(a) for a in e.args)
        fn = _CALLS.get(type(e)) or next((f for t, f in _CALLS.items() if isinstance(e, t)), None)
        fn = fn or _BY_NAME.get(type(e).__name__)
        if fn is not None:
            return fn([self.name(a) for a in e.args])
        return self._fallback(e)

    def _pow(self, e: sympy.Basic) -> str:
        base, k = self.name(e.base), e.exp  # type: ignore[attr-defined]
        if k.is_Integer and int(k) >= 0:
            return f"{base} ** {int(k)}"
        if k.is_Integer:
            return f"one / {base} ** {-int(k)}"
        if k == sympy.S.Half:
            return f"sqrt({base})"
        return f"power({base}, {self.name(k)})"

    def _fallback(self, e: sympy.Basic) -> str:
        """A kind the writer does not know: ``sympy.lambdify`` of it (on floats)."""
        modules = [{"IntGcd": np.gcd, "floor": np.floor, "Mod": np.mod}, "numpy"]
        f = sympy.lambdify(self.symbols, e, modules=modules, docstring_limit=0)
        name = self.const(lambda *a: f(*(_float(x) for x in a)))
        return f"{name}({', '.join(self.index[s] for s in self.symbols)})"


def _fold(fn: str, args: list[str]) -> str:
    out = args[0]
    for a in args[1:]:
        out = f"{fn}({out}, {a})"
    return out


_CALLS: dict[type, Callable[[list[str]], str]] = {
    sympy.floor: lambda a: f"floor({a[0]})",
    sympy.ceiling: lambda a: f"ceil({a[0]})",
    sympy.Mod: lambda a: f"{a[0]} % {a[1]}",
    IntGcd: lambda a: f"gcd({a[0]}, {a[1]})",
    sympy.Max: lambda a: _fold("maximum", a),
    sympy.Min: lambda a: _fold("minimum", a),
    sympy.Abs: lambda a: f"abs({a[0]})",
}

#: PyTorch's integer functions (``torch.utils._sympy.functions``), by name: guards that reach
#: a region untranslated still evaluate (this module imports no framework)
_BY_NAME: dict[str, Callable[[list[str]], str]] = {
    "FloorDiv": lambda a: f"({a[0]} // {a[1]})",
    "CleanDiv": lambda a: f"({a[0]} // {a[1]})",
    "ModularIndexing": lambda a: f"(({a[0]} // {a[1]}) % {a[2]})",
    "PythonMod": lambda a: f"({a[0]} % {a[1]})",
    "CeilDiv": lambda a: f"(-(-{a[0]} // {a[1]}))",
}
