"""Backward of reflection and replication padding (``reflection_pad{1,2,3}d_backward``,
``replication_pad{1,2,3}d_backward``). ONE kernel, as CUDA's: zeros, then every output
gradient element is added into the input position the forward read it from::

    gI = 0;  gI[src(o)] += g[o]

over the forward's own boxes (:func:`..shape.padded_pieces`: left pad, interior, right pad per
padded dim), one accumulating statement per combination of boxes. Along a box whose source is
one edge element (replication), the loop is a reduction (its outputs all add into that
element); elsewhere the source is ``±o + const`` and each statement's writes are distinct.
One add per output element, as CUDA's atomic adds.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import acc_dtype, dims_of, nest
from solar.frontend.torch.ops.shape import pad_pairs, padded_pieces
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const

aten = torch.ops.aten


def _pad_backward(mode: str):
    def lower(ctx: LoweringContext, g: T, x: T, padding: Sequence[int]) -> None:
        out = ctx.out()
        d = dims_of(out.shape)
        ctx.statement(nest(d, out.shape), out, d, Const(0.0))
        pairs = pad_pairs(x.ndim, padding)
        pieces = [padded_pieces(n, lo, hi, mode) for n, (lo, hi) in zip(x.shape, pairs)]
        acc = acc_dtype(out.dtype)
        for combo in itertools.product(*pieces):
            if any(length <= 0 for _, length, _ in combo):
                continue
            source = [f(Affine.of(n)) for n, (_, _, f) in zip(d, combo, strict=True)]
            loops = [
                (n, length, src.is_const)
                for n, (_, length, _), src in zip(d, combo, source, strict=True)
            ]
            at = [Affine.of(n) + start for n, (start, _, _) in zip(d, combo, strict=True)]
            value = ctx.load(g, at, acc)
            ctx.statement(loops, out, source, value, reduce="sum", accumulate=True, dtype=acc)

    return lower


REFLECTION = (
    aten.reflection_pad1d_backward.default,
    aten.reflection_pad2d_backward.default,
    aten.reflection_pad3d_backward.default,
)
REPLICATION = (
    aten.replication_pad1d_backward.default,
    aten.replication_pad2d_backward.default,
    aten.replication_pad3d_backward.default,
)
lowering(*REFLECTION)(_pad_backward("reflect"))
lowering(*REPLICATION)(_pad_backward("replicate"))
