"""Walk a result or a graph and replace every :class:`Size` / :class:`Real` in it.

Two uses: *evaluate* a symbolic result at a point (each size and time becomes the number its
expression gives there: the numeric result at that point, when the point lies in the
result's region) and *re-hint* a symbolic graph (each size keeps its expression and takes the
value at another point, so the analysis can run there and record that point's piece).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Mapping

import sympy

from solar.algebra.numeric import compile_exprs
from solar.algebra.size import Real, Size, make, real
from solar.algebra.template import Template

Point = Mapping[sympy.Symbol, int]
_LEAVES = frozenset({str, int, float, bool, bytes, type(None)})  # exact types: not Size, Real


def map_values(obj: object, fn: Callable[[object], object], memo: dict | None = None) -> object:
    """``obj`` with every Size and Real ``v`` replaced by ``fn(v)``: through dataclasses,
    tuples, lists, dicts and sets (new objects; ``obj`` is left as it is).
    Objects without a size inside are returned as they are (shared, not copied)."""
    if type(obj) in _LEAVES:  # the most common objects: nothing inside, nothing to remember
        return obj
    memo = {} if memo is None else memo
    key = id(obj)
    if key in memo:
        return memo[key][1]
    out = _map(obj, fn, memo)
    memo[key] = (obj, out)  # obj kept alive: an id names one object only while it lives
    return out


def _map(obj: object, fn, memo: dict) -> object:
    if isinstance(obj, (Size, Real)):
        return fn(obj)
    if obj is None or isinstance(obj, (bool, int, float, str, bytes, sympy.Basic)):
        return obj
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        items = tuple(map_values(x, fn, memo) for x in obj)
        return obj if all(a is b for a, b in zip(items, obj, strict=True)) else items
    if isinstance(obj, list):
        return [map_values(x, fn, memo) for x in obj]
    if isinstance(obj, (set, frozenset)):
        return type(obj)(map_values(x, fn, memo) for x in obj)
    if isinstance(obj, dict):
        return {map_values(k, fn, memo): map_values(v, fn, memo) for k, v in obj.items()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for f in dataclasses.fields(obj):
            old = getattr(obj, f.name)
            new = map_values(old, fn, memo)
            if new is not old:
                changes[f.name] = new
        if not changes:
            return obj
        if any(not f.init for f in dataclasses.fields(obj) if f.name in changes):
            copy = object.__new__(type(obj))
            copy.__dict__.update(obj.__dict__)
            copy.__dict__.update(changes)
            return copy
        return dataclasses.replace(obj, **changes)
    if hasattr(obj, "__dict__") and type(obj).__module__.startswith("solar."):
        changes = {k: map_values(v, fn, memo) for k, v in vars(obj).items()}
        if all(changes[k] is v for k, v in vars(obj).items()):
            return obj
        copy = object.__new__(type(obj))
        copy.__dict__.update(changes)
        return copy
    return obj


def _number(e: sympy.Expr, point: Point) -> sympy.Expr:
    v = sympy.sympify(e.xreplace({k: sympy.Integer(x) for k, x in point.items()}))
    if not v.is_number:
        missing = sorted(str(s) for s in v.free_symbols)
        raise ValueError(f"no value given for the size(s) {', '.join(missing)}")
    return v


@functools.lru_cache(maxsize=1 << 14)
def _compiled(symbols: tuple[sympy.Symbol, ...], e: sympy.Expr) -> Callable[..., list]:
    return compile_exprs(symbols, [e], exact=True)


def _int_at(e: sympy.Expr, point: Point) -> int:
    """A size's value at ``point``: its expression compiled once and evaluated in exact
    integers (sympy's own substitution where that gives no int: :func:`_number`)."""
    with contextlib.suppress(Exception):
        (x,) = _compiled(tuple(point), e)(*(int(v) for v in point.values()))
        if type(x) is int:
            return x
    return int(_number(e, point))


def _values(point: Point) -> Callable[[object], object]:
    """The value at ``point`` of a Size (an int) or a Real (a float), each distinct
    expression evaluated once (a graph holds many sizes of few distinct expressions)."""
    done: dict[tuple[sympy.Expr, bool], object] = {}

    def value(v: object) -> object:
        key = (v.expr, isinstance(v, Size))  # type: ignore[attr-defined]
        x = done.get(key, done)
        if x is done:
            x = done[key] = _int_at(key[0], point) if key[1] else float(_number(key[0], point))
        return x

    return value


def evaluate(obj: object, point: Point, template: Template | None = None) -> object:
    """``obj`` with every size and time evaluated at ``point`` (plain ints and floats);
    ``template``: ``obj``'s :class:`Template`, to rebuild it without walking it."""
    fn = _values(point)
    return template.build(fn) if template is not None else map_values(obj, fn)


def rehint(obj: object, point: Point, template: Template | None = None) -> object:
    """``obj`` with every size and time taking its value at ``point`` (expressions kept);
    ``template`` as in :func:`evaluate`."""
    value = _values(point)

    def fn(v: object) -> object:
        e = v.expr  # type: ignore[attr-defined]
        return make(value(v), e) if isinstance(v, Size) else real(value(v), e)  # type: ignore[arg-type]

    return template.build(fn) if template is not None else map_values(obj, fn)
