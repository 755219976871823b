"""The vectorised executor of the Affine Loop IR: run a :class:`Program` on real tensors.

Every statement runs as a handful of whole-array torch operations, never a Python loop per
element:

* a ``Load`` ``T[e_0(x), ..., e_r(x)]`` is one ``torch.as_strided`` view of ``T``'s storage over
  the loop dims (stride of loop dim ``x`` = ``Σ_d coef(e_d, x) · stride_d``; loop dims the load
  does not use get size 1 and broadcast). When an index can leave the tensor (guarded padding),
  the tensor is first copied into a zero-padded buffer so every index is addressable; the guards
  then mask those instances out.
* ``Index`` nodes and guards are evaluated on broadcast ``arange`` s; ``Call`` s apply the
  torch function of their operator (:data:`solar.interp.torch.scalar.TORCH_OPS`).
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
* a :class:`~solar.ir.program.Scan` evaluates its expression on the domain and applies
  ``torch.cumsum`` / ``cumprod`` / ``cummax`` / ``cummin`` / ``logcumsumexp`` along the scan dim;
* an :class:`~solar.ir.program.Extern` evaluates its rows and calls the torch implementation
  of its routine (:data:`solar.interp.torch.routine_kernels.TORCH_ROUTINES`) on them.

Each statement kind runs in its own class (:mod:`solar.interp.torch.kinds`) over the shared
data access of :mod:`solar.interp.torch.statement`.

Compute dtypes: loads keep their tensor dtype, except that float16/bfloat16/float8 loads are
computed in float32 (what eager PyTorch does inside an op; a fused statement rounds once, when
writing). A statement with an explicit ``dtype`` casts every non-bool load to that dtype
(float32 for the half types). Contractions of half types accumulate in float32. The result is
cast to the output tensor's dtype by the write.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import replace

import torch

from solar.interp.torch.dtypes import torch_dtype
from solar.interp.torch.kinds import statement_run
from solar.interp.torch.statement import contiguous_strides
from solar.ir.program import Access, Guard, Program, Statement
from solar.ir.scalar import substitute_expr

__all__ = ["CHUNK_ELEMENTS", "execute"]

# Largest broadcast domain (elements) the generic path evaluates at once; larger statements are
# chunked over their outer parallel dims. Contractions chunk when an operand or the output
# would exceed it.
CHUNK_ELEMENTS = 1 << 26  # read when an execution starts (tests lower it)

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
    storage of a base as it is then (the counting oracle, :mod:`solar.interp.torch.oracle`,
    reads index tensors through it).
    """
    with torch.no_grad():
        return Executor(program, values, device, keep_intermediates, observe).run()


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


class Executor:
    """One execution of a program: the storage of every base tensor, kernel by kernel."""

    def __init__(
        self,
        program: Program,
        values: Mapping[str, torch.Tensor],
        device: str | torch.device | None,
        keep: bool,
        observe: Observer | None = None,
    ) -> None:
        self.p = program
        self.chunk = CHUNK_ELEMENTS
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
        return name, decl.shape, contiguous_strides(decl.shape), 0

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
                statement_run(self, bind_loops(st, env), where).run()

    def _kept_names(self) -> list[str]:
        p = self.p
        return [
            n for n in p.tensors if p.tensors[p.base(n)].role not in ("input", "weight", "constant")
        ]
