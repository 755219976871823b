"""Sizes that remember where they came from: an ``int`` with a sympy expression of the symbols.

A :class:`Size` *is* the integer of the traced point (its ``hint``): every piece of solar that
computes with ints keeps working unchanged and computes the numbers of that point. Arithmetic
between sizes (``+ - * // % -x abs``) also builds the expression, so a loop extent, a stride or
a count computed from symbolic sizes carries its formula. Where the computation *decides*
something from a size (``<``, ``==``, ``if n:``, ``int(n)``), the decision holds at the traced
point and is recorded as a **guard** on the current :class:`Recording` (the way PyTorch's
``ShapeEnv`` records guards on its ``SymInt``\\ s): a formula read off the result is exact
wherever all its guards hold, and nothing is claimed elsewhere. ``int(n)`` (an escape to a
plain integer) records that the size equals its traced value: it *specializes* the formula.

The module is plain Python and sympy: the core (IR, footprints, cost) needs no framework to
carry sizes.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import sympy

from solar.algebra.prove import always

_RECORDING: contextvars.ContextVar[Recording | None] = contextvars.ContextVar(
    "solar_symbolic_recording", default=None
)


def symbol(name: str) -> sympy.Symbol:
    """The sympy symbol of a size named ``name`` (a positive integer)."""
    return sympy.Symbol(name, integer=True, positive=True)


@dataclass
class Recording:
    """The guards decided while sizes were computed with (see the module docstring)."""

    guards: dict[sympy.Basic, str] = field(default_factory=dict)  # relation -> where
    where: str = ""  # what is being computed now (a kernel), for the messages

    def add(self, relation: sympy.Basic) -> None:
        if relation in self.guards:
            return
        relation0, relation = relation, decided(relation)
        if relation == sympy.true:
            return
        if relation == sympy.false:  # cannot happen for a consistent hint
            raise AssertionError(f"a symbolic size decided a relation that is false: {relation0}")
        self.guards.setdefault(relation, self.where)

    @contextlib.contextmanager
    def at(self, where: str) -> Iterator[None]:
        before, self.where = self.where, where
        try:
            yield
        finally:
            self.where = before


_SIGN = {"<": lambda d: d < 0, "<=": lambda d: d <= 0, ">": lambda d: d > 0, ">=": lambda d: d >= 0}


@functools.lru_cache(maxsize=1 << 15)  # the pieces of one analysis decide the same relations
def decided(relation: sympy.Basic) -> sympy.Basic:
    """``relation`` as ``lhs - rhs <op> 0`` with the difference expanded, or ``true`` /
    ``false`` when that decides it for every positive integer size: a constant difference,
    a polynomial whose terms all have one sign (sizes are >= 1), or a quasi-polynomial whose
    sign :func:`~solar.algebra.prove.always` proves by residue classes."""
    if not isinstance(relation, sympy.core.relational.Relational):
        return relation
    if relation.has(sympy.Float):  # times: expanding would cancel in floating point
        return relation
    d = sympy.expand(relation.lhs - relation.rhs)
    op = relation.rel_op
    if d.is_number:
        if op == "==":
            return sympy.true if d == 0 else sympy.false
        if op == "!=":
            return sympy.true if d != 0 else sympy.false
        return sympy.true if _SIGN[op](d) else sympy.false
    terms = sympy.Add.make_args(d)
    monomial = all(t.is_polynomial() and t.free_symbols for t in terms)
    signs = {bool(t.as_coeff_Mul()[0] > 0) for t in terms} if monomial else set()
    if len(signs) == 1:  # every term one sign, no constant: d != 0, and its sign is known
        positive = signs.pop()
        if op in ("==", "!="):
            return sympy.false if op == "==" else sympy.true
        return sympy.true if _SIGN[op](1 if positive else -1) else sympy.false
    free = d.free_symbols
    if op in ("==", "!=") and len(free) == 1 and d.is_polynomial():
        (x,) = free
        roots = sympy.roots(sympy.Poly(d, x))
        found = sum(roots.values()) == sympy.Poly(d, x).degree()
        if found and not any(r.is_integer and r >= 1 for r in roots):  # no size zeroes it
            return sympy.false if op == "==" else sympy.true
    proved = always(d, op)
    if proved is not None:
        return sympy.true if proved else sympy.false
    return relation.func(d, 0)


@contextlib.contextmanager
def recording(rec: Recording | None = None) -> Iterator[Recording]:
    """Record the guards decided inside the block on ``rec`` (a fresh one by default)."""
    rec = Recording() if rec is None else rec
    token = _RECORDING.set(rec)
    try:
        yield rec
    finally:
        _RECORDING.reset(token)


_DEBUG = bool(os.environ.get("SOLAR_SYMBOLIC_DEBUG"))


def _record(relation: sympy.Basic) -> None:
    rec = _RECORDING.get()
    if rec is None:
        return
    if _DEBUG:  # name the line that decided (to find what specializes a formula)
        f = sys._getframe(2)
        while f.f_back is not None and f.f_code.co_filename == __file__:
            f = f.f_back
        with rec.at(f"{rec.where} ({f.f_code.co_filename}:{f.f_lineno})"):
            rec.add(relation)
    else:
        rec.add(relation)


def expr_of(x: object) -> sympy.Expr:
    """The expression of an int or a :class:`Size`."""
    if isinstance(x, Size):
        return x.expr
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"not an integer size: {x!r}")
    return sympy.Integer(x)


def make(value: int, expr: sympy.Expr) -> int:
    """``value`` carrying ``expr``, or the plain int when the expression is a number."""
    if expr.is_Integer:
        return int(value)
    return Size(value, expr)


#: converters of a framework's own symbolic ints (PyTorch's ``SymInt`` under a symbolic trace)
#: to a :class:`Size` or an int, registered by the frontend; ``None`` for anything else
_FOREIGN: list[Callable[[object], object | None]] = []


def register_foreign(convert: Callable[[object], object | None]) -> None:
    """Let sizes compute with a framework's symbolic ints (``n != t.size(-1)``): ``convert``
    turns one into a :class:`Size` (or an int), and returns ``None`` for anything else."""
    if convert not in _FOREIGN:
        _FOREIGN.append(convert)


def _foreign(x: object) -> object | None:
    for convert in _FOREIGN:
        y = convert(x)
        if y is not None:
            return y
    return None


#: expressions built per operation, shared by every analysis of one graph: the pieces of a
#: symbolic bound repeat the same arithmetic on the same expressions (only the hints differ),
#: and sympy's own cache (1,000 entries) is too small to keep one analysis' worth
_CACHE = 1 << 16


@functools.lru_cache(maxsize=_CACHE)
def _combined(fn: Callable[[sympy.Expr, sympy.Expr], sympy.Expr], a: sympy.Expr, b: sympy.Expr):
    """``fn(a, b)``, cached (a pure function of two expressions)."""
    return fn(a, b)


@functools.lru_cache(maxsize=_CACHE)
def _float_expr(x: float) -> sympy.Expr:
    return sympy.Float(x)


def _int_operand(x: object) -> tuple[object, sympy.Expr | None]:
    """``(value for int's own method, expression)`` of an operand of a :class:`Size`; the
    expression is ``None`` where the operand is no integer (int's method decides then)."""
    if isinstance(x, Size):
        return x, x.expr
    if isinstance(x, int) and not isinstance(x, bool):
        return x, sympy.Integer(x)
    y = _foreign(x)
    if y is not None:
        return _int_operand(y)
    return x, None


def _real_operand(x: object) -> tuple[object, sympy.Expr | None]:
    """``(value for float's own method, expression)`` of an operand of a :class:`Real`."""
    if isinstance(x, Size):
        return int.__int__(x), x.expr
    if isinstance(x, Real):
        return x, x.expr
    if isinstance(x, bool):
        return x, None
    if isinstance(x, int):
        return x, sympy.Integer(x)
    if isinstance(x, float):
        return x, _float_expr(x)
    y = _foreign(x)
    if y is not None:
        return _real_operand(y)
    return x, None


def _binary(op: str, fn):
    def method(self: Size, other: object) -> Any:
        if isinstance(other, float):  # a time or a rate: the result is a Real
            return getattr(Real(float(int.__int__(self)), self.expr), op)(other)
        plain, o = _int_operand(other)
        value = getattr(int, op)(self, plain)
        if o is None or value is NotImplemented or not isinstance(value, int):
            return value
        return make(value, _combined(fn, self.expr, o))

    method.__name__ = op
    return method


def _real_binary(op: str, fn):
    def method(self: Real, other: object) -> Any:
        plain, o = _real_operand(other)
        value = getattr(float, op)(self, plain)
        if o is None or value is NotImplemented:
            return value
        return real(value, _combined(fn, self.expr, o))

    method.__name__ = op
    return method


#: each relation's negation (``not a < b`` is ``a >= b``)
_NEGATED = {
    sympy.Lt: sympy.Ge,
    sympy.Ge: sympy.Lt,
    sympy.Le: sympy.Gt,
    sympy.Gt: sympy.Le,
    sympy.Eq: sympy.Ne,
    sympy.Ne: sympy.Eq,
}


@functools.lru_cache(maxsize=_CACHE)
def _time_relation(rel, a: sympy.Expr, b: sympy.Expr) -> sympy.Basic | None:
    """``rel(a, b)`` unevaluated, or None where ``a - b`` is a number (cached as
    :func:`_combined`)."""
    if (a - b).is_number:
        return None
    return rel(a, b, evaluate=False)


@functools.lru_cache(maxsize=_CACHE)
def _size_relation(rel, a: sympy.Expr, b: sympy.Expr, value: bool) -> sympy.Basic:
    """``rel(a, b)`` where it holds (``value``), else its negation (cached as
    :func:`_combined`)."""
    relation = rel(a, b)
    return relation if value else sympy.Not(relation)


@functools.lru_cache(maxsize=_CACHE)
def _truth_relation(e: sympy.Expr, value: bool) -> sympy.Basic:
    """``e != 0`` where ``e`` is true (``value``), else ``e == 0`` (cached as
    :func:`_combined`)."""
    return sympy.Ne(e, 0) if value else sympy.Eq(e, 0)


def _decision(op: str, rel):
    def method(self: _Decisions, other: object) -> Any:
        return self._decide(other, op, rel)

    method.__name__ = op
    return method


class _Decisions:
    """What :class:`Size` and :class:`Real` share: every decision (a comparison, truth, an
    escape to a plain number) is true at the traced point and recorded as a guard."""

    __slots__ = ()
    expr: sympy.Expr
    _plain: type  # int or float: the value's own type, whose methods compute the value
    _operand: Callable[[object], tuple[object, sympy.Expr | None]]

    _hint: Callable[[Any], Any]  # int.__int__ or float.__float__: the value, no guard

    @property
    def hint(self) -> Any:
        return self._hint()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._plain.__repr__(self)}, {self.expr})"

    def _decide(self, other: object, op: str, rel) -> Any:
        plain, o = type(self)._operand(other)
        value = getattr(self._plain, op)(self, plain)
        if o is None or value is NotImplemented:
            return value
        if _RECORDING.get() is None:  # a numeric analysis: nothing to record
            return value
        if self._plain is float:  # times: sympy's own evaluation of the relation is slow
            relation = _time_relation(rel if value else _NEGATED[rel], self.expr, o)
            if relation is not None:  # None: decided at every size (hints differ by rounding)
                _record(relation)
            return value
        _record(_size_relation(rel, self.expr, o, bool(value)))
        return value

    __lt__ = _decision("__lt__", sympy.Lt)
    __le__ = _decision("__le__", sympy.Le)
    __gt__ = _decision("__gt__", sympy.Gt)
    __ge__ = _decision("__ge__", sympy.Ge)
    __eq__ = _decision("__eq__", sympy.Eq)
    __ne__ = _decision("__ne__", sympy.Ne)

    def __hash__(self) -> int:
        return self._plain.__hash__(self)

    def __bool__(self) -> bool:
        value = self._plain.__bool__(self)
        if _RECORDING.get() is not None:
            _record(_truth_relation(self.expr, value))
        return value

    def _specialize(self) -> Any:
        """The plain value: the formula is specialized at the traced value (a guard says so,
        naming the line outside this module that asked)."""
        rec = _RECORDING.get()
        if rec is not None:
            f = sys._getframe(1)
            while f.f_back is not None and f.f_code.co_filename == __file__:
                f = f.f_back
            line = f"{f.f_code.co_filename}:{f.f_lineno}"
            value = sympy.Integer(self.hint) if self._plain is int else sympy.Float(self.hint)
            with rec.at(f"{rec.where} ({line})" if rec.where else line):
                rec.add(sympy.Eq(self.expr, value))
        return self.hint

    def __reduce__(self) -> tuple:
        return (type(self), (self.hint, self.expr))


