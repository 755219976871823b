"""Affine index expressions over named loop dimensions: ``2*p + r - 3``.

An :class:`Affine` is ``const + sum(coef * dim)`` with integer coefficients. It is the only
index language of the IR: every access and guard is affine, which is what makes footprints
exactly countable and the executor a strided view instead of a Python loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Union

from solar.algebra.size import integer

AffineLike = Union["Affine", int, str]

#: Affines made by :meth:`Affine.of` and :meth:`Affine.build`, by ``(terms, const)``: a program
#: repeats a few hundred index expressions tens of thousands of times (``i0``, ``b``, ``0``),
#: so equal ones are one object. Besides the allocation, that keeps analyses from filling
#: Python's collector with long-lived objects (each full collection walks them all). Emptied
#: when it reaches :data:`_INTERN_MAX` entries.
_INTERNED: dict[tuple, Affine] = {}
_INTERN_MAX = 1 << 16


#: index tuples of Affines (:func:`index_tuple`), the same way
_INDEXES: dict[tuple, tuple] = {}


def _interned(terms: tuple[tuple[str, int], ...], const: int) -> Affine:
    key = (terms, const)
    a = _INTERNED.get(key)
    if a is None:
        if len(_INTERNED) >= _INTERN_MAX:
            _INTERNED.clear()
        a = _INTERNED[key] = Affine(terms, const)
    return a


def _plain(a: Affine) -> bool:
    """Whether ``a``'s coefficients and constant are plain ints: only those are looked up in
    the tables (a symbolic :class:`~solar.algebra.size.Size` decides ``==`` with a guard)."""
    return type(a.const) is int and all(type(k) is int for _, k in a.terms)


def index_tuple(entries: tuple) -> tuple:
    """``entries`` (an access's index), or an equal tuple of Affines made before: accesses
    share their index tuples as they share the Affines (see :data:`_INTERNED`). A tuple with
    another kind of entry (a data-dependent one) or a symbolic size in an entry is returned
    as it is."""
    for e in entries:
        if type(e) is not Affine or not _plain(e):
            return entries
    t = _INDEXES.get(entries)
    if t is None:
        if len(_INDEXES) >= _INTERN_MAX:
            _INDEXES.clear()
        t = _INDEXES[entries] = entries
    return t


@dataclass(frozen=True)
class Affine:
    """``const + Σ coef·dim``; ``terms`` is sorted by dim name and never holds a zero coef."""

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    @staticmethod
    def of(x: AffineLike) -> Affine:
        """Lift an int (constant), a str (a loop dim) or an Affine."""
        if isinstance(x, Affine):
            return x
        if isinstance(x, bool):
            raise TypeError("a bool is not an affine index")
        if isinstance(x, int):
            return _interned((), x) if type(x) is int else Affine((), x)
        if isinstance(x, str):
            return _interned(((x, 1),), 0) if type(x) is str else Affine(((x, 1),), 0)
        raise TypeError(f"cannot build an affine index from {x!r}")

    @staticmethod
    def build(coefs: Mapping[str, int], const: int = 0) -> Affine:
        terms = tuple(sorted((d, integer(c)) for d, c in coefs.items() if c != 0))
        const = integer(const)
        if type(const) is int and all(type(c) is int for _, c in terms):
            return _interned(terms, const)
        return Affine(terms, const)  # symbolic sizes: a record of its own (no == on a Size)

    @property
    def coefs(self) -> dict[str, int]:
        return dict(self.terms)

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(d for d, _ in self.terms)

    def coef(self, dim: str) -> int:
        return self.coefs.get(dim, 0)

    @property
    def is_const(self) -> bool:
        return not self.terms

    @property
    def single_dim(self) -> str | None:
        """The dim if this is exactly ``dim`` (coefficient 1, no offset)."""
        if len(self.terms) == 1 and self.terms[0][1] == 1 and self.const == 0:
            return self.terms[0][0]
        return None

    def __add__(self, other: AffineLike) -> Affine:
        o = Affine.of(other)
        c = self.coefs
        for d, k in o.terms:
            c[d] = c.get(d, 0) + k
        return Affine.build(c, self.const + o.const)

    __radd__ = __add__

    def __neg__(self) -> Affine:
        return Affine.build({d: -k for d, k in self.terms}, -self.const)

    def __sub__(self, other: AffineLike) -> Affine:
        return self + (-Affine.of(other))

    def __rsub__(self, other: AffineLike) -> Affine:
        return Affine.of(other) - self

    def __mul__(self, k: int) -> Affine:
        if not isinstance(k, int) or isinstance(k, bool):
            raise TypeError("affine expressions scale by integers only")
        return Affine.build({d: c * k for d, c in self.terms}, self.const * k)

    __rmul__ = __mul__

    def rename(self, mapping: Mapping[str, str]) -> Affine:
        c: dict[str, int] = {}
        for d, k in self.terms:
            nd = mapping.get(d, d)
            c[nd] = c.get(nd, 0) + k
        return Affine.build(c, self.const)

    def substitute(self, mapping: Mapping[str, AffineLike]) -> Affine:
        """Replace dims by affine expressions (dims not in ``mapping`` are kept)."""
        out = Affine((), self.const)
        for d, k in self.terms:
            out = out + Affine.of(mapping[d]) * k if d in mapping else out + Affine(((d, k),))
        return out

    def bounds(self, extents: Mapping[str, int]) -> tuple[int, int]:
        """Min and max value over the box ``0 <= dim < extent``."""
        lo = hi = self.const
        for d, k in self.terms:
            span = k * (integer(extents[d]) - 1)
            lo += min(0, span)
            hi += max(0, span)
        return lo, hi

    def evaluate(self, env: Mapping[str, object]):
        """Evaluate with dims bound to numbers or broadcastable arrays/tensors."""
        acc: object = self.const
        for d, k in self.terms:
            acc = acc + env[d] * k  # type: ignore[operator]
        return acc

    def __str__(self) -> str:
        parts: list[str] = []
        for d, k in self.terms:
            if k == 1:
                t = d
            elif k == -1:
                t = f"-{d}"
            else:
                t = f"{k}{d}" if k > 0 else f"-{-k}{d}"
            parts.append(t)
        if self.const or not parts:
            parts.append(str(self.const))
        s = parts[0]
        for p in parts[1:]:
            s += f"-{p[1:]}" if p.startswith("-") else f"+{p}"
        return s

    __repr__ = __str__


class DataDependentEntry:
    """Base of the index entries that are not affine: their value is data at each loop
    instance (:class:`solar.ir.scalar.Indirect`, which holds a scalar expression)."""

    __slots__ = ()


def affines(
    xs: Iterable[AffineLike | DataDependentEntry],
) -> tuple[Affine | DataDependentEntry, ...]:
    """Index entries: ints, dim names and Affines become Affines; a data-dependent entry
    (:class:`DataDependentEntry`) is kept as it is."""
    return index_tuple(tuple(x if isinstance(x, DataDependentEntry) else Affine.of(x) for x in xs))
