"""Framework-neutral builders of the extern statements of FFTs and dense linear algebra
(issue 24), shared by the PyTorch and JAX lowerings.

Written against the shared :class:`~solar.frontend.lowering.base.LoweringContext` (its load,
statement, view, storage and local buffers), the builders lay out one kernel: an FFT is one
extern statement (row dims: the transformed axes; output position: the transformed block of
the output, written through a free merged view), a linear-algebra routine one extern
statement per output, reading its matrix (or the augmented matrix ``[A | B]`` assembled in a
kernel-local buffer) as rows. Costs and semantics are the
rows of :mod:`solar.ir.extern_spectral` and :mod:`solar.ir.extern_linalg`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

from solar.frontend.layout import T, broadcast_index, contiguous_strides
from solar.frontend.lowering.base import LoweringContext
from solar.ir.affine import Affine
from solar.ir.dtypes import real_part_dtype


def _merged(ctx: LoweringContext, out: T, first: int, last: int) -> T:
    """``out`` with axes ``first..last`` merged into one (a free view of its storage)."""
    if last == first:
        return out
    shape = (*out.shape[:first], prod(out.shape[first : last + 1]), *out.shape[last + 1 :])
    return ctx.view(out, shape, contiguous_strides(shape))


def fft(
    ctx: LoweringContext,
    x: T,
    out: T,
    axes: Sequence[int],
    kind: str,
    *,
    forward: bool = True,
    scale: float = 1.0,
) -> None:
    """One FFT kernel: ``kind`` "c2c", "r2c" (real input; the half spectrum, or the full one
    when ``out`` keeps the last axis's length) or "c2r" over ``axes`` of ``x`` into ``out``."""
    axes = sorted(int(a) % max(x.ndim, 1) for a in axes)
    if axes != list(range(axes[0], axes[0] + len(axes))):
        ctx.fail(f"transforms the non-adjacent axes {axes}; transform them one call at a time")
    a0, a1 = axes[0], axes[-1]
    batch = [k for k in range(x.ndim) if k not in axes]
    m = prod(out.shape[a0 : a1 + 1])
    dims = [(f"i{k}", out.shape[k]) for k in batch] + [("p", m)]
    dims += [(f"r{k}", x.shape[k], True) for k in axes]
    row = ctx.load(x, [f"r{k}" if k in axes else f"i{k}" for k in range(x.ndim)])
    target = _merged(ctx, out, a0, a1)
    index = [f"i{k}" for k in range(a0)] + ["p"] + [f"i{k}" for k in range(a1 + 1, x.ndim)]
    attrs = {
        "shape": tuple(x.shape[k] for k in axes),
        "out_shape": tuple(out.shape[k] for k in axes),
        "forward": bool(forward),
        "scale": float(scale),
        "dtype": real_part_dtype(out.dtype if kind != "c2r" else x.dtype),
    }
    ctx.statement(dims, target, index, row, extern=f"fft.{kind}", extern_attrs=attrs)


@dataclass(frozen=True)
class Operand:
    """A (batched) matrix operand: ``t`` of shape ``(*batch, rows, cols)``; a vector right-hand
    side ``(*batch, rows)`` has ``vector=True`` (one column)."""

    t: T
    vector: bool = False
    transposed: bool = False  # read as its transpose (the right-hand side of X A = B)

    @property
    def rows(self) -> int:
        return self.t.shape[-1] if self.vector or self.transposed else self.t.shape[-2]

    @property
    def cols(self) -> int:
        return 1 if self.vector else self.t.shape[-2] if self.transposed else self.t.shape[-1]


def _matrix_index(op: Operand, batch: list[str], r: str, c: str) -> list:
    nb = op.t.ndim - (1 if op.vector else 2)
    lead = broadcast_index(op.t.shape[:nb], batch) if nb else []
    if op.vector:
        return [*lead, r]
    return [*lead, c, r] if op.transposed else [*lead, r, c]


def linalg(
    ctx: LoweringContext,
    routine: str,
    operands: Sequence[Operand],
    outs: Sequence[tuple[str, T | None]],
    batch: Sequence[int],
    *,
    dtype: str,
    **attrs: object,
) -> None:
    """One linear-algebra kernel: ``routine`` on ``operands`` (one matrix, or ``A`` and a
    right-hand side ``B``), each ``(part, out)`` of ``outs`` one extern statement (the first
    carries the routine's operation count). ``batch``: the batch shape of the outputs."""
    bd = [f"b{i}" for i in range(len(batch))]
    a = operands[0]
    m, n = a.rows, a.cols
    if len(operands) == 1:
        src = a.t
        rows, cols = m, n
        src_index = _matrix_index(a, bd, "r", "c")
        k = 0
    else:
        b = operands[1]
        k = b.cols
        rows, cols = n, n + k
        aug = ctx.local("aug", (*batch, rows, cols), a.t.dtype)
        full = [*bd]
        ctx.statement(
            [*zip(bd, batch), ("r", n), ("c", n)],
            aug,
            [*full, "r", "c"],
            ctx.load(a.t, _matrix_index(a, bd, "r", "c")),
        )
        ctx.statement(
            [*zip(bd, batch), ("r", n), ("c", k)],
            aug,
            [*full, "r", Affine.build({"c": 1}, n)],
            ctx.load(b.t, _matrix_index(b, bd, "r", "c")),
        )
        src, src_index = aug, [*full, "r", "c"]
    base = {"m": m, "n": n, "k": k, "dtype": real_part_dtype(dtype), **attrs}
    counted = True
    for part, out in outs:
        if out is None:
            continue
        nb = len(batch)
        tail = out.ndim - nb
        perm: tuple[int, ...] = ()
        target = out
        if tail > 1:
            storage, order = ctx.storage(out, nb)
            if tuple(order[:nb]) != tuple(range(nb)):
                ctx.fail(f"writes {out.name} with its batch axes inside its matrix axes")
            perm = tuple(d - nb for d in order[nb:])
            target = _merged(ctx, storage, nb, out.ndim - 1)
            perm = () if perm == tuple(range(tail)) else perm
        pos = prod(out.shape[nb:])
        index = [*bd, "p"] if tail else bd
        dims = [*zip(bd, batch), ("p", pos), ("r", rows, True), ("c", cols, True)]
        row = ctx.load(src, src_index)
        ctx.statement(
            dims,
            target,
            index,
            row,
            extern=f"linalg.{routine}",
            extern_attrs={**base, "part": part, "counted": counted, "perm": perm},
        )
        counted = False