def real(value: float, expr: sympy.Expr) -> float:
    """``value`` carrying ``expr``, or the plain float when the expression is a number."""
    if expr.is_number:
        return float(value)
    return Real(value, expr)


def _floordiv(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    if not b.is_number:  # a ratio of sizes: common factors cancel (64*(n+1) // (32*(n+1)) = 2)
        return sympy.floor(sympy.cancel(a / b))
    return sympy.floor(a / b)


class Size(_Decisions, int):
    """An int (the value at the traced point) carrying its expression in the symbols."""

    _plain, _hint = int, int.__int__
    _operand = staticmethod(_int_operand)

    def __new__(cls, value: int, expr: sympy.Expr) -> Size:
        self = super().__new__(cls, value)
        self.expr = expr
        return self

    __add__ = _binary("__add__", lambda a, b: a + b)
    __radd__ = _binary("__radd__", lambda a, b: b + a)
    __sub__ = _binary("__sub__", lambda a, b: a - b)
    __rsub__ = _binary("__rsub__", lambda a, b: b - a)
    __mul__ = _binary("__mul__", lambda a, b: a * b)
    __rmul__ = _binary("__rmul__", lambda a, b: b * a)
    __floordiv__ = _binary("__floordiv__", _floordiv)
    __rfloordiv__ = _binary("__rfloordiv__", lambda a, b: _floordiv(b, a))
    __mod__ = _binary("__mod__", lambda a, b: sympy.Mod(a, b))
    __rmod__ = _binary("__rmod__", lambda a, b: sympy.Mod(b, a))

    def __truediv__(self, other: object) -> Any:
        return Real(float(int.__int__(self)), self.expr) / other

    def __rtruediv__(self, other: object) -> Any:
        return other / Real(float(int.__int__(self)), self.expr)

    def __pow__(self, other: object, mod: object = None) -> Any:
        value = int.__pow__(self, other, mod)  # type: ignore[call-overload]
        if mod is not None or not isinstance(other, int) or isinstance(other, Size) or other < 0:
            return value
        return make(value, self.expr**other)

    def __neg__(self) -> int:
        return make(-self.hint, -self.expr)

    def __pos__(self) -> int:
        return self

    def __abs__(self) -> int:
        return self if self >= 0 else -self

    def __divmod__(self, other: object) -> Any:
        return self // other, self % other

    def __rdivmod__(self, other: object) -> Any:
        return other // self, other % self

    def __lshift__(self, other: object) -> Any:
        if isinstance(other, Size) or not isinstance(other, int) or other < 0:
            return int(self) << other  # type: ignore[operator]
        return self * (1 << other)

    def __rshift__(self, other: object) -> Any:
        if isinstance(other, Size) or not isinstance(other, int) or other < 0:
            return int(self) >> other  # type: ignore[operator]
        return self // (1 << other)

    # an integer is its own floor, ceiling, truncation and rounding
    def __floor__(self) -> int:
        return self

    __ceil__ = __trunc__ = __floor__

    def __round__(self, ndigits: object = None) -> int:
        return self if ndigits is None or ndigits >= 0 else int(self).__round__(ndigits)  # type: ignore[operator, arg-type]

    # bits of the value: no expression; the size is specialized (int() records the guard)
    def bit_length(self) -> int:
        return int(self).bit_length()

    def __and__(self, other: object) -> Any:
        return int(self) & other  # type: ignore[operator]

    def __or__(self, other: object) -> Any:
        return int(self) | other  # type: ignore[operator]

    def __xor__(self, other: object) -> Any:
        return int(self) ^ other  # type: ignore[operator]

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def __rlshift__(self, other: object) -> Any:
        return other << int(self)  # type: ignore[operator]

    def __rrshift__(self, other: object) -> Any:
        return other >> int(self)  # type: ignore[operator]

    def __invert__(self) -> int:
        return -self - 1

    def __int__(self) -> int:
        """A plain int: specialized at the traced value (see :meth:`_specialize`)."""
        return self._specialize()

    __index__ = __int__

    def __float__(self) -> float:
        """A plain float (``math.sqrt(n)``, ``float(n)``): specialized, as :meth:`__int__`;
        :func:`to_real` and :func:`sqrt` keep the expression."""
        return float(self._specialize())


def integer(x: object) -> int:
    """``x`` as an int, keeping a :class:`Size` (``int(x)`` would specialize it)."""
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    return int(x)  # type: ignore[call-overload]


class IntGcd(sympy.Function):
    """``gcd(a, b)`` of two integers, left unevaluated until both are numbers (sympy's
    ``gcd`` of polynomials is their content, not the gcd of their values)."""

    @classmethod
    def eval(cls, a: sympy.Expr, b: sympy.Expr) -> sympy.Expr | None:
        if a.is_Integer and b.is_Integer:
            return sympy.Integer(math.gcd(int(a), int(b)))
        return None


def _divides(c: int, e: sympy.Expr) -> bool:
    """Whether the integer ``c`` divides ``e`` at every point (each integer coefficient of a
    polynomial ``e`` is a multiple of ``c``)."""
    try:
        poly = sympy.Poly(e, *sorted(e.free_symbols, key=str))
    except sympy.PolynomialError:
        return False
    return all(k.is_Integer and int(k) % c == 0 for k in poly.coeffs())


def _multiple(e: sympy.Expr, d: sympy.Expr) -> bool:
    """Whether ``e`` is a multiple of the non-constant ``d`` at every point: ``e / d`` is a
    polynomial with integer coefficients in integer-valued terms (``2*(n+1)`` of ``n+1``)."""
    if e == 0:
        return True
    q = sympy.cancel(e / d)
    try:
        poly = sympy.Poly(q)
    except (sympy.PolynomialError, sympy.GeneratorsNeeded):
        return q.is_Integer
    return all(g.is_integer for g in poly.gens) and all(k.is_Integer for k in poly.coeffs())


def gcd(a: int, b: int) -> int:
    """``math.gcd`` of two ints that may be :class:`Size` s: the expression where one always
    divides the other (``gcd(2*n, n) = n``, ``gcd(0, n) = n``), else the traced value, exact
    wherever the gcd of the expressions is the same (a guard says so unless it always is: a
    constant that divides the other's every coefficient)."""
    g = math.gcd(int.__int__(a), int.__int__(b))
    if not isinstance(a, Size) and not isinstance(b, Size):
        return g
    ea, eb = expr_of(a), expr_of(b)
    for x, ex, ey in ((a, ea, eb), (b, eb, ea)):
        if not ex.is_number and _multiple(ey, ex):
            return abs(x)
    for c, e in ((ea, eb), (eb, ea)):
        if c.is_Integer and g == abs(int(c)) and (g == 0 or _divides(g, e)):
            return g
    _record(sympy.Eq(IntGcd(ea, eb), g))
    return g


def minimum(a: int, b: int) -> int:
    """``min(a, b)`` of two ints that may be :class:`Size` s, keeping ``Min`` of their
    expressions (no guard: a window clipped at a border stays exact at every size, where
    ``min`` would decide which side is smaller at the traced size only)."""
    if not isinstance(a, Size) and not isinstance(b, Size):
        return min(a, b)
    ea, eb = expr_of(a), expr_of(b)
    if always(ea - eb, "<="):  # one side is the smaller at every size
        return a
    if always(ea - eb, ">="):
        return b
    return make(min(int.__int__(a), int.__int__(b)), sympy.Min(ea, eb))


def maximum(a: int, b: int) -> int:
    """``max(a, b)`` keeping ``Max`` of the expressions (see :func:`minimum`)."""
    if not isinstance(a, Size) and not isinstance(b, Size):
        return max(a, b)
    ea, eb = expr_of(a), expr_of(b)
    if always(ea - eb, ">="):
        return a
    if always(ea - eb, "<="):
        return b
    return make(max(int.__int__(a), int.__int__(b)), sympy.Max(ea, eb))


class Real(_Decisions, float):
    """A float (the value at the traced point) carrying its expression: a time, a rate."""

    _plain, _hint = float, float.__float__
    _operand = staticmethod(_real_operand)

    def __new__(cls, value: float, expr: sympy.Expr) -> Real:
        self = super().__new__(cls, value)
        self.expr = expr
        return self

    __add__ = _real_binary("__add__", lambda a, b: a + b)
    __radd__ = _real_binary("__radd__", lambda a, b: b + a)
    __sub__ = _real_binary("__sub__", lambda a, b: a - b)
    __rsub__ = _real_binary("__rsub__", lambda a, b: b - a)
    __mul__ = _real_binary("__mul__", lambda a, b: a * b)
    __rmul__ = _real_binary("__rmul__", lambda a, b: b * a)
    __truediv__ = _real_binary("__truediv__", lambda a, b: a / b)
    __rtruediv__ = _real_binary("__rtruediv__", lambda a, b: b / a)

    def __neg__(self) -> float:
        return real(-self.hint, -self.expr)

    def __pos__(self) -> float:
        return self

    def __abs__(self) -> float:
        return self if self >= 0 else -self

    def __float__(self) -> float:
        """A plain float: the formula is specialized here (see :meth:`_specialize`)."""
        return self._specialize()


def to_real(x: object) -> float:
    """``float(x)`` that keeps the expression of a :class:`Size` or :class:`Real`."""
    if isinstance(x, Real):
        return x
    if isinstance(x, Size):
        return Real(float(x.hint), x.expr)
    return float(x)  # type: ignore[arg-type]


def sqrt(x: object) -> float:
    """``math.sqrt`` that keeps the expression of a :class:`Size` or :class:`Real`."""
    if isinstance(x, (Size, Real)):
        return real(math.sqrt(x.hint), sympy.sqrt(x.expr))
    return math.sqrt(x)  # type: ignore[arg-type]
