"""Model families from libraries the suite does not install, reproduced with small modules
that use exactly the library's pattern (so CI needs no new library), each compared with eager
PyTorch and with a hand-derived count; the real models, where installed, in
tests/test_library_models.py.

1. A Python value read from the model's own buffer (YOLO's detection heads fill the stride
   column with ``feats[0].new_full((h * w, 1), strides[i])``): known where the model is built
   on a real device.
"""

from __future__ import annotations

import pytest
import torch
from eager_oracle import check
from torch import nn

from solar.frontend.torch import DataDependentOperatorError, trace_torch
from solar.ir.cost import op_counts


class StrideHead(nn.Module):
    """YOLO's ``make_anchors``: per level, a ``(h w, 1)`` column filled with the level's
    stride, read from a buffer, times the level's boxes."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("stride", torch.tensor([8.0, 16.0, 32.0]))
        self.conv = nn.Conv2d(4, 4, 1)

    def forward(self, feats: list[torch.Tensor]) -> torch.Tensor:
        out = []
        for i, x in enumerate(feats):
            y = self.conv(x)
            _, _, h, w = y.shape
            column = y.new_full((h * w, 1), self.stride[i])
            out.append(y.flatten(2).transpose(1, 2) * column)
        return torch.cat(out, 1)


FEATS = [torch.randn(1, 4, 8, 8), torch.randn(1, 4, 4, 4), torch.randn(1, 4, 2, 2)]


def _fills(trace) -> list[float]:
    return [
        st.expr.value
        for k in trace.program.kernels
        if k.op == "aten.new_full.default"
        for st in k.statements
        if type(st.expr).__name__ == "Const"
    ]


def test_a_buffer_value_is_known_and_executes_as_pytorch():
    trace = check(StrideHead().eval(), FEATS, lifted=True)
    assert _fills(trace) == [8.0, 16.0, 32.0]
    note = next(a for a in trace.assumptions if "Python value(s)" in a)
    assert note.startswith("3 Python value(s) read from tensors")
    assert "the model's own parameters and buffers" in note


def test_the_stride_columns_cost_what_a_hand_count_gives():
    """Per level ``h w`` fills (no arithmetic) and ``h w · 4`` fp32 multiplies: 64·4 + 16·4 +
    4·4 = 336 multiplies in the three ``mul`` kernels."""
    trace = trace_torch(StrideHead().eval(), (FEATS,))
    program = trace.program
    muls = [
        op_counts(program, st, k).ops
        for k in program.kernels
        for st in k.statements
        if k.op == "aten.mul.Tensor"
    ]
    assert sum(sum(c.values()) for c in muls) == 336


def test_a_value_the_model_does_not_hold_still_stops():
    """Built on meta, the buffer has no values: the read is data, as before."""
    with pytest.raises(DataDependentOperatorError, match="_local_scalar_dense"):
        trace_torch(StrideHead().to("meta"), ([f.to("meta") for f in FEATS],))


class ChangedThenRead(nn.Module):
    """A buffer changed in place (through a view) before it is read: its traced value is not
    the stored one, so the read stays data."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scale", torch.tensor([2.0, 3.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.scale.view(2)[0:1].mul_(x.sum())
        return x * self.scale[0].item()


def test_a_buffer_changed_before_it_is_read_is_data():
    with pytest.raises(DataDependentOperatorError, match="_local_scalar_dense"):
        trace_torch(ChangedThenRead(), (torch.randn(3),))


class ParameterScale(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor([0.5, 0.25]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.alpha.sum() > 0:  # a branch on the model's own values
            return x * float(self.alpha[1] * 4)
        return x


def test_a_parameter_value_decides_a_branch_and_a_scale():
    trace = check(ParameterScale(), torch.randn(5))
    assert "* 1.0" in str(trace.program)
