"""A symbolic graph's sizes located once, to rebuild it at many points without walking it.

:func:`~solar.algebra.walk.map_values` walks every object of a graph to find its sizes; a
symbolic bound rebuilds its graph at every new piece (:func:`~solar.algebra.walk.rehint`) and
at every point it analyses as numbers (:func:`~solar.algebra.walk.evaluate`), and the graph's
shape is the same each time. A :class:`Template` walks it once and keeps, for each object
that holds a size, how to rebuild it; :meth:`Template.build` then makes exactly what
``map_values(obj, fn)`` makes for an ``fn`` that returns a new object per size (the objects
holding no size are the same shared objects, lists, dicts and sets are new ones (an einsum
graph, a frozen dataclass, is rebuilt through its constructor),
an object reached twice is rebuilt once), touching only the objects that hold a size.

The template describes the object as it was when made: the object must not change after
(a symbolic bound's graph does not: its pieces analyse rebuilt copies).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import sympy

from solar.algebra.size import Real, Size

#: exact types holding no size (not Size or Real, which subclass int and float)
_LEAVES = frozenset({str, int, float, bool, bytes, type(None)})
#: a rebuilder: ``(fn, done) -> the object rebuilt`` (``done``: index -> object rebuilt)
Builder = Callable[[Callable[[object], object], dict], object]


class Template:
    """How to rebuild ``obj`` with each size replaced (see the module docstring)."""

    def __init__(self, obj: object) -> None:
        self._obj = obj
        self._keep: list[object] = []  # every object planned, alive while its id is a key
        self._index: dict[int, int | None] = {}  # id -> builder index, None: reused as is
        self._builders: list[Builder] = []
        self._root = self._plan(obj)

    def __reduce__(self) -> tuple:  # builders are closures: a copy plans its object again
        return (Template, (self._obj,))

    def build(self, fn: Callable[[object], object]) -> object:
        """``map_values(obj, fn)`` (``fn`` returning a new object for each size)."""
        if self._root is None:
            return self._obj
        return self._get(self._root, fn, {})

    def _get(self, i: int, fn, done: dict) -> object:
        out = done.get(i, done)
        if out is done:
            out = done[i] = self._builders[i](fn, done)
        return out

    def _add(self, builder: Builder) -> int:
        self._builders.append(builder)
        return len(self._builders) - 1

    def _plan(self, obj: object) -> int | None:
        """The index of ``obj``'s builder, or None when ``obj`` is reused as it is."""
        if type(obj) in _LEAVES:
            return None
        key = id(obj)
        if key in self._index:
            return self._index[key]
        out = self._make(obj)
        self._index[key] = out
        self._keep.append(obj)
        return out

    def _part(self, x: object) -> Callable[[Callable, dict], object]:
        """A getter of ``x`` rebuilt (or ``x`` itself)."""
        i = self._plan(x)
        if i is None:
            return lambda fn, done: x
        get = self._get
        return lambda fn, done: get(i, fn, done)

    def _make(self, obj: object) -> int | None:
        if isinstance(obj, (Size, Real)):
            return self._add(lambda fn, done: fn(obj))
        if obj is None or isinstance(obj, (bool, int, float, str, bytes, sympy.Basic)):
            return None
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            plans = [self._plan(x) for x in obj]
            if all(p is None for p in plans):
                return None
            parts = [self._part(x) for x in obj]
            return self._add(lambda fn, done: tuple(p(fn, done) for p in parts))
        if isinstance(obj, list):
            parts = [self._part(x) for x in obj]
            return self._add(lambda fn, done: [p(fn, done) for p in parts])
        if isinstance(obj, (set, frozenset)):
            parts, kind = [self._part(x) for x in obj], type(obj)
            return self._add(lambda fn, done: kind(p(fn, done) for p in parts))
        if isinstance(obj, dict):
            items = [(self._part(k), self._part(v)) for k, v in obj.items()]
            return self._add(lambda fn, done: {k(fn, done): v(fn, done) for k, v in items})
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return self._dataclass(obj)
        if hasattr(obj, "__dict__") and type(obj).__module__.startswith("solar."):
            return self._solar(obj)
        return None

    def _dataclass(self, obj: object) -> int | None:
        fields = [
            (f.name, f.init, self._plan(getattr(obj, f.name)), getattr(obj, f.name))
            for f in dataclasses.fields(obj)  # type: ignore[arg-type]
        ]
        changed = [(name, self._part(v)) for name, _, p, v in fields if p is not None]
        if not changed:
            return None
        if any(not init for _, init, p, _ in fields if p is not None):

            def build(fn, done) -> object:  # a field out of __init__: copy, then set
                copy = object.__new__(type(obj))
                copy.__dict__.update(obj.__dict__)
                copy.__dict__.update({name: part(fn, done) for name, part in changed})
                return copy

            return self._add(build)
        if len(obj.__dataclass_fields__) != len(fields):  # type: ignore[attr-defined]
            return self._add(  # an InitVar (or a ClassVar): as dataclasses.replace does it
                lambda fn, done: dataclasses.replace(
                    obj, **{name: part(fn, done) for name, part in changed}
                )
            )
        kind = type(obj)  # dataclasses.replace: __init__ with the fields left as they are
        same = {name: v for name, init, p, v in fields if init and p is None}
        return self._add(
            lambda fn, done: kind(**same, **{name: part(fn, done) for name, part in changed})
        )

    def _solar(self, obj: object) -> int | None:
        items = [(k, self._plan(v), v) for k, v in vars(obj).items()]
        if all(p is None for _, p, _ in items):
            return None
        parts = [(k, self._part(v)) for k, _, v in items]

        def build(fn, done) -> object:
            copy = object.__new__(type(obj))
            copy.__dict__.update({k: part(fn, done) for k, part in parts})
            return copy

        return self._add(build)
