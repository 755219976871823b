"""Operators of real models: upsampling in every mode against ``F.interpolate`` and
autograd, ``F.unfold``/``F.fold``, creation and elementwise additions; the one report of every
missing operator; compiled and wrapped modules; the core ATen coverage."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from eager_oracle import check

import solar
from solar.frontend.torch import UnsupportedOperatorError, trace_torch
from solar.frontend.torch.coverage import REASONS, core_coverage
from solar.frontend.torch.registry import find_lowering
from solar.ir.cost import kernel_io, statement_ops

aten = torch.ops.aten
HERE = "test_frontend_model_ops.py"


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


SIZES = [
    dict(scale_factor=2),
    dict(scale_factor=1.5),
    dict(scale_factor=0.5),
    dict(size=(9, 11, 13)),
]
MODES = {
    1: ["nearest", "nearest-exact", "linear"],
    2: ["nearest", "nearest-exact", "bilinear", "bicubic"],
    3: ["nearest", "nearest-exact", "trilinear"],
}


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_interpolate_every_mode_equals_pytorch(nsp):
    x = rand(2, 3, *[5, 7, 4][:nsp])
    for mode in MODES[nsp]:
        for kw in SIZES:
            kw = dict(kw, size=kw["size"][:nsp]) if "size" in kw else kw
            for align in [None] if "nearest" in mode else [False, True]:
                extra = {} if align is None else {"align_corners": align}
                check(lambda x, m=mode, k=kw, e=extra: F.interpolate(x, mode=m, **k, **e), x)


def test_area_mode_is_adaptive_average_pooling():
    t = check(lambda x: F.interpolate(x, size=(3, 4), mode="area"), rand(1, 2, 6, 8))
    assert [k.op for k in t.program.kernels] == ["aten._adaptive_avg_pool2d.default"]


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
def test_interpolate_backward_is_what_autograd_launches(mode):
    """The backward operator autograd records for ``F.interpolate``, executed as IR, equals
    eager's result for the same arguments."""
    from torch.fx.experimental.proxy_tensor import make_fx

    x, g = rand(2, 3, 5, 6).requires_grad_(), rand(2, 3, 7, 9, seed=1)

    def grad(x, g):
        return torch.autograd.grad(F.interpolate(x, size=(7, 9), mode=mode), x, g)

    gm = make_fx(grad)(x, g)
    (node,) = [n for n in gm.graph.nodes if "backward" in str(n.target)]
    t = check(lambda g: node.target(g, *node.args[1:]), g)
    assert [k.op for k in t.program.kernels] == [str(node.target)]


def test_counts_by_hand():
    """Nearest 2x of 1x2x4x4 (fp32): a copy, no flops, reads 32 elements, writes 128; one
    statement per residue class pair (even, odd) of the two dims. Bilinear 2x adds the blend:
    per output one multiply per tap and one add per pair of taps of each dim."""
    x = torch.empty(1, 2, 4, 4, device="meta")
    t = trace_torch(lambda x: F.interpolate(x, scale_factor=2), x)
    (k,) = t.program.kernels
    assert len(k.statements) == 4
    assert all(statement_ops(t.program, st) == {} for st in k.statements)
    io = kernel_io(t.program, k)
    assert (io.read_bytes, io.write_bytes) == (32 * 4, 128 * 4)


def test_deeplab_head_upsampling_executes_as_pytorch():
    """DeepLabV3-MobileNet's head: bilinear from 33 x 33 (520 / 16, rounded up) to 520 x 520.
    Each output dim falls in 33 runs over which the source taps are affine: 33 x 33 = 1,089
    statements; the bytes are the input once and the output once (fp32)."""
    t = check(lambda x: F.interpolate(x, size=(520, 520), mode="bilinear"), rand(1, 1, 33, 33))
    (k,) = t.program.kernels
    assert len(k.statements) == 33 * 33
    io = kernel_io(t.program, k)
    assert (io.read_bytes, io.write_bytes) == (33 * 33 * 4, 520 * 520 * 4)


def test_nn_upsample_in_a_model_is_bounded():
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.Upsample(scale_factor=2, mode="bilinear")
    )
    b = solar.bound(model.eval(), (torch.empty(1, 3, 16, 16, device="meta"),), "H100")
    assert b.fused > 0


def test_fold_and_unfold_equal_pytorch():
    x = rand(2, 3, 6, 7)
    for kw in [dict(kernel_size=2), dict(kernel_size=(3, 2), padding=1, stride=2, dilation=(1, 2))]:
        check(lambda x, k=kw: F.unfold(x, **k), x)
        cols = F.unfold(x, **kw)
        check(lambda c, k=kw: F.fold(c, (6, 7), **k), cols)
    check(lambda x: x.unfold(2, 3, 1) * 2, x)  # Tensor.unfold: a view


