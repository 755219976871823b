"""Oracle cases for the backward operators of real models' training steps and the other
operators lowered for issue 19's leftovers (slices, activations, pooling, searching),
registered into :data:`oracle_cases_torch.CASES` (``oracle_cases_ops19`` imports this module).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from oracle_cases_torch import Draw, case, rand

aten = torch.ops.aten


def _sliced(draw: Draw):
    """A shape, a dim of it, and a slice (start, end, step) of that dim as Python writes it."""
    shp = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 3)))]
    d = draw(st.integers(0, len(shp) - 1))
    shp[d] = draw(st.integers(1, 8))
    start = draw(st.sampled_from([None, 0, 1, 2, -3]))
    end = draw(st.sampled_from([None, 3, -1, 2**62]))
    step = draw(st.integers(1, 3))
    length = len(range(shp[d])[slice(start, end, step)])
    return shp, d, start, end, step, length


@case(aten.slice_backward.default, examples=8)
def _slice_backward(draw):
    shp, d, start, end, step, length = _sliced(draw)
    g = shp[:d] + [length] + shp[d + 1 :]
    s = 0 if start is None else start
    e = 2**62 if end is None else end
    return (lambda g: aten.slice_backward(g, shp, d, s, e, step)), (rand(tuple(g)),)


@case(aten.slice_scatter.default, examples=8)
def _slice_scatter(draw):
    shp, d, start, end, step, length = _sliced(draw)
    src = shp[:d] + [length] + shp[d + 1 :]
    return (lambda x, s: aten.slice_scatter(x, s, d, start, end, step)), (
        rand(tuple(shp)),
        rand(tuple(src)),
    )


def _selected(draw: Draw):
    shp = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 3)))]
    d = draw(st.integers(0, len(shp) - 1))
    index = draw(st.integers(-shp[d], shp[d] - 1))
    return shp, d, index, shp[:d] + shp[d + 1 :]


@case(aten.select_backward.default)
def _select_backward(draw):
    shp, d, index, g = _selected(draw)
    return (lambda g: aten.select_backward(g, shp, d, index)), (rand(tuple(g)),)


@case(aten.select_scatter.default)
def _select_scatter(draw):
    shp, d, index, src = _selected(draw)
    return (lambda x, s: aten.select_scatter(x, s, d, index)), (rand(tuple(shp)), rand(tuple(src)))
