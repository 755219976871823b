"""The vectorised executor of the Affine Loop IR: run a :class:`Program` on real tensors.

Every statement runs as a handful of whole-array torch operations, never a Python loop per
element:

* a ``Load`` ``T[e_0(x), ..., e_r(x)]`` is one ``torch.as_strided`` view of ``T``'s storage over
  the loop dims (stride of loop dim ``x`` = ``Σ_d coef(e_d, x) · stride_d``; loop dims the load
  does not use get size 1 and broadcast). When an index can leave the tensor (guarded padding),
  the tensor is first copied into a zero-padded buffer so every index is addressable; the guards
  then mask those instances out.
* ``Index`` nodes and guards are evaluated on broadcast ``arange`` s; ``Call`` s apply
  :data:`solar.ir.ops.SCALAR_OPS`.
* a ``sum`` whose expression is a product of loads (``mul`` of loads, ``cast`` of loads and
  constants) is one ``torch.einsum`` over the strided views, with each guard as an extra 0/1
  operand over the dims it uses, so a contraction never materialises its iteration space.
  (A guard that only cuts away reads of a factor's zero padding is dropped. Both are exact for
  finite operands: a guarded-out instance contributes ``0 · Π loads``.)
* everything else is evaluated on the broadcast domain, masked with the guards, reduced over
  the reduction dims, and chunked over the outer parallel dims when the domain is larger than
  :data:`CHUNK_ELEMENTS`.

Statement semantics (``accumulate``, guards, identities) are the ones of
:mod:`solar.ir.program`; reads of a statement see the memory as it was before the statement
(the output is written once, at the end, or chunk by chunk from a snapshot when the statement
also reads the storage it writes).

Extensions:

* a kernel with sequential ``loops`` runs its statement list once per iteration (a Python loop
  over iterations, the loop dims bound to integers; each statement stays vectorised);
* a load with an :class:`~solar.ir.scalar.Indirect` index entry is a gather: the flat storage
  offsets are computed on the broadcast domain (index expressions evaluated in their native
  integer dtype, range-checked) and read with one advanced-indexing op; an indirect output is
  a scatter: ``index_put_`` (overwrite, or ``accumulate`` for sums) or ``scatter_reduce_``
  (``include_self=True`` when accumulating, else ``False``: positions hit are set to the
  reduction of the values scattered to them; others keep their contents);
* a ``scan`` statement evaluates its expression on the domain and applies ``torch.cumsum`` /
  ``cumprod`` / ``cummax`` / ``cummin`` / ``logcumsumexp`` along the scan dim;
* an ``extern`` statement evaluates its rows and calls the routine of
  :data:`solar.ir.extern.EXTERN_OPS` on them.

Compute dtypes: loads keep their tensor dtype, except that float16/bfloat16/float8 loads are
computed in float32 (what eager PyTorch does inside an op; a fused statement rounds once, when
writing). A statement with an explicit ``dtype`` casts every non-bool load to that dtype
(float32 for the half types). Contractions of half types accumulate in float32. The result is
cast to the output tensor's dtype by the write.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace

import torch

from solar.ir.affine import Affine
from solar.ir.dtypes import torch_dtype
from solar.ir.extern import extern_op
from solar.ir.ops import REDUCTIONS, SCANS, scalar_op
from solar.ir.program import Access, Guard, Program, Statement
from solar.ir.scalar import Call, Const, Expr, Index, Indirect, Load, substitute_expr

__all__ = ["CHUNK_ELEMENTS", "execute"]

# Largest broadcast domain (elements) the generic path evaluates at once; larger statements are
# chunked over their outer parallel dims. Contractions chunk when an operand or the output
# would exceed it.
CHUNK_ELEMENTS = 1 << 26

_HALF = {torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2}

_COMBINE: dict[str | None, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    None: torch.add,
    "sum": torch.add,
    "prod": torch.mul,
    "max": torch.maximum,
    "min": torch.minimum,
    "logsumexp": torch.logaddexp,
}

# scatter_reduce_ names of the reduction operators
_SCATTER = {None: "sum", "sum": "sum", "prod": "prod", "max": "amax", "min": "amin"}

Box = dict[str, tuple[int, int]]  # loop dim -> (start, size)
# observe(kernel index, statement index, loop env, storage of a base) before each statement
Observer = Callable[[int, int, Mapping[str, int], Callable[[str], torch.Tensor]], None]


def execute(
    program: Program,
    values: Mapping[str, torch.Tensor],
    *,
    device: str | torch.device | None = None,
    keep_intermediates: bool = False,
    observe: Observer | None = None,
) -> dict[str, torch.Tensor]:
    """Run ``program`` and return ``{name: tensor}`` for its outputs.

    ``values`` holds a tensor for every name in ``program.inputs`` (exact shape and dtype);
    constants come from ``program.constants``. ``device`` defaults to the device of the first
    value (CPU if there is none). With ``keep_intermediates`` the result also holds every
    intermediate, local and view tensor that is not an input, weight or constant.
    Views are returned as ``as_strided`` views of their base's storage.

    ``observe(kernel_index, statement_index, loop_env, storage)`` is called before every
    statement runs (once per iteration of a looped kernel), with ``storage(base)`` the 1-D
    storage of a base as it is then (the counting oracle, :mod:`solar.ir.oracle`, reads index
    tensors through it).
    """
    with torch.no_grad():
        return _Executor(program, values, device, keep_intermediates, observe).run()


def _upcast(dtype: torch.dtype) -> torch.dtype:
    """The dtype loads of ``dtype`` are computed in: float32 for the half types, int64 for
    uint32 (which has no torch arithmetic; writes wrap back to 32 bits)."""
    if dtype == torch.uint32:
        return torch.int64
    return torch.float32 if dtype in _HALF else dtype


def _identity(reduce: str, dtype: torch.dtype) -> float | int | bool:
    if dtype.is_floating_point or dtype.is_complex:
        return REDUCTIONS[reduce][0]
    if dtype == torch.bool:
        return {"sum": False, "prod": True, "max": False, "min": True}[reduce]
    if reduce == "logsumexp":
        raise ValueError(f"a logsumexp reduction needs a floating-point dtype, not {dtype}")
    info = torch.iinfo(dtype)
    return {"sum": 0, "prod": 1, "max": info.min, "min": info.max}[reduce]


def bind_loops(st: Statement, env: Mapping[str, int]) -> Statement:
    """``st`` with sequential loop dims replaced by their values in one iteration."""
    if not env:
        return st
    index = tuple(e.substitute(env) for e in st.out.index)
    return replace(
        st,
        out=Access(st.out.tensor, index),
        expr=substitute_expr(st.expr, env),
        guards=tuple(Guard(g.expr.substitute(env), g.lo, g.hi) for g in st.guards),
    )


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


def _range(e: Affine, box: Box) -> tuple[int, int]:
    """Min and max of ``e`` over the box."""
    lo = hi = e.const
    for d, k in e.terms:
        start, size = box[d]
        a, b = k * start, k * (start + size - 1)
        lo += min(a, b)
        hi += max(a, b)
    return lo, hi


def _at_start(e: Affine, box: Box) -> int:
    return e.const + sum(k * box[d][0] for d, k in e.terms)


@contextmanager
def _matmul_precision(precision: str | None, device: torch.device) -> Iterator[None]:
    if precision not in (None, "tf32", "ieee"):
        raise ValueError(f"unknown contraction precision {precision!r}; None, 'tf32' or 'ieee'")
    if precision is None or device.type != "cuda":
        yield
        return
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    allow = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


@dataclass
class _Source:
    """What loads of one tensor read in one statement: ``data`` (1-D storage or a padded
    copy), the tensor's shape/strides/offset relative to ``data``, and an index shift (the
    low padding)."""

    data: torch.Tensor
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    shift: tuple[int, ...]


class _Executor:
    def __init__(
        self,
        program: Program,
        values: Mapping[str, torch.Tensor],
        device: str | torch.device | None,
        keep: bool,
        observe: Observer | None = None,
    ) -> None:
        self.p = program
        self.keep = keep
        self.observe = observe
        self._check_values(values)
        if device is None:
            first = next(iter(values.values()), None)
            device = first.device if first is not None else "cpu"
        self.device = torch.device(device)
        self.values = values
        self.flat: dict[str, torch.Tensor] = {}  # base name -> 1-D contiguous storage

    # ----------------------------------------------------------------------------- setup
    def _check_values(self, values: Mapping[str, torch.Tensor]) -> None:
        p = self.p
        for name in p.inputs:
            decl = p.tensors[name]
            if name not in values:
                raise ValueError(
                    f"missing value for {decl.role} {name!r} (shape {decl.shape}, {decl.dtype})"
                )
            v = values[name]
            if not isinstance(v, torch.Tensor):
                raise ValueError(f"value for {name!r} is a {type(v).__name__}, not a tensor")
            if tuple(v.shape) != decl.shape:
                raise ValueError(
                    f"value for {name!r} has shape {tuple(v.shape)}; expected {decl.shape}"
                )
            if v.dtype != torch_dtype(decl.dtype):
                raise ValueError(f"value for {name!r} has dtype {v.dtype}; expected {decl.dtype}")
        extra = [n for n in values if n not in set(p.inputs)]
        if extra:
            raise ValueError(
                f"values given for {', '.join(map(repr, extra))}, which "
                f"{'is' if len(extra) == 1 else 'are'} not an input or weight of {p.name!r}"
            )

    def _allocate(self, base: str, written: set[str]) -> torch.Tensor:
        decl = self.p.tensors[base]
        dtype = torch_dtype(decl.dtype)
        if base in self.p.inputs:
            v = self.values[base].detach().to(self.device)
            if base in written:
                v = v.clone(memory_format=torch.contiguous_format)
            return v.contiguous().view(-1)
        if decl.role == "constant":
            if base not in self.p.constants:
                raise ValueError(f"constant {base!r} has no value in program.constants")
            c = torch.as_tensor(self.p.constants[base]).detach().to(self.device, dtype)
            if c.numel() == decl.numel:
                c = c.reshape(decl.shape)
            elif c.numel() == 1:
                c = c.reshape(()).expand(decl.shape)
            else:
                raise ValueError(
                    f"constant {base!r} has {c.numel()} elements; its shape is {decl.shape}"
                )
            return c.contiguous().view(-1).clone() if base in written else c.contiguous().view(-1)
        return torch.zeros(decl.numel, dtype=dtype, device=self.device)

    def layout(self, name: str) -> tuple[str, tuple[int, ...], tuple[int, ...], int]:
        """Base name, shape, strides and offset (in elements of ``name``'s dtype over the base's
        storage: :meth:`storage`) of tensor ``name``."""
        decl = self.p.tensors[name]
        if decl.view is not None:
            return decl.view.base, decl.shape, decl.view.strides, decl.view.offset
        return name, decl.shape, _contiguous_strides(decl.shape), 0

    def storage(self, name: str, flat: torch.Tensor | None = None) -> torch.Tensor:
        """The flat storage of ``name``'s base (or ``flat``, a copy of it) seen as ``name``'s
        element type: a view that reinterprets its base's bytes reads them as its own dtype."""
        flat = self.flat[self.p.base(name)] if flat is None else flat
        dtype = torch_dtype(self.p.tensors[name].dtype)
        return flat if flat.dtype == dtype else flat.view(dtype)

    def materialise(self, name: str) -> torch.Tensor:
        _, shape, strides, offset = self.layout(name)
        flat = self.storage(name)
        return torch.as_strided(flat, shape, strides, flat.storage_offset() + offset)

    # ------------------------------------------------------------------------------- run
    def run(self) -> dict[str, torch.Tensor]:
        p = self.p
        for name, decl in p.tensors.items():
            if decl.role == "constant" and decl.view is None and name not in p.constants:
                raise ValueError(f"constant {name!r} has no value in program.constants")
        # Allocate lazily, free after last use (unless returned), to bound peak memory.
        written: set[str] = set()
        last_use: dict[str, int] = {}
        for ki, k in enumerate(p.kernels):
            for st in k.statements:
                written.add(p.base(st.out.tensor))
                for t in [st.out.tensor, *(ld.tensor for ld in st.loads())]:
                    last_use[p.base(t)] = ki
        returned = {p.base(o) for o in p.outputs}
        if self.keep:
            returned |= {p.base(n) for n in self._kept_names()}
        for ki, k in enumerate(p.kernels):
            for st in k.statements:
                for t in [st.out.tensor, *(ld.tensor for ld in st.loads())]:
                    b = p.base(t)
                    if b not in self.flat:
                        self.flat[b] = self._allocate(b, written)
            self._run_kernel(ki, k)
            for b, last in last_use.items():
                if last == ki and b not in returned:
                    self.flat.pop(b, None)
        for b in returned:
            if b not in self.flat:
                self.flat[b] = self._allocate(b, written)
        out = {name: self.materialise(name) for name in p.outputs}
        if self.keep:
            for name in self._kept_names():
                out.setdefault(name, self.materialise(name))
        return out

    def _run_kernel(self, ki: int, k) -> None:
        names = [d.name for d in k.loops]
        ranges = []
        for d in k.loops:
            try:
                ranges.append(range(int(d.extent)))
            except TypeError:
                raise ValueError(
                    f"kernel {k.name}: loop {d.name} has symbolic extent {d.extent}; bind it first"
                ) from None
        for it in itertools.product(*ranges):
            env = dict(zip(names, it, strict=True))
            at = f" (iteration {', '.join(f'{n}={v}' for n, v in env.items())})" if env else ""
            for si, st in enumerate(k.statements):
                where = f"statement {si} of kernel {k.name}{at}"
                if self.observe is not None:
                    self.observe(ki, si, env, self.flat.__getitem__)
                _StatementRun(self, bind_loops(st, env), where).run()

    def _kept_names(self) -> list[str]:
        p = self.p
        return [
            n for n in p.tensors if p.tensors[p.base(n)].role not in ("input", "weight", "constant")
        ]


