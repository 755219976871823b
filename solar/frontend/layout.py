"""Framework-neutral helpers shared by the frontends: tensor references, dense strides,
loop-dim names, numpy-style broadcasting of operand indices, flat element indices. The
expression builders (casts, scales, pointwise statements) are the lowering library's
(:mod:`solar.frontend.lowering.pointwise`).

Nothing here knows about torch or JAX; a frontend's lowering code imports these instead of
redefining them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

from solar.algebra.size import integer
from solar.ir.affine import Affine, AffineLike
from solar.ir.scalar import Index

HALF = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")


@dataclass(frozen=True)
class T:
    """A tensor value of a traced program, by its IR name (a view tensor if not contiguous)."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return prod(self.shape)


def acc_dtype(dtype: str) -> str:
    """The dtype reductions of ``dtype`` accumulate in (float32 for the half types)."""
    return "float32" if dtype in HALF else dtype


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides (in elements) of a dense tensor of ``shape``; a size-0 dim counts as
    1, so the strides of an empty tensor are those of its non-empty dims."""
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(integer(s), 1)
    return tuple(reversed(strides))


def dims_of(shape: Sequence[int], prefix: str = "i") -> list[str]:
    return [f"{prefix}{k}" for k in range(len(shape))]


def nest(names: Sequence[str], shape: Sequence[int], reduction: bool = False) -> list[tuple]:
    """``[(name, extent, reduction), ...]`` for ``ProgramBuilder.statement``."""
    return [(d, integer(n), reduction) for d, n in zip(names, shape, strict=True)]


def norm_dim(d: int, ndim: int) -> int:
    """A possibly negative dim index, in ``range(ndim)`` (0-dim tensors accept 0 and -1)."""
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"dim {d} out of range for {ndim} dims")
    return d % n


def flat_index(shape: Sequence[int], dims: Sequence[str]) -> Index:
    """The flat (row-major) element index over ``dims``: one distinct value per element (what
    a random kernel draws its value at)."""
    stride, terms = 1, {}
    for d, n in reversed(list(zip(dims, shape, strict=True))):
        if n > 1:
            terms[d] = stride
        stride *= max(integer(n), 1)
    return Index(Affine.build(terms, 0))


def broadcast_index(shape: Sequence[int], dims: Sequence[str]) -> list[AffineLike]:
    """Index of an operand of ``shape`` broadcast (numpy rules: right-aligned, size-1 dims read
    element 0) against loop dims ``dims`` of the output."""
    lead = len(dims) - len(shape)
    assert lead >= 0, f"cannot broadcast {tuple(shape)} to {len(dims)} dims"
    return [0 if n == 1 else dims[lead + k] for k, n in enumerate(shape)]
