"""Memo caches that stay exact for symbolic sizes.

A :class:`~solar.algebra.size.Size` hashes and compares as its traced value, so a plain
cache keyed on sizes would (a) answer a symbolic call with a numeric result computed for an
equal plain int (the expression lost, and the comparison itself recorded a spurious guard
``size == value``), (b) answer a numeric call with a symbolic result, and (c) on a hit, skip
the guards the computation decided (a formula claimed beyond the sizes it holds for).

Here a key holding a size is compared *exactly* (:func:`exact_key`: the value with its
expression, never by deciding ``==``) in a table of its own, and each entry keeps the guards
its computation decided, which a hit records again (:func:`captured`, :func:`replay`). Keys
without a size, and every call made while no recording is active (a numeric analysis), take
the plain cache.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import sympy

from solar.algebra.size import _RECORDING, Real, Recording, Size

Guards = tuple[tuple[sympy.Basic, str], ...]


class _Exact:
    """A size or time inside a key: equal only to the same kind, value and expression."""

    __slots__ = ("expr", "kind", "value")

    def __init__(self, x: Size | Real) -> None:
        self.kind = type(x).__name__
        self.value = x.hint
        self.expr = x.expr

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is _Exact
            and self.kind == other.kind
            and self.value == other.value
            and self.expr == other.expr
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.value, self.expr))


_PLAIN = (int, float, str, bool, bytes, type(None))


def exact_key(x: object) -> object | None:
    """``x`` as a hashable key in which every size and time is compared by value and
    expression (no guard is recorded); None when ``x`` holds none (its plain key is exact)."""
    found = False

    def key(v: object) -> object:
        nonlocal found
        t = type(v)
        if t is Size or t is Real:
            found = True
            return _Exact(v)  # type: ignore[arg-type]
        if t in _PLAIN or isinstance(v, sympy.Basic):
            return v
        if t is tuple or t is list:
            return (t.__name__, *map(key, v))  # type: ignore[call-overload]
        if t is dict:
            return ("dict", *((key(a), key(b)) for a, b in v.items()))  # type: ignore[attr-defined]
        if t is set or t is frozenset:
            return ("set", frozenset(map(key, v)))  # type: ignore[call-overload]
        if isinstance(v, np.ndarray):
            return ("ndarray", v.dtype.str, v.shape, v.tobytes())
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return (t, *(key(getattr(v, f.name)) for f in dataclasses.fields(v)))
        return v

    out = key(x)
    return out if found else None


def recording_active() -> bool:
    """Whether guards are being recorded (a symbolic trace or analysis is running)."""
    return _RECORDING.get() is not None


@contextlib.contextmanager
def captured() -> Iterator[Recording]:
    """The guards decided inside the block, on a recording of their own (yielded) that is
    also recorded on the current one when the block ends (no recording is started when none
    is active: a numeric analysis stays as it is)."""
    outer = _RECORDING.get()
    if outer is None:
        yield Recording()
        return
    inner = Recording(where=outer.where)
    token = _RECORDING.set(inner)
    try:
        yield inner
    finally:
        _RECORDING.reset(token)
        replay(inner.guards.items())


def replay(guards: Iterable[tuple[sympy.Basic, str]]) -> None:
    """Record ``guards`` (``(relation, where)``, already decided) on the current recording."""
    rec = _RECORDING.get()
    if rec is not None:
        for relation, where in guards:
            rec.guards.setdefault(relation, where)


def memo(maxsize: int) -> Callable[[Callable], Callable]:
    """``functools.lru_cache(maxsize)`` that is exact for symbolic sizes (module docstring):
    positional hashable arguments; ``cache_clear()`` empties both tables."""

    def decorate(fn: Callable) -> Callable:
        plain = functools.lru_cache(maxsize=maxsize)(fn)
        table: OrderedDict[object, tuple[object, Guards]] = OrderedDict()
        lock = threading.Lock()

        @functools.wraps(fn)
        def wrapper(*args: object) -> object:
            key = exact_key(args) if recording_active() else None
            if key is None:
                return plain(*args)
            with lock:
                hit = table.get(key)
                if hit is not None:
                    table.move_to_end(key)
            if hit is None:
                with captured() as rec:
                    out = fn(*args)
                hit = (out, tuple(rec.guards.items()))
                with lock:
                    table[key] = hit
                    if len(table) > maxsize:
                        table.popitem(last=False)
            else:
                replay(hit[1])
            return hit[0]

        def cache_clear() -> None:
            plain.cache_clear()
            with lock:
                table.clear()

        wrapper.cache_clear = cache_clear  # type: ignore[attr-defined]
        wrapper.cache_info = plain.cache_info  # type: ignore[attr-defined]
        return wrapper

    return decorate
