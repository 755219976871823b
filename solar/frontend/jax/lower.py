"""Walk a jaxpr and lower every equation to IR through the registry.

Each equation that computes something becomes one *unit*: a provisional kernel holding its
statements. :mod:`solar.frontend.jax.fusion` later groups units into the kernels XLA would
launch. Views (reshape, transpose, broadcast_in_dim, slice, squeeze) are ``as_strided`` views
and emit nothing. Call-like primitives (jit, custom_jvp_call, remat, ...) are inlined; scans
are unrolled or become one looped kernel; while loops with trip counts known while tracing are
unrolled; cond picks a branch (see ``ops/control.py``).

Values (:class:`V`) are IR tensors, values known while tracing (literals, closed-over
constants, and anything computed from them alone, evaluated with JAX itself when small: loop
counters, scatter indices, dynamic_slice starts), or both. A known value becomes an IR constant
only when a statement reads it (a constant splat as one element viewed with stride 0).
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from math import prod

import numpy as np

from solar.algebra.size import Size, integer
from solar.frontend import lowering
from solar.frontend.cells import source_label
from solar.frontend.jax import symbolic_dims as symbolic
from solar.frontend.jax.equation_keys import child_prefix
from solar.frontend.jax.precision import PrecisionPolicy
from solar.frontend.jax.registry import (
    LOWERINGS,
    SIZE_AWARE,
    VALUE_ONLY,
    UnsupportedPrimitiveError,
)
from solar.frontend.layout import T, broadcast_index, contiguous_strides, dims_of, nest
from solar.frontend.lowering.errors import expressible
from solar.frontend.lowering.exprs import cast
from solar.ir.affine import AffineLike, affines
from solar.ir.dtypes import ITEMSIZE
from solar.ir.program import REDUCE_OPS, Kernel, Statement, check_statement
from solar.ir.scalar import Const, Expr, Load

FOLD_LIMIT = 1 << 12  # largest output (elements) evaluated at trace time from known operands
MAX_EQUATIONS = 200_000  # largest number of lowered equations (unrolled loops included)


@dataclass(eq=False)
class V:
    """A jaxpr value: an IR tensor ``t``, a value ``known`` while tracing, or both.

    ``owned``: no other live reference to ``t``'s storage exists, so its last use may update it
    in place. ``producer``: the unit that wrote ``t`` (None for inputs and constants).
    ``contraction``: the dot_general statement that produced ``t`` (a bias epilogue may fold
    into it). ``sized``: the symbolic sizes (:class:`~solar.algebra.size.Size` s) a known
    value depends on; a lowering that decides loop nests from it specializes them, unless it
    reads ``sym``, the value's exact entries (ints and sizes) where integer arithmetic on
    sizes could be followed (``x[:, -1]`` of a symbolic dim: a start ``seq - 1``)."""

    def exact(self) -> np.ndarray | None:
        """The known value, with its exact symbolic entries where it has them."""
        return self.sym if self.sym is not None else self.known

    def specialize(self) -> None:
        """Read as the plain number it is at the traced sizes: its sizes specialize."""
        for s in self.sized:
            int(s)  # a guard: the formula holds at this size's traced value only

    shape: tuple[int, ...]
    dtype: str
    t: T | None = None
    known: np.ndarray | None = None
    owned: bool = False
    producer: int | None = None
    contraction: Statement | None = field(default=None, repr=False)
    sized: tuple = ()  # the symbolic sizes a known value was computed from (dim_as_value)
    sym: np.ndarray | None = field(default=None, repr=False)  # its exact values, with sizes

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return prod(self.shape)

    def scalar(self) -> complex | float | int | bool | None:
        """The Python number this value is known to be everywhere (a known splat), or None."""
        a = self.known
        if a is None or a.size == 0:
            return None
        first = a.reshape(-1)[0]
        if a.size > 1 and not _is_splat(a):
            return None
        if a.dtype.kind == "c":  # a complex splat: its real part when the imaginary is 0
            return complex(first) if first.imag else float(first.real)
        return first.item() if a.dtype.kind in "biuf" else float(first)


def _is_splat(a: np.ndarray) -> bool:
    flat = a.reshape(-1)
    if a.dtype.kind in "biuc":
        return bool(np.all(flat == flat[0]))
    f = flat.astype(np.float64)
    return bool(np.all((f == f[0]) | (np.isnan(f) & np.isnan(f[0]))))


@dataclass
class Unit:
    """A provisional kernel: what one equation (or one copy) emitted."""

    kernel: Kernel
    prim: str
    kind: str  # "light", "heavy" or "loop" (a looped kernel: a whole scan)
    index: int
    key: str = ""  # the equation that emitted it (:mod:`solar.frontend.jax.equation_keys`)


def dtype_name(dtype: object) -> str:
    try:
        return np.dtype(dtype).name
    except TypeError:  # extended dtypes (PRNG keys): named, never expressible in the IR
        return str(dtype)


def is_prng_key(dtype: object) -> bool:
    """Whether ``dtype`` is a typed PRNG key dtype (``jax.random.key``'s ``key<fry>``)."""
    return not isinstance(dtype, str) and dtype_name(dtype).startswith("key<")


def ir_dtype(dtype: object, what: str) -> str:
    """The IR name of a numpy/JAX dtype (or dtype name), or an
    :class:`~solar.frontend.lowering.UnsupportedDtypeError` naming ``what``."""
    return expressible(dtype_name(dtype) if not isinstance(dtype, str) else dtype, what)


# ---------------------------------------------------------------------------------------------
# Where an equation came from.

_SOLAR_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


@functools.cache
def _is_user_path(path: str) -> bool:
    if path.startswith("<"):  # <stdin>, <string> (python -c), but not <frozen ...>
        return not path.startswith("<frozen")
    path = os.path.abspath(path)
    return "site-packages" not in path and not path.startswith(_SOLAR_DIR)


def user_source(source_info: object) -> str:
    """``file.py:LINE`` of the innermost frame of the user's own code (not JAX, Flax, other
    libraries or solar) that created an equation."""
    from jax._src import source_info_util as siu

    tb = getattr(source_info, "traceback", None)
    if tb is None:
        return ""
    try:  # the frames (innermost first) are converted lazily: stop at the first user frame
        for fr in siu.user_frames(tb):
            if _is_user_path(fr.file_name):
                return source_label(fr.file_name, fr.start_line)
    except Exception:  # a JAX without this helper: no location rather than a failure
        return ""
    return ""


def name_stack(source_info: object) -> str:
    return str(getattr(source_info, "name_stack", "") or "")


# ---------------------------------------------------------------------------------------------


class LoweringContext(lowering.LoweringContext):
    """What a lowering sees of the equation it lowers: operands, params, outputs, and a unit
    (provisional kernel) to emit statements into."""

    error = UnsupportedPrimitiveError

    def __init__(
        self,
        lowerer: Lowerer,
        eqn: object,
        ins: list[V],
        kind: str,
        *,
        source: str,
        module: str,
        dead: list[bool],
        uses: list[int],
        dests: dict[int, T],
    ) -> None:
        prim: str = eqn.primitive.name  # type: ignore[attr-defined]
        super().__init__(lowerer, prim, source=source, module=module)
        self.lowerer: Lowerer = lowerer
        self.eqn = eqn
        self.prim = prim
        self.params: dict = symbolic.params(dict(eqn.params))  # type: ignore[attr-defined]
        self.ins = ins
        self.kind = kind
        self._dead = dead  # operand i's variable is not used after this equation
        self._uses = uses  # uses of operand i's variable in its jaxpr
        self._dests = dests  # output position -> tensor the result should be written into
        avals = [v.aval for v in eqn.outvars]  # type: ignore[attr-defined]
        self.out_avals = [(symbolic.sizes(a.shape), dtype_name(a.dtype)) for a in avals]
        self._outs: list[V | None] = [None] * len(avals)
        self.unit: Unit | None = None
        self.key = lowerer.current_key  # this equation's key (equation_keys)

    # -- operands ------------------------------------------------------------------------

    def tensor(self, v: V) -> T:
        """``v`` as an IR tensor (a known value becomes a constant)."""
        return self.lowerer.materialize(v, self.prim)

    def operand(self, v: V, dims: Sequence[str], dtype: str | None) -> Expr:
        """``v`` broadcast (numpy rules) over loop dims ``dims`` and cast to ``dtype``: a
        constant if it is a known splat, else a load."""
        s = v.scalar()
        if s is not None and v.t is None:
            return Const(s)
        t = self.tensor(v)
        return self.load(t, broadcast_index(t.shape, dims), dtype)

    def operand_at(self, v: V, index: Sequence[AffineLike], dtype: str | None) -> Expr:
        """``v[index]`` cast to ``dtype``; a constant if ``v`` is a known splat."""
        s = v.scalar()
        if s is not None and v.t is None:
            return Const(s)
        return self.load(self.tensor(v), index, dtype)

    def dead(self, i: int) -> bool:
        """Whether operand ``i`` may be overwritten: owned, and its last use is here."""
        return self._dead[i] and self.ins[i].owned

    def has_dest(self, i: int) -> bool:
        """Whether the caller asked output ``i`` to be written into a given tensor."""
        return i in self._dests

    def single_use(self, i: int) -> bool:
        return self._dead[i] and self._uses[i] == 1

    # -- outputs -------------------------------------------------------------------------

    def out(self, i: int = 0, stem: str | None = None) -> T:
        """Output ``i`` as a fresh tensor (or the tensor the caller asked it to be written
        into), declared on first use."""
        v = self._outs[i]
        if v is None:
            shape, dtype = self.out_avals[i]
            t = self._dests.get(i)
            if t is None:
                where = f" at {self.source}" if self.source else ""
                dt = ir_dtype(dtype, f"output {i} of {self.prim}{where}")
                t = self.lowerer.fresh_tensor(stem or self.prim, shape, dt)
            v = V(shape, dtype, t, owned=True)
            self._outs[i] = v
        assert v.t is not None
        return v.t

    def set_out(self, i: int, value: V | T | np.ndarray, src: V | None = None) -> None:
        """Bind output ``i`` to an existing tensor (a view or an alias of ``src``, whose
        producer it keeps), an existing value, or a known array."""
        shape, dtype = self.out_avals[i]
        if isinstance(value, np.ndarray):
            self._outs[i] = V(shape, dtype, known=value.reshape(shape))
        elif isinstance(value, T):
            self.lowerer.base_refs[self.lowerer.program.base(value.name)] += 1
            producer = src.producer if src is not None else None
            self._outs[i] = V(shape, dtype, value, producer=producer)
        else:
            if value.t is not None:
                self.lowerer.base_refs[self.lowerer.program.base(value.t.name)] += 1
            self._outs[i] = replace(value, shape=shape, owned=False, contraction=None)

    def out_value(self, i: int) -> V | None:
        """Output ``i`` as bound so far (None before it is declared or bound)."""
        return self._outs[i]

    def bind_out(self, i: int, v: V) -> None:
        """Bind output ``i`` to ``v`` as it is (an in-place update's operand, say)."""
        self._outs[i] = v

    def view(
        self, x: T, shape: Sequence[int], strides: Sequence[int], offset: int = 0, stem: str = ""
    ) -> T:
        """A view of ``x``'s storage: ``strides``/``offset`` in elements of the storage base."""
        return self.lowerer.view(x, shape, strides, offset, stem or self.prim)

    def reset_outs(self) -> None:
        """Forget the outputs declared so far (after a failed attempt was rolled back)."""
        self._outs = [None] * len(self.out_avals)
        self.unit = None

    def outs(self) -> list[V]:
        for i, v in enumerate(self._outs):
            if v is None:  # never written: an allocation only
                self.out(i)
        out = [v for v in self._outs if v is not None]
        if self.unit is not None:  # written here (fresh, or updated in place)
            for v in out:
                if v.t is not None and v.known is None and (v.producer is None or v.owned):
                    v.producer = self.unit.index
        return out

    # -- statements ----------------------------------------------------------------------

    def kernel(self) -> Kernel:
        """This equation's unit's kernel (the unit opened on the first statement)."""
        if self.unit is None:
            kind = "light" if self.kind in ("view", "control") else self.kind
            self.unit = self.lowerer.begin_unit(self.prim, kind, self.source, self.module)
        return self.unit.kernel

    # -- sub-jaxprs ----------------------------------------------------------------------

    def lower_jaxpr(
        self,
        closed: object,
        args: Sequence[V],
        *,
        owned: Sequence[bool] | None = None,
        dests: dict[int, T] | None = None,
    ) -> list[V]:
        """Lower a (closed) jaxpr on ``args`` in place; returns its outputs. ``owned[i]``:
        argument ``i`` may be overwritten (the caller holds no other reference)."""
        jaxpr = getattr(closed, "jaxpr", closed)
        consts = [self.lowerer.known_value(c) for c in getattr(closed, "consts", ())]
        own = owned if owned is not None else [False] * len(args)
        # a contraction's epilogue never folds across a call boundary (the caller may use it)
        bound = [
            replace(a, owned=a.owned and o, contraction=None)
            for a, o in zip(args, own, strict=True)
        ]
        prefix = child_prefix(self.key, self.eqn.params, closed)  # type: ignore[attr-defined]
        return self.lowerer.lower_jaxpr(
            jaxpr,
            consts,
            bound,
            scope=self.module,
            dests=dests or {},
            source=self.source,
            prefix=prefix,
        )

    def operand_dead(self, i: int) -> bool:
        return self._dead[i]


class Lowerer(lowering.Lowerer):
    """Lower jaxprs into one Program: inputs and constants become tensors, equations units."""

    def __init__(self, name: str, policy: PrecisionPolicy) -> None:
        super().__init__(name, policy)
        self.units: list[Unit] = []
        self.base_refs: Counter[str] = Counter()
        self.equations = 0
        self.scratch = False  # a trial lowering (cond branch costing): never edit old units
        self.scan_mode = "auto"  # "auto", "unroll" or "loop" (see ops/control.py)
        self.in_loop = False  # lowering the body of a looped kernel
        self.current_key = ""  # the key of the equation being lowered (equation_keys)
        self.joined: dict[int, set[str]] = {}  # unit -> keys of other equations folded into it
        self._splats: dict[tuple, T] = {}

    # -- tensors -------------------------------------------------------------------------

    def fresh_tensor(self, stem: str, shape: Sequence[int], dtype: str, role="intermediate") -> T:
        t = super().fresh_tensor(stem, shape, dtype, role)
        self.base_refs[t.name] += 1
        return t

    def declare_input(self, stem: str, shape, dtype: object, role: str, what: str) -> V:
        if is_prng_key(dtype):  # a typed key array: its uint32[*shape, 2] key data
            t = self.fresh_tensor(stem, (*shape, 2), "uint32", role)
            return V(tuple(integer(s) for s in shape), dtype_name(dtype), t)
        dt = ir_dtype(dtype, what)
        t = self.fresh_tensor(stem, shape, dt, role)
        return V(t.shape, dt, t)

    def known_value(self, value: object) -> V:
        a = to_numpy(value)
        if a.dtype.kind == "O" or (a.dtype.kind == "V" and a.dtype.name not in ITEMSIZE):
            raise TypeError(f"not an array of numbers: {a.dtype}")
        return V(tuple(a.shape), a.dtype.name, known=a)

    def layout(self, t: T) -> tuple[str, tuple[int, ...], int]:
        """Storage base, strides and offset (in base elements) of ``t``."""
        decl = self.program.tensors[t.name]
        if decl.view is not None:
            return decl.view.base, decl.view.strides, decl.view.offset
        return t.name, contiguous_strides(decl.shape), 0

    def view(self, x: T, shape, strides, offset: int, stem: str) -> T:
        shape = tuple(integer(s) for s in shape)
        strides = tuple(0 if n == 1 else integer(s) for n, s in zip(shape, strides, strict=True))
        base = self.program.base(x.name)
        bshape = self.program.tensors[base].shape
        same = len(shape) == len(bshape) and shape == bshape  # (ranks first: no size decided)
        if offset == 0 and same and strides == contiguous_strides(shape):
            t = T(base, shape, x.dtype)
        else:
            t = T(self.builder.view(stem, x.name, shape, strides, offset), shape, x.dtype)
        self.base_refs[base] += 1
        return t

    def materialize(self, v: V, prim: str = "") -> T:
        """The IR tensor of ``v``; a known value becomes a constant (a splat: one element
        viewed with stride 0)."""
        if v.t is not None:
            return v.t
        assert v.known is not None, "a value with neither a tensor nor a known value"
        a = v.known
        dtype = ir_dtype(a.dtype, f"a constant operand of {prim}" if prim else "a constant")
        if a.size > 1 and _is_splat(a):
            key = (dtype, a.reshape(-1)[:1].tobytes())
            base = self._splats.get(key)
            if base is None:
                name = self.builder.tensor("splat", (1,), dtype, "constant")
                self.program.constants[name] = to_torch(a.reshape(-1)[:1].copy())
                base = self._splats[key] = T(name, (1,), dtype)
            v.t = self.view(base, a.shape, (0,) * a.ndim, 0, "splat")
        else:
            name = self.builder.tensor("const", a.shape, dtype, "constant")
            self.program.constants[name] = to_torch(a)
            self.base_refs[name] += 1
            v.t = T(name, tuple(a.shape), dtype)
        return v.t

    # -- trial lowering ------------------------------------------------------------------

    def snapshot(self) -> tuple:
        p = self.program
        return (
            len(self.units),
            len(p.kernels),
            dict(p.tensors),
            dict(p.constants),
            list(p.inputs),
            dict(self.builder._counts),  # type: ignore[attr-defined]
            Counter(self.base_refs),
            len(self.notes),
            dict(self._splats),
            self.equations,
        )

    def restore(self, snap: tuple) -> None:
        """Forget everything lowered since :meth:`snapshot` (a failed attempt)."""
        p = self.program
        units, kernels, tensors, constants, inputs, counts, refs, notes, splats, eqs = snap
        del self.units[units:]
        del p.kernels[kernels:]
        p.tensors, p.constants, p.inputs = tensors, constants, inputs
        self.builder._counts = counts  # type: ignore[attr-defined]
        self.base_refs, self._splats, self.equations = refs, splats, eqs
        del self.notes[notes:]
        self.joined = {u: ks for u, ks in self.joined.items() if u < units}

    # -- units ---------------------------------------------------------------------------

    def begin_unit(
        self, prim: str, kind: str, source: str = "", module: str = "", loops=()
    ) -> Unit:
        k = self.builder.begin_kernel(prim, source=source, module=module, loops=loops)
        u = Unit(k, prim, kind, len(self.units), self.current_key)
        self.units.append(u)
        return u

    def join(self, unit: int) -> None:
        """Record that the equation being lowered wrote its work into the earlier ``unit`` (a
        bias folded into a dot): the kernel that unit goes into computes this equation too."""
        if self.current_key:
            self.joined.setdefault(unit, set()).add(self.current_key)

    def emit(self, unit: Unit, st: Statement) -> Statement:
        """Move ``st``, built earlier (a loop body's statement), into ``unit``."""
        if st.reduce is not None and st.reduce not in REDUCE_OPS:
            raise ValueError(f"unknown reduction {st.reduce!r}; one of {REDUCE_OPS}")
        check_statement(st, self.program, unit.kernel.loops)
        unit.kernel.statements.append(st)
        return st

    def copy(self, src: V, dst: T, source: str = "", module: str = "") -> None:
        """A light unit ``dst[...] = src[...]`` (cast to ``dst``'s dtype)."""
        dims = dims_of(dst.shape)
        if any(n == 0 for n in dst.shape):
            return
        s = src.scalar()
        if s is not None and src.t is None:
            expr: Expr = Const(s)
        else:
            t = self.materialize(src, "copy")
            expr = cast(Load(t.name, affines(broadcast_index(t.shape, dims))), t.dtype, dst.dtype)
        self.begin_unit("copy", "light", source, module)  # the builder's open kernel
        self.builder.statement(nest(dims, dst.shape), (dst.name, dims), expr)

    # -- the walk ------------------------------------------------------------------------

    def lower_jaxpr(
        self,
        jaxpr: object,
        consts: Sequence[V],
        args: Sequence[V],
        *,
        scope: str = "",
        dests: dict[int, T] | None = None,
        source: str = "",
        prefix: str = "",
    ) -> list[V]:
        """Lower ``jaxpr`` on ``args``; returns its outputs. ``dests`` maps output positions
        to tensors the outputs should be written into (a copy if no equation writes them).
        ``scope`` and ``source`` are the calling equation's module path and user line (an
        inlined body's equations whose traceback stops at the call use the caller's line).
        ``prefix``: the key prefix of its equations (``"3/"`` in equation 3's body; the units
        they emit carry their keys, :mod:`solar.frontend.jax.equation_keys`)."""
        from jax.extend.core import Literal

        env: dict[object, V] = {}
        for var, val in zip(jaxpr.constvars, consts, strict=True):  # type: ignore[attr-defined]
            env[var] = val
        for var, val in zip(jaxpr.invars, args, strict=True):  # type: ignore[attr-defined]
            env[var] = val
        eqns = jaxpr.eqns  # type: ignore[attr-defined]
        outvars = jaxpr.outvars  # type: ignore[attr-defined]
        last: dict[object, float] = {}
        uses: Counter[object] = Counter()
        for i, e in enumerate(eqns):
            for a in e.invars:
                if not isinstance(a, Literal):
                    last[a] = i
                    uses[a] += 1
        for a in outvars:
            if not isinstance(a, Literal):
                last[a] = float("inf")
                uses[a] += 1
        dests = dict(dests or {})
        producers = {v: i for i, e in enumerate(eqns) for v in e.outvars}
        var_dests: dict[object, dict[int, T]] = {}
        for k, t in list(dests.items()):
            var = outvars[k]
            if isinstance(var, Literal) or var not in producers:
                continue
            if sum(1 for o in outvars if o is var) > 1:
                continue
            e = eqns[producers[var]]
            var_dests.setdefault(id(e), {})[list(e.outvars).index(var)] = t

        def read(a: object) -> V:
            if isinstance(a, Literal):
                return self.known_value(np.asarray(a.val, dtype=a.aval.dtype))
            return env[a]

        caller = self.current_key
        for i, e in enumerate(eqns):
            ins = [read(a) for a in e.invars]
            dead = [not isinstance(a, Literal) and last.get(a) == i for a in e.invars]
            nuses = [0 if isinstance(a, Literal) else uses[a] for a in e.invars]
            self.current_key = f"{prefix}{i}"
            try:
                outs = self.lower_eqn(e, ins, dead, nuses, scope, var_dests.get(id(e), {}), source)
            finally:
                self.current_key = caller
            for var, val in zip(e.outvars, outs, strict=True):
                if type(var).__name__ != "DropVar":
                    env[var] = val
        results = [read(a) for a in outvars]
        for k, t in dests.items():
            v = results[k]
            if v.t is not None and v.t.name == t.name:
                continue
            self.copy(v, t, source, scope)
            results[k] = V(t.shape, v.dtype, t, owned=False)
        return results

    def lower_eqn(
        self,
        eqn: object,
        ins: list[V],
        dead: list[bool],
        uses: list[int],
        scope: str,
        dests: dict[int, T],
        outer_source: str = "",
    ) -> list[V]:
        self.equations += 1
        prim = eqn.primitive.name  # type: ignore[attr-defined]
        source = user_source(eqn.source_info) or outer_source  # type: ignore[attr-defined]
        if self.equations > MAX_EQUATIONS:
            raise UnsupportedPrimitiveError(
                prim,
                source,
                f"exceeds {MAX_EQUATIONS} lowered equations (loops are unrolled); analyse a "
                "smaller configuration",
            )
        rule = LOWERINGS.get(prim)
        if rule is None:
            raise UnsupportedPrimitiveError(prim, source)
        if rule.fold and rule.kind != "control" and all(v.known is not None for v in ins):
            folded = self._fold(eqn, ins)
            if folded is not None:
                return folded
        sized = tuple(dict.fromkeys(s for v in ins for s in v.sized))
        if sized and prim not in VALUE_ONLY and prim not in SIZE_AWARE:
            for v in ins:  # a value computed from a size decides loop nests here
                v.specialize()
            sized = ()
        local = name_stack(eqn.source_info)  # type: ignore[attr-defined]
        module = "/".join(p for p in (scope, local) if p)
        ctx = LoweringContext(
            self,
            eqn,
            ins,
            rule.kind,
            source=source,
            module=module,
            dead=dead,
            uses=uses,
            dests=dests,
        )
        rule.fn(ctx, *ins, **ctx.params)
        outs = ctx.outs()
        if sized and prim in VALUE_ONLY:
            for v in outs:
                if v.known is not None:
                    v.sized = tuple(dict.fromkeys((*v.sized, *sized)))
        return outs

    def _fold(self, eqn: object, ins: list[V]) -> list[V] | None:
        """Evaluate an equation on known operands with JAX itself (small results only)."""
        outvars = eqn.outvars  # type: ignore[attr-defined]
        params = eqn.params  # type: ignore[attr-defined]
        if symbolic.active() is not None and _symbolic_eqn(eqn):
            # folded only where a numeric trace folds (a guard), then at the traced sizes
            shapes = [symbolic.sizes(v.aval.shape) for v in outvars]
            if sum(prod(s) for s in shapes) > FOLD_LIMIT:
                return None
            for shape in shapes:
                [int(n) for n in shape]  # specialized: the value has the traced shape
            params = symbolic.specialized(params)
        elif sum(prod(v.aval.shape) for v in outvars) > FOLD_LIMIT:
            return None
        prim = eqn.primitive  # type: ignore[attr-defined]
        try:
            res = prim.bind(*[v.known for v in ins], **params)  # type: ignore[attr-defined]
            outs = [self.known_value(r) for r in (res if prim.multiple_results else [res])]
        except Exception:  # not evaluable here (a key type, an effect): lower it instead
            return None
        if any(v.sized for v in ins):
            _follow_sizes(prim.name, params, ins, outs)
        return outs


def _follow_sizes(prim: str, params: dict, ins: list[V], outs: list[V]) -> None:
    """Outputs folded from values computed from sizes: their exact entries where the integer
    arithmetic on sizes can be followed, else the sizes they depend on."""
    exact = None
    if len(outs) == 1 and all(v.sym is not None for v in ins if v.sized):
        exact = symbolic.fold_exact(prim, params, [v.exact() for v in ins])
    if exact is not None:
        sizes = tuple(dict.fromkeys(x for x in exact.flat if isinstance(x, Size)))
        outs[0].sym, outs[0].sized = (exact if sizes else None), sizes
        return
    sized = tuple(dict.fromkeys(s for v in ins for s in v.sized))
    for v in outs:
        v.sized = sized


def _symbolic_eqn(eqn: object) -> bool:
    """Whether an equation's outputs have symbolic shapes or its parameters hold sizes."""
    outs = eqn.outvars  # type: ignore[attr-defined]
    if any(symbolic.has_dims(v.aval.shape) for v in outs):
        return True
    return any(
        symbolic.has_dims(v if isinstance(v, (tuple, list)) else (v,))
        for v in eqn.params.values()  # type: ignore[attr-defined]
    )


# ---------------------------------------------------------------------------------------------
# Array conversions: JAX/numpy <-> torch (the executor's array library).

_BITS = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}


def to_numpy(x: object) -> np.ndarray:
    return np.asarray(x)


def to_torch(x: object):
    """A torch tensor with the same dtype and values as ``x`` (a JAX or numpy array)."""
    import torch

    if is_prng_key(getattr(x, "dtype", None)):  # a typed key array: its key data
        import jax

        x = jax.random.key_data(x)
    a = np.array(np.asarray(x), order="C", copy=True)
    name = a.dtype.name
    if name in _BITS:
        bits = torch.from_numpy(a.view(_BITS[name]).copy())
        return bits.view(getattr(torch, name))
    ir_dtype(name, "a value")
    return torch.from_numpy(a)


__all__ = [
    "FOLD_LIMIT",
    "Lowerer",
    "LoweringContext",
    "T",
    "Unit",
    "V",
    "contiguous_strides",
    "dtype_name",
    "ir_dtype",
    "to_numpy",
    "to_torch",
    "user_source",
]
