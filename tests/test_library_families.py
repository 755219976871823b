"""Model families from libraries the suite does not install, reproduced with small modules
that use exactly the library's pattern (so CI needs no new library), each compared with eager
PyTorch and with a hand-derived count; the real models, where installed, in
tests/test_library_models.py.

1. A Python value read from the model's own buffer (YOLO's detection heads fill the stride
   column with ``feats[0].new_full((h * w, 1), strides[i])``): known where the model is built
   on a real device; an unknown number (a model built on meta) where it only fills tensors.
2. A write through a boolean mask (Segment Anything's prompt encoder:
   ``point_embedding[labels == -1] = 0.0``; ``x[mask] += v``; ``index_put_`` with a mask):
   the tensor keeps its shape; eager writes only the selected elements, after reading the
   whole mask.
3. Weight normalization (wav2vec2/WavLM/HuBERT's convolutional positional embedding:
   ``aten._weight_norm_interface``) and its siblings: the parametrization API and
   ``spectral_norm`` (``mv``, ``vdot``).
"""

from __future__ import annotations

import math

import pytest
import torch
from eager_oracle import check
from torch import nn

import solar
from solar.frontend.torch import DataDependentOperatorError, trace_torch
from solar.ir.cost import kernel_io, op_counts


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
    assert "the model's own parameters, buffers and tensor constants" in note


class AttributeStrides(StrideHead):
    """Ultralytics' ``Detect.stride``: a plain tensor attribute, not a registered buffer (a
    constant of the traced graph)."""

    def __init__(self) -> None:
        super().__init__()
        del self.stride
        self.stride = torch.tensor([8.0, 16.0, 32.0])


def test_a_tensor_attribute_value_is_known():
    trace = check(AttributeStrides().eval(), FEATS)
    assert _fills(trace) == [8.0, 16.0, 32.0]


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


def test_a_value_the_model_does_not_hold_is_an_unknown_number_that_fills():
    """Built on meta, the buffer has no values: each read is an unknown number; it only fills
    the stride columns, so the bound is the real model's (a fill value changes no work)."""
    real = StrideHead().eval()
    meta = StrideHead().to("meta").eval()
    trace = trace_torch(meta, ([f.to("meta") for f in FEATS],))
    fills = _fills(trace)
    assert len(fills) == 3 and all(math.isnan(v) for v in fills)
    (note,) = [a for a in trace.assumptions if "Python value(s)" in a]
    assert note.startswith("3 Python value(s) read from tensors") and "unknown" in note
    meta_numbers, real_numbers = (solar.bound(m, (FEATS,), "H100").to_dict() for m in (meta, real))
    assert meta_numbers["bounds"] == real_numbers["bounds"]
    assert meta_numbers["totals"] == real_numbers["totals"]


