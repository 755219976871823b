"""The torch executor's run of each statement kind (one :class:`StatementRun` subclass per kind,
chosen by a :class:`~solar.ir.program.StatementVisitor`):

- a plain nest: a ``sum`` of a product of loads is one ``torch.einsum`` over strided views (the
  guards as 0/1 operands); anything else is evaluated on the broadcast domain, masked, reduced;
- a scan: the expression on the domain, then ``cumsum``/``cumprod``/``cummax``/``cummin``/
  ``logcumsumexp`` along the scan dim;
- an extern routine: the rows of the expression through the routine's torch implementation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from solar.interp.torch.dtypes import torch_dtype
from solar.interp.torch.routine_kernels import torch_routine
from solar.interp.torch.scalar import REDUCE_FNS, SCANS
from solar.interp.torch.statement import Box, Executor, StatementRun, identity, upcast
from solar.ir.program import Extern, Guard, Scan, Statement, StatementVisitor
from solar.ir.scalar import Call, Const, Expr, Indirect, Load


def statement_run(ex: Executor, st: Statement, where: str) -> StatementRun:
    """The run of ``st`` (of its kind) in the executor ``ex``."""
    return _Runs(ex, where).visit(st)


@dataclass
class _Runs(StatementVisitor[StatementRun]):
    ex: Executor
    where: str

    def nest(self, st: Statement) -> StatementRun:
        return NestRun(self.ex, st, self.where)

    def scan(self, st: Scan) -> StatementRun:
        return ScanRun(self.ex, st, self.where)

    def extern(self, st: Extern) -> StatementRun:
        return ExternRun(self.ex, st, self.where)


class ScanRun(StatementRun):
    """An inclusive scan along ``st.along``: masked-out instances contribute the identity and
    keep the output's contents."""

    st: Scan

    def whole(self) -> set[str]:
        return {self.st.along}

    def run_box(self, box: Box) -> None:
        st = self.st
        assert st.reduce is not None
        val = self.eval(st.expr, box)
        val = torch.as_tensor(val, device=self.dev)
        val = torch.broadcast_to(val, [box[d][1] for d in self.dims])
        mask = self.mask(self.guards, box) if self.guards else None
        if mask is not None:
            val = torch.where(mask, val, identity(st.reduce, val.dtype))
        self.write(box, SCANS[st.reduce](val, self.axis[st.along]), mask)


class ExternRun(StatementRun):
    """Rows ``(*batch, n)`` of the expression through the routine, written over
    ``(*batch, pos)``."""

    st: Extern

    def whole(self) -> set[str]:
        return {self.st.parallel_dims[-1].name}

    def cost(self) -> Callable[[Box], int]:
        """The rows materialised and the outputs written (the row expression is evaluated
        without the position dim): a chunk is as many whole rows as fit, so a routine runs on
        batches as large as memory allows, as the source's call does."""
        pos = self.par[-1]

        def cost(box: Box) -> int:
            rows = math.prod(n for d, (_, n) in box.items() if d != pos)
            return rows + math.prod(box[d][1] for d in self.par)

        return cost

    def run_box(self, box: Box) -> None:
        st = self.st
        routine = torch_routine(st.routine)
        pos, batch = self.par[-1], self.par[:-1]
        val = torch.as_tensor(self.eval(st.expr, box), device=self.dev)
        val = torch.broadcast_to(val, [1 if d == pos else box[d][1] for d in self.dims])
        val = val.squeeze(self.axis[pos])
        rest = [d for d in self.dims if d != pos]
        rows = val.permute([rest.index(d) for d in [*batch, *self.red]])
        rows = rows.reshape([box[d][1] for d in batch] + [-1])
        res = routine(rows, **dict(st.attrs))
        want = tuple(box[d][1] for d in self.par)
        if tuple(res.shape) != want:
            raise ValueError(
                f"{self.where}: extern {st.routine} returned shape {tuple(res.shape)}, "
                f"expected {want}"
            )
        self.write(box, res, None)


class NestRun(StatementRun):
    """A plain loop nest: a contraction (one einsum) when its expression is a product of loads
    summed, else the generic broadcast evaluation."""

    def __init__(self, ex: Executor, st: Statement, where: str) -> None:
        super().__init__(ex, st, where)
        self.plan = self._contraction_plan()

    def cost(self) -> Callable[[Box], int]:
        if self.plan is None:
            return super().cost()
        return self._contraction_cost(self.plan)

    def run_box(self, box: Box) -> None:
        if self.plan is not None:
            self._run_contraction(self.plan, box)
        else:
            self._run_generic(box)

    def run_never(self, box: Box) -> None:
        """A constant guard is false: reductions produce their identity, others nothing."""
        if self.st.reduce is None or self.st.out.indirect:
            return
        dtype = upcast(self.out_dtype)
        sizes = [box[d][1] for d in self.par]
        val = torch.full(sizes, identity(self.st.reduce, dtype), dtype=dtype, device=self.dev)
        self.write(box, val, None)

    # ---------------------------------------------------------------------- generic path

    def _run_generic(self, box: Box) -> None:
        """Evaluate on the broadcast domain, mask with the guards, reduce, write."""
        st = self.st
        val = self.eval(st.expr, box)
        if st.out.indirect and st.reduce is not None:  # parallel-only guards drop instances
            par = set(self.par)
            pg = [g for g in self.guards if set(g.expr.dims) <= par]
            rg = [g for g in self.guards if not set(g.expr.dims) <= par]
            if rg:
                val = torch.where(self.mask(rg, box), val, identity(st.reduce, val.dtype))
            if self.red:
                val = torch.broadcast_to(val, [box[d][1] for d in self.dims])
                val = REDUCE_FNS[st.reduce](val, tuple(self.axis[d] for d in self.red))
            self.write(box, val, self.mask(pg, box, self.par) if pg else None)
            return
        mask = self.mask(self.guards, box) if self.guards else None
        if st.reduce is None:
            self.write(box, val, mask)
            return
        if mask is not None:
            val = torch.where(mask, val, identity(st.reduce, val.dtype))
        if self.red:
            val = torch.broadcast_to(val, [box[d][1] for d in self.dims])
            val = REDUCE_FNS[st.reduce](val, tuple(self.axis[d] for d in self.red))
        self.write(box, val, None)

    # ------------------------------------------------------------------ contraction path

    # ------------------------------------------------------------------ contraction path
    def _contraction_plan(self) -> _Plan | None:
        st = self.st
        if st.reduce != "sum" or st.out.indirect:
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
        ct = upcast(self.explicit if self.explicit is not None else dtype)
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
        self.write(box, r, None)


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
