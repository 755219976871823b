"""Oracle cases for the operators of real models added for issue 19: upsampling in every mode
(forward and backward), registered into :data:`oracle_cases_torch.CASES` (that module imports
this one at its end).

Upsampling is table-driven: one builder per (operator, spatial dims, align_corners?) draws
input sizes, output sizes (smaller, equal and larger: downsampling, identity, upsampling) and
the scale factors the caller may pass (None, or a factor that need not match the sizes, as
``recompute_scale_factor=False`` allows).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from oracle_cases_torch import Draw, case, rand

from solar.frontend.torch.ops.upsample import BACKWARD, FORWARD

aten = torch.ops.aten


def _scale(draw: Draw, size: int, out: int) -> float | None:
    return draw(st.sampled_from([None, out / size, 2.0, 1.5, 0.5]))


def _upsample_args(draw: Draw, nsp: int, has_align: bool):
    sizes = [draw(st.integers(1, 5)) for _ in range(nsp)]
    outs = [draw(st.integers(1, 2 * s + 2)) for s in sizes]
    scales = [_scale(draw, s, o) for s, o in zip(sizes, outs, strict=True)]
    align = [draw(st.booleans())] if has_align else []
    return sizes, outs, align, scales


for _op, (_mode, _nsp, _align) in FORWARD.items():

    def _forward(draw, op=_op, nsp=_nsp, has_align=_align):
        sizes, outs, align, scales = _upsample_args(draw, nsp, has_align)
        lead = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
        return (lambda x: op(x, outs, *align, *scales)), (rand((*lead, *sizes)),)

    case(_op, examples=6)(_forward)


for _op, (_mode, _nsp, _align) in BACKWARD.items():

    def _backward(draw, op=_op, nsp=_nsp, has_align=_align):
        sizes, outs, align, scales = _upsample_args(draw, nsp, has_align)
        lead = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
        return (
            (lambda g: op(g, outs, [*lead, *sizes], *align, *scales)),
            (rand((*lead, *outs)),),
        )

    case(_op, examples=6)(_backward)