class _StatementRun:
    def __init__(self, ex: _Executor, st: Statement, where: str) -> None:
        self.ex = ex
        self.st = st
        self.where = where
        self.dev = ex.device
        self.dims = [d.name for d in st.dims]
        self.axis = {d: i for i, d in enumerate(self.dims)}
        self.ext: dict[str, int] = {}
        for d in st.dims:
            try:
                self.ext[d.name] = int(d.extent)
            except TypeError:
                raise ValueError(
                    f"{where}: loop dim {d.name} has symbolic extent {d.extent}; bind it first"
                ) from None
        self.par = [d.name for d in st.parallel_dims]
        self.red = [d.name for d in st.reduction_dims]
        self.full: Box = {d: (0, n) for d, n in self.ext.items()}
        self.out_base = ex.p.base(st.out.tensor)
        self.out_dtype = torch_dtype(ex.p.tensors[st.out.tensor].dtype)
        self.explicit = torch_dtype(st.dtype) if st.dtype else None
        self.sources: dict[str, _Source] = {}
        self.snapshot: torch.Tensor | None = None
        self._check_guards()
        self._check_output()
        self.pads = self._pads()

    # ---------------------------------------------------------------------------- checks
    def _check_guards(self) -> None:
        self.guards: list[Guard] = []
        self.never = False
        for g in self.st.guards:
            unknown = set(g.expr.dims) - set(self.dims)
            if unknown:
                raise ValueError(f"{self.where}: guard {g} uses dims {unknown} not in the nest")
            lo, hi = _range(g.expr, self.full)
            if hi < g.lo or lo >= g.hi:  # false everywhere
                self.never = True
            elif not (g.lo <= lo and hi < g.hi):  # not true everywhere
                self.guards.append(g)

    def _check_output(self) -> None:
        st = self.st
        _, shape, strides, _ = self.ex.layout(st.out.tensor)
        for k, e in enumerate(st.out.index):
            if isinstance(e, Indirect):
                continue  # checked on the values when it runs
            lo, hi = _range(e, self.full)
            if lo < 0 or hi >= shape[k]:
                raise ValueError(
                    f"{self.where}: output {st.out} index {k} ranges over [{lo}, {hi}], "
                    f"outside {st.out.tensor}'s extent {shape[k]}"
                )
        scattered = {d for e in st.out.index if isinstance(e, Indirect) for d in e.dims}
        for d in self.par:
            s = sum(
                e.coef(d) * strides[k]
                for k, e in enumerate(st.out.index)
                if not isinstance(e, Indirect)
            )
            if s == 0 and self.ext[d] > 1 and d not in scattered:
                raise ValueError(
                    f"{self.where}: parallel dim {d} does not move the output {st.out} "
                    f"(a write race); make it a reduction dim"
                )

    def _pads(self) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        """Per tensor read out of its bounds: low and high zero padding per tensor dim."""
        pads: dict[str, tuple[list[int], list[int]]] = {}
        for ld in self.st.loads():
            _, shape, _, _ = self.ex.layout(ld.tensor)
            for k, e in enumerate(ld.index):
                unknown = set(e.dims) - set(self.dims)
                if unknown:
                    raise ValueError(f"{self.where}: load {ld} uses dims {unknown} not in the nest")
                if isinstance(e, Indirect):
                    continue
                lo, hi = _range(e, self.full)
                if lo < 0 or hi >= shape[k]:
                    plo, phi = pads.setdefault(ld.tensor, ([0] * len(shape), [0] * len(shape)))
                    plo[k] = max(plo[k], -lo)
                    phi[k] = max(phi[k], hi - shape[k] + 1)
        return {t: (tuple(a), tuple(b)) for t, (a, b) in pads.items()}

    # ------------------------------------------------------------------------------ data
    def source(self, tensor: str) -> _Source:
        """The storage a load of ``tensor`` reads (a zero-padded copy if it reads outside)."""
        if tensor in self.sources:
            return self.sources[tensor]
        base, shape, strides, offset = self.ex.layout(tensor)
        snap = self.snapshot if base == self.out_base else None
        flat = self.ex.storage(tensor, snap)
        if tensor in self.pads:
            plo, phi = self.pads[tensor]
            logical = torch.as_strided(flat, shape, strides, flat.storage_offset() + offset)
            pshape = tuple(n + a + b for n, a, b in zip(shape, plo, phi, strict=True))
            padded = torch.zeros(pshape, dtype=flat.dtype, device=flat.device)
            inner = tuple(slice(a, a + n) for a, n in zip(plo, shape, strict=True))
            padded[inner] = logical
            src = _Source(padded.view(-1), pshape, _contiguous_strides(pshape), 0, plo)
        else:
            src = _Source(flat, shape, strides, offset, (0,) * len(shape))
        self.sources[tensor] = src
        return src

    def view(
        self, ld: Load, box: Box, chain: tuple[torch.dtype, ...], used_only: bool
    ) -> torch.Tensor:
        """``ld`` over the box as a strided view: one axis per loop dim (only the dims the load
        uses if ``used_only``, else every dim, size 1 where unused), converted through the
        dtypes of ``chain`` (only the box's elements are converted, never the whole tensor)."""
        if ld.indirect:
            return self.gather(ld, box, chain, used_only)
        src = self.source(ld.tensor)
        used = {d for e in ld.index for d in e.dims}
        dims = [d for d in self.dims if d in used] if used_only else self.dims
        offset = src.offset + sum(
            (_at_start(e, box) + sh) * s
            for e, sh, s in zip(ld.index, src.shift, src.strides, strict=True)
        )
        sizes, strides, flips = [], [], []
        for i, d in enumerate(dims):
            n = box[d][1] if d in used else 1
            s = sum(e.coef(d) * st for e, st in zip(ld.index, src.strides, strict=True))
            if s < 0:
                offset += s * (n - 1)
                s = -s
                flips.append(i)
            sizes.append(n)
            strides.append(s)
        t = torch.as_strided(src.data, sizes, strides, src.data.storage_offset() + offset)
        if flips:
            t = t.flip(flips)
        for dtype in chain:
            t = t.to(dtype)
        return t

    def gather(
        self, ld: Load, box: Box, chain: tuple[torch.dtype, ...], used_only: bool
    ) -> torch.Tensor:
        """A load with indirect index entries: flat storage offsets on the broadcast domain,
        read with one advanced-indexing op (shaped as :meth:`view` shapes its result; without
        ``used_only`` it may also be full-size along guarded dims)."""
        src = self.source(ld.tensor)
        _, shape, _, _ = self.ex.layout(ld.tensor)
        mask = self.mask(self.guards, box) if self.guards and not used_only else None
        off: object = src.offset
        for k, (e, sh, s) in enumerate(zip(ld.index, src.shift, src.strides, strict=True)):
            if isinstance(e, Indirect):
                off = off + self.index_value(e, box, shape[k], mask) * s
            elif s:
                env = {d: self.arange(d, box) for d in e.dims}
                off = off + (e.evaluate(env) + sh) * s
        off_t = torch.as_tensor(off, device=self.dev)
        off_t = off_t.reshape([1] * (len(self.dims) - off_t.dim()) + list(off_t.shape))
        t = src.data[off_t]
        if used_only:
            ldims = self.load_dims(ld)
            full = [box[d][1] if d in ldims else 1 for d in self.dims]
            t = torch.broadcast_to(t, full).reshape([box[d][1] for d in ldims])
        for dtype in chain:
            t = t.to(dtype)
        return t

    def index_value(
        self, e: Indirect, box: Box, n: int, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The int64 values of an indirect index entry on the box (broadcastable over the
        loop dims), checked to lie in ``[0, n)`` where ``mask`` (executed instances) holds;
        elsewhere they are replaced by 0."""
        v = torch.as_tensor(self.eval(e.expr, box, index=True), device=self.dev)
        if v.is_floating_point() or v.is_complex():
            raise ValueError(f"{self.where}: indirect index {e} has non-integer dtype {v.dtype}")
        v = v.to(torch.int64)
        if v.dim() < len(self.dims):
            v = v.reshape([1] * (len(self.dims) - v.dim()) + list(v.shape))
        if mask is not None:
            v = torch.where(mask, v, 0)
        if v.numel() and (int(v.min()) < 0 or int(v.max()) >= n):
            raise ValueError(
                f"{self.where}: indirect index {e} takes values in "
                f"[{int(v.min())}, {int(v.max())}], outside [0, {n})"
            )
        return v

    def load_dims(self, ld: Load) -> list[str]:
        """The loop dims ``ld`` uses (with those its indirect indices use), in nest order."""
        return [d for d in self.dims if any(d in e.dims for e in ld.index)]

    def load_chain(self, dtype: torch.dtype) -> tuple[torch.dtype, ...]:
        if self.explicit is not None:
            target = _upcast(self.explicit)
            return () if dtype in (torch.bool, target) else (target,)
        up = _upcast(dtype)
        return () if up == dtype else (up,)

    def arange(self, d: str, box: Box, used_only_dims: list[str] | None = None) -> torch.Tensor:
        start, size = box[d]
        r = torch.arange(start, start + size, device=self.dev)
        dims = self.dims if used_only_dims is None else used_only_dims
        shape = [1] * len(dims)
        shape[dims.index(d)] = size
        return r.view(shape)

    def mask(self, guards: list[Guard], box: Box, dims: list[str] | None = None) -> torch.Tensor:
        """Conjunction of ``guards`` on broadcast aranges (over all loop dims, or ``dims``)."""
        env = {d: self.arange(d, box, dims) for g in guards for d in g.expr.dims}
        m: torch.Tensor | None = None
        for g in guards:
            v = g.expr.evaluate(env)
            gm = (v >= g.lo) & (v < g.hi)
            m = gm if m is None else m & gm
        assert m is not None
        return m

    # ------------------------------------------------------------------------- execution
    def run(self) -> None:
        plan = self._contraction_plan()
        if plan is not None:
            cost = self._contraction_cost(plan)
        else:

            def cost(box: Box) -> int:
                return math.prod(n for _, n in box.values())

        st = self.st
        reads_out = any(self.ex.p.base(ld.tensor) == self.out_base for ld in st.loads())
        if reads_out and cost(self.full) > CHUNK_ELEMENTS:
            self.snapshot = self.ex.flat[self.out_base].clone()
        whole = {st.scan, st.parallel_dims[-1].name if st.extern else None}
        splittable = [d for d in self.par if self.ext[d] > 1 and d not in whole]
        if st.out.indirect and st.reduce is not None and not st.accumulate:
            splittable = []  # include_self=False: chunks could hit the same positions
        try:
            for box in self._boxes(dict(self.full), splittable, cost):
                if self.never:
                    self._run_never(box)
                elif st.scan is not None:
                    self._run_scan(box)
                elif st.extern is not None:
                    self._run_extern(box)
                elif plan is not None:
                    self._run_contraction(plan, box)
                else:
                    self._run_generic(box)
        finally:  # drop padded copies and snapshots now, not when the statement is collected
            self.sources.clear()
            self.snapshot = None

    def _boxes(self, box: Box, rest: list[str], cost: Callable[[Box], int]) -> Iterator[Box]:
        """Split ``box`` over the parallel dims ``rest``, outermost first, until each piece
        costs at most :data:`CHUNK_ELEMENTS` (or every parallel dim is split to size 1)."""
        if not rest or cost(box) <= CHUNK_ELEMENTS:
            yield box
            return
        d, n = rest[0], self.ext[rest[0]]
        lo, hi = 1, n  # largest chunk c with cost <= limit, or 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if cost({**box, d: (0, mid)}) <= CHUNK_ELEMENTS:
                lo = mid
            else:
                hi = mid - 1
        for s in range(0, n, lo):
            yield from self._boxes({**box, d: (s, min(lo, n - s))}, rest[1:], cost)

    def _write(self, box: Box, val: torch.Tensor, mask: torch.Tensor | None) -> None:
        """Store ``val`` (over the parallel dims, broadcastable) into the output access,
        combining with the current contents for ``accumulate`` and keeping them where
        ``mask`` (non-reduction guards) is false."""
        st = self.st
        if st.out.indirect:
            self._scatter(box, val, mask)
            return
        _, _, strides, offset = self.ex.layout(st.out.tensor)
        flat = self.ex.storage(st.out.tensor)
        offset += sum(_at_start(e, box) * s for e, s in zip(st.out.index, strides, strict=True))
        sizes, vstrides, flips = [], [], []
        for i, d in enumerate(self.par):
            n = box[d][1]
            s = sum(e.coef(d) * st_ for e, st_ in zip(st.out.index, strides, strict=True))
            if s < 0:
                offset += s * (n - 1)
                s = -s
                flips.append(i)
            sizes.append(n)
            vstrides.append(s)
        out = torch.as_strided(flat, sizes, vstrides, flat.storage_offset() + offset)
        new = val
        if st.accumulate or mask is not None:
            cur = out.flip(flips) if flips else out
            cur = cur.to(_upcast(cur.dtype))
            if st.accumulate:
                new = _COMBINE[st.reduce](cur, new)
            if mask is not None:
                new = torch.where(mask, new, cur)
        new = torch.broadcast_to(new, sizes)
        if flips:
            new = new.flip(flips)
        if new.untyped_storage().data_ptr() == flat.untyped_storage().data_ptr():
            new = new.clone()
        out.copy_(new)

    def _scatter(self, box: Box, val: torch.Tensor, mask: torch.Tensor | None) -> None:
        """Write ``val`` (over the parallel dims) through an output with indirect entries,
        skipping instances where ``mask`` is false."""
        st = self.st
        _, shape, strides, offset = self.ex.layout(st.out.tensor)
        flat = self.ex.storage(st.out.tensor)
        sizes = [box[d][1] for d in self.par]
        red_axes = sorted((self.axis[d] for d in self.red), reverse=True)
        off: object = offset
        for k, (e, s) in enumerate(zip(st.out.index, strides, strict=True)):
            if isinstance(e, Indirect):
                pmask = mask
                if pmask is not None and red_axes:  # over the parallel dims: add size-1 axes
                    pmask = pmask.reshape(
                        [1 if d in self.red else pmask.shape[self.par.index(d)] for d in self.dims]
                    )
                v = self.index_value(e, box, shape[k], pmask)
                for ax in red_axes:  # the index does not depend on reduction dims
                    v = v.select(ax, 0)
                off = off + v * s
            elif s:
                env = {d: self.arange(d, box, self.par) for d in e.dims}
                off = off + e.evaluate(env) * s
        off_t = torch.broadcast_to(torch.as_tensor(off, device=self.dev), sizes).reshape(-1)
        val = torch.broadcast_to(torch.as_tensor(val, device=self.dev), sizes).reshape(-1)
        if mask is not None:
            keep = torch.broadcast_to(mask, sizes).reshape(-1)
            off_t, val = off_t[keep], val[keep]
        combine = st.accumulate or st.reduce is not None
        work = flat.to(_upcast(flat.dtype)) if combine else flat
        val = val.to(work.dtype)
        if not combine:
            work.index_put_((off_t,), val)
        elif st.reduce == "logsumexp":
            raise ValueError(f"{self.where}: a logsumexp scatter is not supported")
        elif st.accumulate and st.reduce in (None, "sum"):
            work.index_put_((off_t,), val, accumulate=True)
        else:
            work.scatter_reduce_(0, off_t, val, _SCATTER[st.reduce], include_self=st.accumulate)
        if work is not flat:
            flat.copy_(work)

    def _run_scan(self, box: Box) -> None:
        """An inclusive scan along ``st.scan``: masked-out instances contribute the identity
        and keep the output's contents."""
        st = self.st
        assert st.reduce is not None and st.scan is not None
        val = self.eval(st.expr, box)
        val = torch.as_tensor(val, device=self.dev)
        val = torch.broadcast_to(val, [box[d][1] for d in self.dims])
        mask = self.mask(self.guards, box) if self.guards else None
        if mask is not None:
            val = torch.where(mask, val, _identity(st.reduce, val.dtype))
        self._write(box, SCANS[st.reduce](val, self.axis[st.scan]), mask)

    def _run_extern(self, box: Box) -> None:
        """Rows ``(*batch, n)`` of the expression through the routine, written over
        ``(*batch, pos)``."""
        st = self.st
        op = extern_op(st.extern)  # type: ignore[arg-type]
        pos, batch = self.par[-1], self.par[:-1]
        val = torch.as_tensor(self.eval(st.expr, box), device=self.dev)
        val = torch.broadcast_to(val, [1 if d == pos else box[d][1] for d in self.dims])
        val = val.squeeze(self.axis[pos])
        rest = [d for d in self.dims if d != pos]
        rows = val.permute([rest.index(d) for d in [*batch, *self.red]])
        rows = rows.reshape([box[d][1] for d in batch] + [-1])
        res = op.fn(rows, **dict(st.extern_attrs))
        want = tuple(box[d][1] for d in self.par)
        if tuple(res.shape) != want:
            raise ValueError(
                f"{self.where}: extern {st.extern} returned shape {tuple(res.shape)}, "
                f"expected {want}"
            )
        self._write(box, res, None)

    def _run_never(self, box: Box) -> None:
        """A constant guard is false: reductions produce their identity, others nothing."""
        if self.st.reduce is None or self.st.scan is not None or self.st.out.indirect:
            return
        dtype = _upcast(self.out_dtype)
        sizes = [box[d][1] for d in self.par]
        val = torch.full(sizes, _identity(self.st.reduce, dtype), dtype=dtype, device=self.dev)
        self._write(box, val, None)

    # ---------------------------------------------------------------------- generic path
    def eval(self, e: Expr, box: Box, index: bool = False) -> torch.Tensor:
        """``e`` on the box, broadcastable over the loop dims. ``index``: an indirect index
        expression, whose loads keep their own (integer) dtype."""
        if isinstance(e, Load):
            native = torch_dtype(self.ex.p.tensors[e.tensor].dtype)
            chain = () if index else self.load_chain(native)
            return self.view(e, box, chain, used_only=False)
        if isinstance(e, Const):
            return torch.tensor(e.value, device=self.dev)
        if isinstance(e, Index):
            env = {d: self.arange(d, box) for d in e.expr.dims}
            v = e.expr.evaluate(env)
            return v if isinstance(v, torch.Tensor) else torch.tensor(v, device=self.dev)
        if isinstance(e, Call):
            op = scalar_op(e.op)
            args = [self.eval(a, box, index) for a in e.args]
            if len(args) != op.arity:
                raise ValueError(f"{self.where}: {e.op} takes {op.arity} arguments, got {e}")
            return op.fn(*args, **dict(e.attrs))
        raise TypeError(f"{self.where}: cannot execute expression node {e!r}")

    def _run_generic(self, box: Box) -> None:
        st = self.st
        val = self.eval(st.expr, box)
        if st.out.indirect and st.reduce is not None:  # parallel-only guards drop instances
            par = set(self.par)
            pg = [g for g in self.guards if set(g.expr.dims) <= par]
            rg = [g for g in self.guards if not set(g.expr.dims) <= par]
            if rg:
                val = torch.where(self.mask(rg, box), val, _identity(st.reduce, val.dtype))
            if self.red:
                val = torch.broadcast_to(val, [box[d][1] for d in self.dims])
                val = REDUCTIONS[st.reduce][1](val, tuple(self.axis[d] for d in self.red))
            self._write(box, val, self.mask(pg, box, self.par) if pg else None)
            return
        mask = self.mask(self.guards, box) if self.guards else None
        if st.reduce is None:
            self._write(box, val, mask)
            return
        if mask is not None:
            val = torch.where(mask, val, _identity(st.reduce, val.dtype))
        if self.red:
            val = torch.broadcast_to(val, [box[d][1] for d in self.dims])
            val = REDUCTIONS[st.reduce][1](val, tuple(self.axis[d] for d in self.red))
        self._write(box, val, None)

    # ------------------------------------------------------------------ contraction path
    def _contraction_plan(self) -> _Plan | None:
        st = self.st
        if st.reduce != "sum" or st.scan or st.extern or st.out.indirect:
            return None
        if st.gathers and self.guards:
            return None
        factors = _product_factors(st.expr)
        if factors is None:
            return None
        loads: list[tuple[Load, torch.dtype | None]] = []
        scale: float | int = 1
        dtype: torch.dtype | None = None
        for f in factors:
            if isinstance(f, Const):
                scale = scale * f.value
                continue
            if isinstance(f, Call):  # cast(load)
                ld, cast = f.args[0], torch_dtype(str(f.attr("dtype")))
                assert isinstance(ld, Load)
            else:
                ld, cast = f, None
            loads.append((ld, cast))
            fd = cast or torch_dtype(self.ex.p.tensors[ld.tensor].dtype)
            dtype = fd if dtype is None else torch.promote_types(dtype, fd)
        if not loads:
            return None
        assert dtype is not None
        ct = _upcast(self.explicit if self.explicit is not None else dtype)
        if not (ct.is_floating_point or ct.is_complex):
            return None
        groups: dict[tuple[str, ...], list[Guard]] = {}
        for g in self.guards:
            if self._padding_implies(g, [ld for ld, _ in loads]):
                continue
            groups.setdefault(tuple(d for d in self.dims if d in g.expr.dims), []).append(g)
        return _Plan(loads, scale, ct, groups)

    def _padding_implies(self, g: Guard, loads: list[Load]) -> bool:
        """Whether a factor of the product reads zero padding wherever ``g`` fails, which makes
        the guard redundant in a contraction: ``g.expr`` is a load index ``e`` shifted by a
        constant and ``[g.lo, g.hi)`` covers the whole tensor dim, so failing instances index
        outside the tensor (zero-padded by :meth:`source`)."""
        for ld in loads:
            _, shape, _, _ = self.ex.layout(ld.tensor)
            for k, e in enumerate(ld.index):
                if isinstance(e, Indirect):
                    continue
                diff = g.expr - e
                if diff.is_const and g.lo - diff.const <= 0 and g.hi - diff.const >= shape[k]:
                    return True
        return False

    def _contraction_cost(self, plan: _Plan) -> Callable[[Box], int]:
        sets = [self.load_dims(ld) for ld, _ in plan.loads]
        sets += [list(g) for g in plan.guards]
        used = {d for s in sets for d in s}
        sets.append([d for d in self.par if d in used])

        def cost(box: Box) -> int:
            return max(math.prod(box[d][1] for d in s) for s in sets)

        return cost

    def _run_contraction(self, plan: _Plan, box: Box) -> None:
        st = self.st
        args: list[object] = []
        used: set[str] = set()
        for ld, cast in plan.loads:
            native = torch_dtype(self.ex.p.tensors[ld.tensor].dtype)
            chain = tuple(dt for dt in (cast, plan.dtype) if dt is not None)
            if chain and chain[0] == native:
                chain = chain[1:]
            t = self.view(ld, box, chain, used_only=True)
            dims = self.load_dims(ld)
            args += [t, [self.axis[d] for d in dims]]
            used |= set(dims)
        for dims, guards in plan.guards.items():
            m = self.mask(guards, box, list(dims)).to(plan.dtype)
            args += [m, [self.axis[d] for d in dims]]
            used |= set(dims)
        out_dims = [d for d in self.par if d in used]
        args.append([self.axis[d] for d in out_dims])
        with _matmul_precision(st.precision, self.dev):
            r = torch.einsum(*args)
        scale = plan.scale * math.prod(box[d][1] for d in self.red if d not in used)
        if scale != 1:
            r = r * scale
        r = r.reshape([box[d][1] if d in used else 1 for d in self.par])
        self._write(box, r, None)


@dataclass
class _Plan:
    loads: list[tuple[Load, torch.dtype | None]]  # each load with its cast dtype, if any
    scale: float | int  # product of the Const factors
    dtype: torch.dtype  # contraction dtype
    guards: dict[tuple[str, ...], list[Guard]]  # guards grouped by the loop dims they use


def _product_factors(e: Expr) -> list[Expr] | None:
    """Flatten a product of loads (``mul`` calls, ``cast`` of loads, numeric constants) into
    its factors; ``None`` when ``e`` is anything else."""
    if isinstance(e, Load):
        return [e]
    if isinstance(e, Const):
        ok = isinstance(e.value, int | float) and not isinstance(e.value, bool)
        return [e] if ok and math.isfinite(e.value) else None
    if isinstance(e, Call):
        if e.op == "mul" and len(e.args) == 2:
            a, b = _product_factors(e.args[0]), _product_factors(e.args[1])
            return None if a is None or b is None else a + b
        if e.op == "cast" and len(e.args) == 1 and isinstance(e.args[0], Load):
            return [e]
    return None
