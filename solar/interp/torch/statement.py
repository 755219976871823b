"""What every statement kind's run shares in the torch executor: the checks of a statement
against its tensors, the strided views and gathers its loads read, guard masks, chunking of
large domains, and the write (or scatter) of its result. The kinds' runs are
:mod:`solar.interp.torch.kinds`."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import torch

from solar.interp.torch.dtypes import torch_dtype
from solar.interp.torch.scalar import COMBINE, torch_op
from solar.ir.affine import Affine
from solar.ir.ops import REDUCTION_IDENTITY, scalar_op
from solar.ir.program import Guard, Program, Statement
from solar.ir.scalar import Call, Const, Expr, Index, Indirect, Load

_HALF = {torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2}

# scatter_reduce_ names of the reduction operators
_SCATTER = {None: "sum", "sum": "sum", "prod": "prod", "max": "amax", "min": "amin"}

Box = dict[str, tuple[int, int]]  # loop dim -> (start, size)


class Executor(Protocol):
    """What a statement's run reads of the executor (:class:`solar.interp.torch.execute.Executor`):
    the program, the 1-D storage of each base, the device, the chunk limit, the layouts and the
    storage seen as a tensor's own element type."""

    p: Program
    flat: dict[str, torch.Tensor]
    device: torch.device
    chunk: int

    def layout(self, name: str) -> tuple[str, tuple[int, ...], tuple[int, ...], int]: ...

    def storage(self, name: str, flat: torch.Tensor | None = None) -> torch.Tensor: ...


def upcast(dtype: torch.dtype) -> torch.dtype:
    """The dtype loads of ``dtype`` are computed in: float32 for the half types, int64 for
    uint32 (which has no torch arithmetic; writes wrap back to 32 bits)."""
    if dtype == torch.uint32:
        return torch.int64
    return torch.float32 if dtype in _HALF else dtype


def identity(reduce: str, dtype: torch.dtype) -> float | int | bool:
    if dtype.is_floating_point or dtype.is_complex:
        return REDUCTION_IDENTITY[reduce]
    if dtype == torch.bool:
        return {"sum": False, "prod": True, "max": False, "min": True}[reduce]
    if reduce == "logsumexp":
        raise ValueError(f"a logsumexp reduction needs a floating-point dtype, not {dtype}")
    info = torch.iinfo(dtype)
    return {"sum": 0, "prod": 1, "max": info.min, "min": info.max}[reduce]


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
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


@dataclass
class Source:
    """What loads of one tensor read in one statement: ``data`` (1-D storage or a padded
    copy), the tensor's shape/strides/offset relative to ``data``, and an index shift (the
    low padding)."""

    data: torch.Tensor
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    shift: tuple[int, ...]


class StatementRun:
    """One statement run by the executor (one loop iteration of its kernel); a subclass per
    kind says how a box of its domain is computed (:meth:`run_box`)."""

    def __init__(self, ex: Executor, st: Statement, where: str) -> None:
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
        self.sources: dict[str, Source] = {}
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
        indirect = [e for e in st.out.index if isinstance(e, Indirect)]
        if indirect and st.accumulate:
            return  # an accumulating scatter: iterations that meet add up, as atomics do
            # (an index that folded to a constant, a 1 x 1 grid-sample input, meets always)
        scattered = {d for e in indirect for d in e.dims}
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
    def source(self, tensor: str) -> Source:
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
            src = Source(padded.view(-1), pshape, contiguous_strides(pshape), 0, plo)
        else:
            src = Source(flat, shape, strides, offset, (0,) * len(shape))
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
            target = upcast(self.explicit)
            return () if dtype in (torch.bool, target) else (target,)
        up = upcast(dtype)
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
    def cost(self) -> Callable[[Box], int]:
        """Elements a box of the domain materialises (what chunking keeps under the limit)."""

        def cost(box: Box) -> int:
            return math.prod(n for _, n in box.values())

        return cost

    def whole(self) -> set[str]:
        """Parallel dims a chunk must span whole (a scan's dim, an extern routine's output)."""
        return set()

    def run_box(self, box: Box) -> None:
        raise NotImplementedError

    def run_never(self, box: Box) -> None:
        """A constant guard is false: nothing executes (a plain reduction overrides this)."""

    def run(self) -> None:
        cost = self.cost()
        st = self.st
        reads_out = any(self.ex.p.base(ld.tensor) == self.out_base for ld in st.loads())
        if reads_out and cost(self.full) > self.ex.chunk:
            self.snapshot = self.ex.flat[self.out_base].clone()
        whole = self.whole()
        splittable = [d for d in self.par if self.ext[d] > 1 and d not in whole]
        if st.out.indirect and st.reduce is not None and not st.accumulate:
            splittable = []  # include_self=False: chunks could hit the same positions
        try:
            for box in self._boxes(dict(self.full), splittable, cost):
                if self.never:
                    self.run_never(box)
                else:
                    self.run_box(box)
        finally:  # drop padded copies and snapshots now, not when the statement is collected
            self.sources.clear()
            self.snapshot = None

    def _boxes(self, box: Box, rest: list[str], cost: Callable[[Box], int]) -> Iterator[Box]:
        """Split ``box`` over the parallel dims ``rest``, outermost first, until each piece
        costs at most :data:`self.ex.chunk` (or every parallel dim is split to size 1)."""
        if not rest or cost(box) <= self.ex.chunk:
            yield box
            return
        d, n = rest[0], self.ext[rest[0]]
        lo, hi = 1, n  # largest chunk c with cost <= limit, or 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if cost({**box, d: (0, mid)}) <= self.ex.chunk:
                lo = mid
            else:
                hi = mid - 1
        for s in range(0, n, lo):
            yield from self._boxes({**box, d: (s, min(lo, n - s))}, rest[1:], cost)

    def write(self, box: Box, val: torch.Tensor, mask: torch.Tensor | None) -> None:
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
            cur = cur.to(upcast(cur.dtype))
            if st.accumulate:
                new = COMBINE[st.reduce](cur, new)
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
        work = flat.to(upcast(flat.dtype)) if combine else flat
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

    def eval(self, e: Expr, box: Box, index: bool = False) -> torch.Tensor:
        """``e`` on the box, broadcastable over the loop dims. ``index``: an indirect index
        expression, whose loads keep their own (integer) dtype."""
        if isinstance(e, Load):
            native = torch_dtype(self.ex.p.tensors[e.tensor].dtype)
            chain = () if index else self.load_chain(native)
            return self.view(e, box, chain, used_only=False)
        if isinstance(e, Const):  # a float constant keeps its double value (1/3 in a float64
            # pow); a 0-dim operand does not change a dimensioned tensor's dtype
            dtype = torch.float64 if isinstance(e.value, float) else None
            return torch.tensor(e.value, dtype=dtype, device=self.dev)
        if isinstance(e, Index):
            env = {d: self.arange(d, box) for d in e.expr.dims}
            v = e.expr.evaluate(env)
            return v if isinstance(v, torch.Tensor) else torch.tensor(v, device=self.dev)
        if isinstance(e, Call):
            op = scalar_op(e.op)
            args = [self.eval(a, box, index) for a in e.args]
            if len(args) != op.arity:
                raise ValueError(f"{self.where}: {e.op} takes {op.arity} arguments, got {e}")
            return torch_op(e.op)(*args, **dict(e.attrs))
        raise TypeError(f"{self.where}: cannot execute expression node {e!r}")
