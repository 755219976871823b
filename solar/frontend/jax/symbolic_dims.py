"""Symbolic sizes of a JAX trace: the dims a user names become JAX's own symbolic dimensions
(``jax.export`` shape polymorphism) while tracing, and :class:`~solar.algebra.size.Size` s
while lowering.

The traced structs carry a ``_DimExpr`` (``jax.export.symbolic_shape``) on each named dim and
their concrete size everywhere else, so the jaxpr's shapes and shape parameters (``new_sizes``,
``slice_sizes``, ``dim_as_value``'s ``dim``) are dimension polynomials in exactly those sizes.
The lowering converts each one it reads into a ``Size``: the user's concrete size (the hint)
with the polynomial as a sympy expression (JAX's ``floordiv``/``mod``/``max``/``min`` become
``floor``/``Mod``/``Max``/``Min``). JAX decides a comparison of symbolic dims only when it holds
for every size >= 1 that meets the scope's constraints (otherwise tracing fails), so its
decisions need no guard; the constraints themselves are the trace's guards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence

import numpy as np
import sympy

from solar.algebra.size import Recording, make, symbol
from solar.frontend.shapes import ActiveShapes

#: where a size is marked: a positional input's index (an array argument) or a leaf's label
#: (``"x"``, ``"params/fc1/weight"``), and one of its dims
Place = tuple[object, int]


class SymbolicDimError(ValueError):
    """A marked size that cannot be traced as a symbol (one line: the size, the way out)."""


class SymbolicDims:
    """JAX symbolic dimensions for the sizes ``places`` names: ``{(input, dim): name}``.

    ``constraints`` are JAX constraints on them (``"seq >= 16"``, see ``jax.export``'s
    symbolic scope). The sizes' values (hints) are read off the concrete inputs by
    :meth:`shape` as the trace builds its structs.
    """

    def __init__(self, places: Mapping[Place, str], constraints: Sequence[str] = ()) -> None:
        from jax import export

        self.places = dict(places)
        names = list(dict.fromkeys(self.places.values()))
        self.values: dict[str, int] = {}
        self.constraints = list(constraints)
        self.scope = export.SymbolicScope(self.constraints)
        dims = export.symbolic_shape(", ".join(names), scope=self.scope) if names else ()
        self.dims = dict(zip(names, dims, strict=True))
        self._seen: dict[str, str] = {}  # name -> where its value was read
        self._used: set[Place] = set()
        self._cache: dict[object, int] = {}

    # -- tracing -------------------------------------------------------------------------

    def shape(self, keys: Sequence[object], shape: Sequence[int], what: str) -> tuple:
        """``shape`` of the input known by ``keys`` (its index, its label) with the named
        dims as JAX symbolic dims; each name's value is read (and checked) here."""
        out: list[object] = [int(n) for n in shape]
        for d in range(len(out)):
            name = next((self.places[(k, d)] for k in keys if (k, d) in self.places), None)
            if name is None:
                continue
            self._used.update((k, d) for k in keys)
            value, where = out[d], f"{what} dim {d}"
            if name in self.values and self.values[name] != value:
                raise SymbolicDimError(
                    f"symbolic size {name!r} is {self.values[name]} at {self._seen[name]} and "
                    f"{value} at {where}; mark one size per name"
                )
            if value < 1:
                raise SymbolicDimError(f"symbolic size {name!r} is {value} at {where}; sizes >= 1")
            self.values[name], self._seen[name] = int(value), where
            out[d] = self.dims[name]
        return tuple(out)

    def check_used(self, known: Sequence[object]) -> None:
        """Every place must name a dim of an input (``known``: what the inputs are called)."""
        missing = [p for p in self.places if p not in self._used]
        if missing:
            (k, d), *_ = missing
            raise SymbolicDimError(
                f"symbolic size {self.places[(k, d)]!r}: the program has no dim {d} of input "
                f"{k!r}; name an input by its position or one of: {', '.join(map(str, known))}"
            )

    # -- lowering ------------------------------------------------------------------------

    def size(self, x: object) -> object:
        """An int of the jaxpr: a ``_DimExpr`` becomes a :class:`Size`, others pass."""
        if isinstance(x, int):
            return x
        hit = self._cache.get(x)
        if hit is not None:
            return hit
        if not _is_dim(x):
            return x
        expr = to_sympy(x)
        hint = expr.xreplace({symbol(n): sympy.Integer(v) for n, v in self.values.items()})
        if not hint.is_Integer:
            raise SymbolicDimError(f"the dimension {x} has no integer value at the traced sizes")
        out = make(int(hint), expr)
        self._cache[x] = out
        return out

    def record_guards(self, rec: Recording) -> None:
        """The scope's constraints (JAX's assumptions about the sizes) onto ``rec``."""
        with rec.at("a JAX constraint on the symbolic sizes"):
            for c in self.scope._explicit_constraints:
                lhs, rhs = to_sympy(c.e1), to_sympy(c.e2)
                rec.add(sympy.Eq(lhs, rhs) if c.cmp.name == "EQ" else sympy.Ge(lhs, rhs))

    def active(self) -> contextlib.AbstractContextManager[SymbolicDims]:
        """The block in which lowering reads this trace's dimension expressions as sizes."""
        return _DIMS.use(self)


