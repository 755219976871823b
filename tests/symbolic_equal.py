"""Helpers of the symbolic-bound tests: a Bound from a formula against a numeric Bound (every
count exact, every time to rounding), and a process with no cost facts remembered.

The memo caches of the counting (the structure cache, the footprint caches) key on sizes,
and a :class:`~solar.algebra.size.Size` is equal to (and hashes as) its traced int: a numeric
analysis at a traced size may be answered from a symbolic one's entries, and the other way
round. The tests start every analysis from empty caches, so that each side computes its own.
"""

from __future__ import annotations

import math

from solar.graph.cache import CACHE
from solar.ir.footprint import domain, forms


def fresh_caches() -> None:
    """Forget every cost fact computed so far (see the module docstring)."""
    CACHE.clear()
    domain.domain.cache_clear()
    forms._form_set.cache_clear()


#: a kernel whose SFU work is balanced onto the FMA pipe (solar/backend/units.py) takes equal
#: times on both: which one it is "bound by" is decided by the last bit of two equal floats
BALANCED = {"fma", "sfu"}


def assert_bounds_equal(got, want, rel: float = 1e-9, ignore=frozenset()) -> None:
    """``got.to_dict() == want.to_dict()``, ints exactly, floats to ``rel``; keys in
    ``ignore`` (at any depth) are not compared."""
    _equal(got.to_dict(), want.to_dict(), rel, "bound", frozenset(ignore))


def _equal(a, b, rel: float, where: str, ignore: frozenset = frozenset()) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{where}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            if k not in ignore:
                _equal(a[k], b[k], rel, f"{where}.{k}", ignore)
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), f"{where}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _equal(x, y, rel, f"{where}[{i}]", ignore)
    elif isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=rel, abs_tol=1e-300), f"{where}: {a!r} != {b!r}"
    elif where.endswith(".bound_by") and {a, b} == BALANCED:
        pass
    else:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} != {b!r}"