def test_creation_and_elementwise_additions_equal_pytorch():
    x = rand(3, 4)
    x[0, 0], x[0, 1], x[1, 1] = float("nan"), float("inf"), -float("inf")
    check(torch.nan_to_num, x)
    check(lambda x: torch.erfinv(x.clamp(-0.9, 0.9)), x.nan_to_num())
    for n in [1, 2, 7]:
        check(lambda z, n=n: torch.linspace(-1.3, 2.7, n) + z, torch.zeros(n))
        check(lambda z, n=n: torch.logspace(-1.0, 2.0, n, base=3.0) + z, torch.zeros(n))
    check(lambda z: torch.eye(3, 5) + z, torch.zeros(3, 5))
    mask = torch.rand(3, 4, generator=torch.Generator().manual_seed(2)) > 0.3
    check(lambda g, m: aten.native_dropout_backward(g, m, 1 / 0.7), rand(3, 4), mask)


# ------------------------------------------------------------------- the missing report


def test_every_missing_operator_is_reported_once():
    """Three gaps: each listed once with its count and first source line, in one error."""
    from solar.frontend.torch import registry

    with registry.LOWERINGS.scoped():
        for op in (aten.sin.default, aten.cos.default, aten.tanh.default):
            registry.LOWERINGS.remove(op)

        def f(x):
            a = torch.sin(x)  # SIN
            b = torch.cos(a) + torch.sin(a)  # COS
            return torch.tanh(b)  # TANH

        with pytest.raises(UnsupportedOperatorError) as e:
            trace_torch(f, rand(3, 4))
    missing = {m.op: m for m in e.value.missing}
    assert list(missing) == ["aten.sin.default", "aten.cos.default", "aten.tanh.default"]
    lines = Path(__file__).read_text().splitlines()
    line = {
        tag: next(i + 1 for i, s in enumerate(lines) if s.endswith(f"# {tag}"))
        for tag in ("SIN", "COS", "TANH")
    }
    assert missing["aten.sin.default"].count == 2
    assert missing["aten.sin.default"].sources == [f"{HERE}:{line['SIN']}", f"{HERE}:{line['COS']}"]
    assert missing["aten.tanh.default"].sources == [f"{HERE}:{line['TANH']}"]
    msg = str(e.value)
    assert msg.startswith("3 operators cannot be lowered")
    assert f"aten.sin.default (2x, at {HERE}:{line['SIN']} and 1 more: --debug lists them)" in msg
    assert f"{HERE}:{line['COS']}" in e.value.report(all_sources=True)


def test_one_missing_operator_keeps_the_one_line_error():
    with pytest.raises(UnsupportedOperatorError) as e:
        trace_torch(lambda x: torch.special.zeta(x, 2.0), rand(3))
    assert "\n" not in str(e.value) and len(e.value.missing) == 1


# ------------------------------------------------------------------ wrapped modules


def test_compiled_and_data_parallel_modules_are_bounded_as_their_module():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU()).eval()
    x = torch.empty(4, 8, device="meta")
    plain = solar.bound(model, (x,), "H100")
    compiled = torch.compile(model)  # nothing compiles until it is called
    for wrapped, says in [
        (compiled, "torch.compile'd module"),
        (nn.DataParallel(model), "nn.DataParallel"),
        (nn.DataParallel(compiled), "torch.compile'd module"),
    ]:
        b = solar.bound(wrapped, (x,), "H100")
        assert (b.fused, b.unfused) == (plain.fused, plain.unfused)
        assert any(says in a for a in b.assumptions)


def test_wrapped_module_executes_with_its_weights():
    model = nn.Linear(4, 3)
    check(nn.DataParallel(model), rand(2, 4))


# ------------------------------------------------------------------ core ATen coverage


def test_core_aten_coverage(capsys):
    c = core_coverage()
    with capsys.disabled():
        print("\n" + c.report())
    assert c.total > 150 and len(c.lowered) >= 184
    assert all(c.refused.values())  # every refusal has a reason
    # from the dispatcher's list, not only the packets loaded so far (nothing here loads these)
    assert c.refused["aten.resize_.default"].startswith("resizes storage")
    assert "aten.avg_pool1d.default" in c.refused
    for op in (
        "aten._pdist_forward.default",
        "aten.masked_scatter.default",
        "aten.atan2.out",
        "aten.upsample_nearest2d.vec",
        "aten.upsample_bilinear2d.vec",
        "aten.col2im.default",
        "aten.slice_scatter.default",
        "aten.select_scatter.default",
        "aten.avg_pool2d_backward.default",
        "aten._adaptive_avg_pool2d_backward.default",
        "aten.any.dims",
    ):
        assert op in c.lowered


# ------------------------------------------------------------------ train-mode dropout