def _is_dim(x: object) -> bool:
    return type(x).__name__ == "_DimExpr"


def to_sympy(e: object) -> sympy.Expr:
    """A JAX dimension expression (or int) in sympy, its variables as size symbols."""
    if isinstance(e, int):
        return sympy.Integer(e)
    total = sympy.Integer(0)
    for term, coeff in e._sorted_terms:  # type: ignore[attr-defined]
        product = sympy.Integer(coeff)
        for factor, power in term._factors:
            product *= _factor(factor) ** power
        total += product
    return total


def _factor(f: object) -> sympy.Expr:
    if f.var is not None:  # type: ignore[attr-defined]
        return symbol(f.var)  # type: ignore[attr-defined]
    a, b = (to_sympy(o) for o in f.operands)  # type: ignore[attr-defined]
    op = f.operation  # type: ignore[attr-defined]
    if op == "floordiv":
        return sympy.floor(a / b)
    if op == "mod":
        return sympy.Mod(a, b)
    if op == "max":
        return sympy.Max(a, b)
    if op == "min":
        return sympy.Min(a, b)
    raise SymbolicDimError(f"JAX dimension operation {op!r} has no sympy translation")


# -- what the lowering calls ---------------------------------------------------------------


_DIMS: ActiveShapes[SymbolicDims] = ActiveShapes("solar_jax_symbolic", int)  # type: ignore[arg-type]
#: an int read off the jaxpr, keeping its symbol (a ``_DimExpr`` of a symbolic trace becomes
#: a :class:`~solar.algebra.size.Size`; an int passes)
size = _DIMS.size
#: :func:`size` of each (``tuple(int(s) for s in aval.shape)`` that keeps symbols)
sizes = _DIMS.sizes


def active() -> SymbolicDims | None:
    """The symbolic dims of the trace being lowered, or None (a numeric trace)."""
    return _DIMS.get()


def params(p: dict) -> dict:
    """An equation's parameters with every dimension expression (in tuples and lists, such
    as ``new_sizes`` or ``slice_sizes``) a :class:`~solar.algebra.size.Size`."""
    dims = _DIMS.get()
    if dims is None:
        return p
    return {k: _convert(v, dims) for k, v in p.items()}


def specialized(p: dict) -> dict:
    """An equation's parameters with every dimension expression its plain value at the traced
    sizes (each a specialization guard): for evaluating the equation with JAX itself."""
    return {k: _convert(v, _DIMS.get(), plain=True) for k, v in p.items()}


def _convert(v: object, dims: SymbolicDims | None, plain: bool = False) -> object:
    if _is_dim(v):
        if dims is None:
            raise SymbolicDimError(f"the dimension {v} is read outside a symbolic trace")
        n = dims.size(v)
        return int(n) if plain else n  # type: ignore[call-overload]
    if type(v) in (tuple, list):
        items = [_convert(x, dims, plain) for x in v]  # type: ignore[union-attr]
        return type(v)(items) if any(a is not b for a, b in zip(items, v)) else v  # type: ignore[call-arg,arg-type]
    return v


_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}


def fold_exact(prim: str, params: dict, values: Sequence[np.ndarray]) -> np.ndarray | None:
    """The exact result (an object array of ints, bools and sizes) of an integer equation on
    exact operands, for the equations that move or combine integers (casts between integer
    types, broadcasts, reshapes, ``+ - *``, max/min, comparisons, ``select_n``); None for any
    other. A comparison of sizes is a decision (a guard); its result is a plain bool."""
    v = [np.asarray(x, dtype=object) for x in values]
    if prim == "convert_element_type":
        kind = np.dtype(params["new_dtype"]).kind
        return v[0] if kind in "iu" else None
    if prim == "broadcast_in_dim":
        shape = [int(n) for n in params["shape"]]
        dims = list(params["broadcast_dimensions"])
        full = [1] * len(shape)
        for k, d in enumerate(dims):
            full[d] = v[0].shape[k]
        return np.broadcast_to(v[0].reshape(full), shape)
    if prim == "reshape" and params.get("dimensions") is None:
        return v[0].reshape([int(n) for n in params["new_sizes"]])
    if prim == "squeeze":
        return np.squeeze(v[0], axis=tuple(params["dimensions"]))
    if prim == "neg":
        return -v[0]
    if prim in _BINARY and len(v) == 2:
        out = _BINARY[prim](v[0], v[1])
        return out.astype(bool) if prim in ("lt", "le", "gt", "ge", "eq", "ne") else out
    if prim == "select_n":
        pred = v[0].astype(int)
        return np.choose(pred, v[1:]) if pred.shape else v[1:][int(pred)]
    return None


def has_dims(shape: Sequence[object]) -> bool:
    """Whether a shape (or parameter tuple) holds a symbolic dimension."""
    return any(_is_dim(x) for x in shape)


__all__ = [
    "SymbolicDimError",
    "SymbolicDims",
    "active",
    "params",
    "size",
    "sizes",
    "fold_exact",
    "specialized",
    "to_sympy",
]