def _scaled(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return x * s.sum().item()  # the number decides a multiply: its cost could depend on it


def _branched(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return x if s.sum().item() > 0 else -x


def _sized(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return x[: int(s.sum().item())]


@pytest.mark.parametrize("fn", [_scaled, _branched, _sized], ids=["scale", "branch", "size"])
def test_an_unknown_number_that_decides_work_stops_the_trace(fn):
    with pytest.raises(DataDependentOperatorError, match="_local_scalar_dense.*observe=True"):
        trace_torch(fn, (torch.randn(4), torch.randn(3)))


def test_arithmetic_on_an_unknown_number_may_still_fill():
    def fill(x, s):
        v = s.max().item()
        return x + torch.full_like(x, v * 2 + 1), x.masked_fill(x > 0, -v)

    trace = trace_torch(fill, (torch.randn(4), torch.randn(3)))
    assert sum("unknown" in a for a in trace.assumptions) == 1


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


LABELS = torch.tensor([[-1, 0, 1, 1, -1], [1, -1, 0, 1, 1]])  # 3 of -1, 2 of 0, 5 of 1


def prompt_points(points: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Segment Anything's ``PromptEncoder._embed_points`` pattern."""
    embedding = points.clone()
    embedding[labels == -1] = 0.0
    embedding[labels == -1] += 0.5
    embedding[labels == 0] = embedding[labels == 0] * 2.0
    return embedding


def accumulate_put(x: torch.Tensor, mask: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return x.index_put_((mask,), v, accumulate=True)


def row_mask_put(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    x[:, mask] = 3.0  # a mask over dim 1 only
    return x


@pytest.mark.parametrize(
    "fn, inputs",
    [
        (prompt_points, (torch.randn(2, 5, 8), LABELS)),
        (accumulate_put, (torch.randn(2, 5), LABELS > 0, torch.tensor(1.5))),
        (row_mask_put, (torch.randn(3, 5, 2), LABELS[0] >= 0)),
    ],
    ids=["prompt-encoder", "index_put_-accumulate", "column-mask"],
)
def test_masked_writes_execute_as_pytorch(fn, inputs):
    check(fn, *inputs, observe=True, lifted=True)


def test_a_masked_write_reads_the_mask_and_writes_what_it_selects():
    """``x[mask] = 0.0`` on a ``(2, 5, 8)`` fp32 tensor with a ``(2, 5)`` mask: the write
    kernel reads the 10 mask bytes (nonzero) and, by default, selects none of them (the
    smallest count: a lower bound for every mask), so it writes nothing; observed with the
    3 True of ``labels == -1``, it reads the mask and the 4-byte fill value (the 3·2 int64
    positions are its own, kernel-local) and writes through data-dependent positions, counted
    at their provable minimum as every scatter is (docs/counting.md): one distinct row of 8
    fp32, 32 bytes (the real run writes 3 rows, 96 bytes)."""

    def fill(points, labels):
        points[labels == -1] = 0.0
        return points

    low = trace_torch(fill, (torch.randn(2, 5, 8), LABELS))
    (kernel,) = [k for k in low.program.kernels if k.op == "aten.index_put_.default"]
    io = kernel_io(low.program, kernel)
    assert (io.read_bytes, io.write_bytes) == (10, 0)
    assert any("aten.index_put (boolean mask) at test_library_families.py:" in a and ": 0 (" in a
               for a in low.assumptions)  # fmt: skip

    seen = trace_torch(fill, (torch.randn(2, 5, 8), LABELS), observe=True)
    (kernel,) = [k for k in seen.program.kernels if k.op == "aten.index_put_.default"]
    io = kernel_io(seen.program, kernel)
    assert (io.read_bytes, io.write_bytes) == (10 + 4, 8 * 4)


def _positional_conv(parametrized: bool) -> nn.Module:
    """wav2vec2's positional embedding: a grouped ``Conv1d`` weight-normalized along dim 2."""
    conv = nn.Conv1d(4, 4, kernel_size=5, padding=2, groups=2)
    if parametrized:
        return nn.utils.parametrizations.weight_norm(conv, name="weight", dim=2)
    with pytest.warns(FutureWarning):
        return nn.utils.weight_norm(conv, name="weight", dim=2)


@pytest.mark.parametrize("parametrized", [False, True], ids=["weight_norm", "parametrizations"])
def test_weight_norm_executes_as_pytorch_and_costs_one_pass(parametrized):
    """The ``(4, 2, 5)`` weight normalized over dims 0 and 1 for each of its 5 taps: the kernel
    reads ``v`` (40 fp32) and ``g`` (5) and writes ``w`` (40) and the norms (5): 180 bytes
    each way."""
    trace = check(_positional_conv(parametrized).eval(), torch.randn(1, 4, 16), lifted=True)
    (kernel,) = [k for k in trace.program.kernels if k.op == "aten._weight_norm_interface.default"]
    io = kernel_io(trace.program, kernel)
    assert (io.read_bytes, io.write_bytes) == (180, 180)


def test_spectral_norm_executes_as_pytorch():
    """Eval mode: ``sigma = vdot(u, mv(W, v))`` from the stored vectors. (Train mode's power
    iteration writes ``F.normalize(..., out=u)``: ``aten.div.out``, not lowered yet.)"""
    torch.manual_seed(0)
    layer = nn.utils.parametrizations.spectral_norm(nn.Linear(6, 5)).eval()
    trace = check(layer, torch.randn(3, 6), lifted=True)
    assert "aten.vdot.default" in [k.op for k in trace.program.kernels]


def test_weight_norm_backward_executes_as_pytorch_and_a_training_step_is_bounded():
    torch.manual_seed(0)
    v, g, grad = torch.randn(4, 2, 5), torch.rand(1, 1, 5) + 0.5, torch.randn(4, 2, 5)
    norm = torch.ops.aten._weight_norm_interface(v, g, 2)[1]

    def backward(grad, v, g, norm):
        return torch.ops.aten._weight_norm_interface_backward(grad, v, g, norm, 2)

    check(backward, grad, v, g, norm, lifted=True)
    step = solar.bound_training(
        _positional_conv(parametrized=True), (torch.randn(1, 4, 16),), "H100",
        loss=lambda out: out.pow(2).mean(),
    )  # fmt: skip
    assert any(k.op == "aten._weight_norm_interface_backward.default" for k in step.kernels)


def test_a_sparse_compressed_adjacency_is_traced():
    """PyG's GraphUNet squares a CSR adjacency: fake tensors cannot build one (PyTorch's own
    limit), so sparse tensors are traced as their stored elements (solar/frontend/torch/
    sparse.py, tests/test_sparse.py); the square executes as PyTorch's."""

    def square(crow, col, values):
        adj = torch.sparse_csr_tensor(crow, col, values, size=(3, 3), device=crow.device)
        return (adj @ adj).to_dense()

    inputs = (torch.tensor([0, 1, 2, 3]), torch.tensor([1, 2, 0]), torch.rand(3))
    check(square, *inputs, observe=True, lifted=True)