class DropoutAttention(nn.Module):
    """GPT-2's dropouts in miniature: residual dropout and attention dropout in train mode."""

    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.qkv, self.heads, self.drop = nn.Linear(d, 3 * d), heads, nn.Dropout(0.1)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1 if self.training else 0.0)
        return self.drop(a.transpose(1, 2).reshape(b, t, d))


def test_training_step_with_default_dropout_is_bounded():
    """``native_dropout_backward`` and attention backward with dropout (the keep mask
    regenerated in the kernel: one draw per score, as in the forward)."""
    from solar.api import trace
    from solar.frontend.torch.training import make_train_step

    model = DropoutAttention().train()
    x = torch.empty(2, 8, 16, device="meta")
    step, args = make_train_step(model, (x,), loss=lambda out: out.float().square().mean())
    ops = [k.op for k in trace(step, args).program.kernels]
    assert "aten.native_dropout_backward.default" in ops
    assert "solar.sdpa_backward.default" in ops
    assert solar.bound_training(model, (x,), "H100", loss=lambda o: o.float().mean()).fused > 0


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_and_affine_grid_equal_pytorch(mode, padding):
    x, grid = rand(2, 3, 5, 6), rand(2, 4, 7, 2, seed=3).clamp(-1.3, 1.3)
    for align in (False, True):
        check(
            lambda x, g, a=align: F.grid_sample(
                x, g, mode=mode, padding_mode=padding, align_corners=a
            ),
            x,
            grid,
        )
        check(lambda t, a=align: F.affine_grid(t, (2, 3, 5, 6), align_corners=a), rand(2, 2, 3))


def test_group_norm_backward_equals_pytorch():
    x, dy, w = rand(2, 6, 4, 5), rand(2, 6, 4, 5, seed=1), rand(6, seed=2)
    _, mean, rstd = aten.native_group_norm(x, w, None, 2, 6, 20, 3, 1e-5)

    def grads(dy, x, mean, rstd, w):
        return aten.native_group_norm_backward(dy, x, mean, rstd, w, 2, 6, 20, 3, [True] * 3)

    check(grads, dy, x, mean, rstd, w)


def test_unet_style_training_step_is_bounded():
    """GroupNorm, SiLU, convolutions and nearest 2x upsampling (a diffusers up block in
    miniature): forward, backward and AdamW."""
    block = nn.Sequential(
        nn.GroupNorm(4, 8),
        nn.SiLU(),
        nn.Upsample(scale_factor=2, mode="nearest"),
        nn.Conv2d(8, 8, 3, padding=1),
    )
    x = torch.empty(1, 8, 8, 8, device="meta")
    bound = solar.bound_training(block, (x,), "H100", loss=lambda o: o.float().square().mean())
    assert bound.fused > 0


def _grad_of(kw):
    def grad(x, g):
        return torch.autograd.grad(F.interpolate(x, **kw), x, g)

    return grad


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_equals_pytorch_forward_and_backward(mode):
    from torch.fx.experimental.proxy_tensor import make_fx

    x = rand(2, 3, 9, 11)
    for kw in [dict(size=(4, 5)), dict(scale_factor=0.3), dict(size=(12, 20))]:
        for align in (False, True):
            kw = dict(kw, mode=mode, antialias=True, align_corners=align)
            check(lambda x, kw=kw: F.interpolate(x, **kw), x)
            y = F.interpolate(x, **kw)

            gm = make_fx(_grad_of(kw))(x.clone().requires_grad_(), torch.zeros(y.shape))
            (node,) = [n for n in gm.graph.nodes if "backward" in str(n.target)]
            check(lambda g, node=node: node.target(g, *node.args[1:]), rand(*y.shape, seed=4))


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
def test_cdist_equals_pytorch(p):
    check(lambda a, b: torch.cdist(a, b, p=p), rand(2, 4, 3), rand(2, 5, 3, seed=1))


def test_float_constants_keep_double_precision_in_float64_programs():
    """The IR's float constants execute as doubles: a float64 cdist with p = 3 (a pow by 1/3)
    equals PyTorch to float64 rounding (in float32, 1/3 put it 1e-8 off)."""
    a, b = rand(2, 4, 3).double(), rand(2, 5, 3, seed=1).double()
    check(lambda a, b: torch.cdist(a, b, p=3.0), a, b, tol=lambda w: (1e-14, 1e-14, False))


def test_refusal_reasons_are_not_stale():
    """Every operator the table of refusal reasons names exists and has no lowering (a lowered
    operator's entry is removed with its lowering's commit)."""
    for name in REASONS:
        packet = getattr(aten, name)
        lowered = [o for o in packet.overloads() if find_lowering(getattr(packet, o)) is not None]
        assert not lowered, f"{name} is lowered ({lowered}) but still has a refusal reason"
