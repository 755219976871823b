"""Convolutions and pooling: traced, lowered, executed as IR on CPU and compared with eager
PyTorch for every option that changes the loop nest; kernel grouping; precision policy; and
cost facts (flops, footprints, combine ops) derived by hand."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from eager_oracle import check as _check

from solar.frontend.torch import UnsupportedOperatorError, trace_torch
from solar.frontend.torch.ops.pool import MAX_WINDOW_CLASSES, adaptive_windows, window_classes
from solar.ir.cost import kernel_io, statement_ops

aten = torch.ops.aten
CONV = "aten.convolution.default"


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + 31 * len(shape) + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype)


def small_ints(*shape, seed=0):
    """Values with many ties (0, 1, 2) as floats: max pooling must pick the first one."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 3, shape, generator=g).float()


def _tol(w):
    """fp32 1e-4, bf16 2e-2 relative to the magnitude (eager CPU rounds partial sums too),
    fp64 1e-10, indices exactly."""
    tol = {torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float64: 1e-10}.get(w.dtype, 0)
    return tol, tol * max(1.0, w.abs().max().item()) if w.dtype == torch.bfloat16 else tol, False


def check(fn, *inputs, kernels=None):
    """The oracle, with this module's tolerances."""
    return _check(fn, *inputs, kernels=kernels, tol=_tol)


def case(fn, *inputs, id):  # noqa: A002
    return pytest.param(fn, inputs, id=id)


def meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


def total_ops(program, kernel=0):
    """Operations of a kernel by op class, summed over its statements."""
    tot: dict[str, int] = {}
    for st in program.kernels[kernel].statements:
        for k, v in statement_ops(program, st).items():
            tot[k] = tot.get(k, 0) + v
    return tot


# ---------------------------------------------------------------------------- convolutions
X1, X2, X3 = rand(2, 6, 11), rand(2, 6, 9, 8), rand(2, 4, 5, 6, 7)
W2 = rand(4, 6, 3, 3, seed=1)
B4 = rand(4, seed=2)

CONVS = [
    # 1D
    case(F.conv1d, X1, rand(4, 6, 3, seed=1), id="conv1d"),
    case(
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
        X1,
        rand(4, 6, 3),
        B4,
        id="1d_s2p1_bias",
    ),
    case(lambda x, w: F.conv1d(x, w, dilation=3, padding=2), X1, rand(4, 6, 3), id="1d_dil"),
    case(lambda x, w: F.conv1d(x, w, groups=2), X1, rand(4, 3, 4), id="1d_groups"),
    case(lambda x, w: F.conv1d(x, w, padding="same"), X1, rand(4, 6, 5), id="1d_same"),
    case(lambda x, w: F.conv1d(x, w), rand(6, 11), rand(4, 6, 3), id="1d_unbatched"),
    # 2D
    case(F.conv2d, X2, W2, id="conv2d"),
    case(F.conv2d, X2, W2, B4, id="2d_bias"),
    case(lambda x, w: F.conv2d(x, w, stride=(2, 3)), X2, W2, id="2d_stride"),
    case(lambda x, w: F.conv2d(x, w, padding=(1, 2)), X2, W2, id="2d_pad"),
    case(lambda x, w: F.conv2d(x, w, dilation=(2, 1)), X2, W2, id="2d_dil"),
    case(lambda x, w: F.conv2d(x, w, padding="same", dilation=2), X2, W2, id="2d_same_dil"),
    case(lambda x, w: F.conv2d(x, w, padding="valid"), X2, W2, id="2d_valid"),
    case(
        lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(3, 1), dilation=(1, 2)),
        X2,
        W2,
        B4,
        id="2d_all_options",
    ),
    case(lambda x, w: F.conv2d(x, w, stride=2, padding=3), X2, rand(4, 6, 4, 5), id="2d_big_pad"),
    case(lambda x, w: F.conv2d(x, w, padding=(4, 1)), X2, W2, id="2d_pad_beyond_kernel"),
    case(lambda x, w, b: F.conv2d(x, w, b, padding=5), X2, W2, B4, id="2d_pad_beyond_bias"),
    case(lambda x, w, b: F.conv2d(x, w, b, groups=3), X2, rand(6, 2, 3, 2), rand(6), id="groups"),
    case(lambda x, w: F.conv2d(x, w, padding=1, groups=6), X2, rand(6, 1, 3, 3), id="depthwise"),
    case(lambda x, w: F.conv2d(x, w, stride=2, groups=6), X2, rand(12, 1, 3, 3), id="dw_mult2"),
    case(F.conv2d, X2, rand(5, 6, 1, 1), rand(5), id="pointwise"),
    case(lambda x, w: F.conv2d(x, w, stride=2), X2, rand(5, 6, 1, 1), id="pointwise_strided"),
    case(
        F.conv2d,
        X2.to(memory_format=torch.channels_last),
        W2.to(memory_format=torch.channels_last),
        id="2d_channels_last",
    ),
    case(lambda x, w: F.conv2d(x, w, padding=1), rand(6, 9, 8), W2, id="2d_unbatched"),
    case(F.conv2d, X2.double(), W2.double(), B4.double(), id="2d_fp64"),
    # 3D
    case(F.conv3d, X3, rand(3, 4, 2, 3, 3), id="conv3d"),
    case(
        lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 2), padding=(1, 0, 2), dilation=(2, 1, 1)),
        X3,
        rand(3, 4, 2, 3, 3),
        rand(3),
        id="3d_all_options",
    ),
    case(lambda x, w: F.conv3d(x, w, groups=2, padding=1), X3, rand(4, 2, 3, 3, 3), id="3d_groups"),
]

TRANSPOSED = [
    case(F.conv_transpose1d, X1, rand(6, 3, 4), id="t1d"),
    case(lambda x, w: F.conv_transpose1d(x, w, stride=2), X1, rand(6, 3, 4), id="t1d_s2"),
    case(
        lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=2), X1, rand(6, 3, 4), id="t1d_s3p2"
    ),
    case(
        lambda x, w: F.conv_transpose1d(x, w, stride=3, output_padding=2),
        X1,
        rand(6, 3, 2),
        id="t1d_taps_lt_stride",  # residue class 2 receives no tap: zeros
    ),
    case(
        lambda x, w: F.conv_transpose1d(x, w, stride=2, dilation=2),
        X1,
        rand(6, 3, 3),
        id="t1d_d2s2",
    ),
    case(
        lambda x, w: F.conv_transpose1d(x, w, stride=2, dilation=3, padding=1),
        X1,
        rand(6, 3, 3),
        id="t1d_d3s2",
    ),
    case(
        lambda x, w: F.conv_transpose1d(x, w, stride=4, dilation=2, padding=3),
        X1,
        rand(6, 3, 5),
        id="t1d_d2s4",
    ),
    case(lambda x, w: F.conv_transpose1d(x, w), rand(6, 11), rand(6, 3, 4), id="t1d_unbatched"),
    case(F.conv_transpose2d, X2, rand(6, 4, 3, 3), id="t2d"),
    case(
        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
        X2,
        rand(6, 4, 3, 3),
        B4,
        id="t2d_s2p1op1_bias",
    ),
    case(
        lambda x, w, b: F.conv_transpose2d(
            x, w, b, stride=(2, 3), padding=(1, 2), output_padding=(1, 0), dilation=(2, 1), groups=3
        ),
        X2,
        rand(6, 2, 3, 4),
        rand(6),
        id="t2d_all_options",
    ),
    case(
        lambda x, w: F.conv_transpose2d(x, w, stride=2, groups=6), X2, rand(6, 1, 4, 4), id="t2d_dw"
    ),
    case(lambda x, w: F.conv_transpose2d(x, w, stride=3), X2, rand(6, 4, 2, 2), id="t2d_s3_k2"),
    case(
        lambda x, w, b: F.conv_transpose3d(
            x, w, b, stride=(2, 1, 2), padding=(1, 0, 0), output_padding=(1, 0, 1)
        ),
        X3,
        rand(4, 3, 3, 2, 3),
        rand(3),
        id="t3d",
    ),
    case(
        lambda x, w: F.conv_transpose3d(x, w, groups=2, dilation=2),
        X3,
        rand(4, 1, 2, 2, 2),
        id="t3d_groups",
    ),
]


@pytest.mark.parametrize("fn, inputs", CONVS + TRANSPOSED)
def test_convolution(fn, inputs):
    trace = check(fn, *inputs)
    assert [k.op for k in trace.program.kernels] == [CONV]


@pytest.mark.parametrize(
    "fn, inputs",
    [
        case(F.conv2d, X2.bfloat16(), W2.bfloat16(), B4.bfloat16(), id="conv2d"),
        case(
            lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1),
            X2.bfloat16(),
            rand(6, 4, 3, 3).bfloat16(),
            id="transposed",
        ),
    ],
)
def test_convolution_bf16(fn, inputs):
    trace = check(fn, *inputs, kernels=[CONV])
    assert all(st.precision is None for st in trace.program.kernels[0].statements)


@pytest.mark.parametrize(
    "module, x",
    [
        (nn.Conv1d(6, 4, 3, stride=2, padding=1), X1),
        (nn.Conv2d(6, 4, 3, padding=1, bias=False), X2),
        (nn.Conv2d(6, 6, 3, padding=1, groups=6, padding_mode="zeros"), X2),
        (nn.Conv3d(4, 2, 2, stride=2), X3),
        (nn.ConvTranspose1d(6, 4, 4, stride=2, padding=1), X1),
        (nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1), X2),
        (nn.ConvTranspose3d(4, 2, 2, stride=2), X3),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, nn.Module) else "",
)
def test_conv_modules(module, x):
    torch.manual_seed(0)
    module.reset_parameters()
    trace = check(module, x, kernels=[CONV])
    assert {trace.program.tensors[n].role for n in trace.program.inputs} == {"weight", "input"}


def test_conv_with_bias_is_one_kernel_bias_then_accumulate():
    trace = check(lambda x, w, b: F.conv2d(x, w, b), X2, W2, B4, kernels=[CONV])
    fill, conv = trace.program.kernels[0].statements
    assert fill.reduce is None and not fill.accumulate and fill.precision is None
    assert conv.reduce == "sum" and conv.accumulate and conv.precision == "tf32"
    assert len(conv.guards) == 0  # no padding: no guards
    io = kernel_io(trace.program, trace.program.kernels[0])
    assert set(io.reads) == {"x", "w", "b"}  # the output is written, never read back


def test_windows_wholly_in_the_padding_are_zero_filled():
    """Padding 4 with a 3-tap kernel on 9 rows: 15 output rows, of which 0, 1, 13, 14 read
    only padding. They are written (zeros) by a fill statement before the contraction
    accumulates, so the kernel writes every output element; the work counts valid taps only:
    rows 2..12 have 1, 2, 3 (x7), 2, 1 = 27 of them."""
    fn = lambda x, w: F.conv2d(x, w, padding=(4, 0))  # noqa: E731
    trace = check(fn, X2, W2, kernels=[CONV])
    p = trace.program
    fill, conv = p.kernels[0].statements
    assert fill.reduce is None and conv.accumulate
    io = kernel_io(p, p.kernels[0])
    assert io.writes["convolution"].elements == 2 * 4 * 15 * 6 and io.writes["convolution"].exact
    assert total_ops(p) == {"tc_tf32": 2 * (2 * 4 * 27 * 6) * (6 * 3)}


def test_same_padding_with_an_even_kernel_pads_first_as_eager_does():
    fn = lambda x, w: F.conv2d(x, w, padding="same")  # noqa: E731
    check(fn, X2, rand(4, 6, 2, 4), kernels=["aten.constant_pad_nd.default", CONV])


def test_padding_is_a_guard_on_the_input_index():
    trace = trace_torch(lambda x, w: F.conv2d(x, w, stride=2, padding=1), (X2, W2))
    (st,) = trace.program.kernels[0].statements
    assert [(str(g.expr), g.lo, g.hi) for g in st.guards] == [("2p+r-1", 0, 9), ("2q+s-1", 0, 8)]


def test_grouped_conv_splits_channels_affinely():
    trace = trace_torch(lambda x, w: F.conv2d(x, w, groups=3), (X2, rand(6, 2, 3, 3)))
    (st,) = trace.program.kernels[0].statements
    x_load, w_load = (e.args[0] if hasattr(e, "args") else e for e in st.expr.args)
    assert str(x_load.index[1]) == "c+2g" and str(w_load.index[0]) == "2g+k"
    assert str(st.out.index[1]) == "2g+k"


@pytest.mark.parametrize(
    "stride, dilation, padding, taps, classes",
    [(2, 1, 0, 3, 2), (2, 2, 0, 3, 1), (3, 1, 0, 2, 2), (1, 3, 2, 3, 1), (4, 2, 3, 5, 2)],
)
def test_transposed_conv_has_one_statement_per_reached_residue_class(
    stride, dilation, padding, taps, classes
):
    fn = lambda x, w: F.conv_transpose1d(x, w, stride=stride, padding=padding, dilation=dilation)  # noqa: E731
    trace = check(fn, X1, rand(6, 3, taps))
    sts = trace.program.kernels[0].statements
    contractions = [st for st in sts if st.reduce == "sum"]
    assert len(contractions) == classes
    # where some output gets no tap at all: a fill (zeros) first, then accumulate
    length = 10 * stride - 2 * padding + dilation * (taps - 1) + 1
    hit = {stride * i + dilation * r - padding for i in range(11) for r in range(taps)}
    assert (len(sts) == classes + 1) == (len(hit & set(range(length))) < length)
    assert all(st.accumulate == (len(sts) > classes) for st in contractions)


# ------------------------------------------------------------------------- precision policy
@pytest.fixture
def restore_tf32_flags():
    cudnn = torch.backends.cudnn
    old = (cudnn.conv.fp32_precision, cudnn.rnn.fp32_precision, cudnn.fp32_precision)
    old_mm = torch.get_float32_matmul_precision()
    yield
    cudnn.conv.fp32_precision, cudnn.rnn.fp32_precision, cudnn.fp32_precision = old
    torch.set_float32_matmul_precision(old_mm)


def conv_precision(trace):
    return {st.precision for st in trace.program.kernels[0].statements if st.reduce}


def test_conv_precision_follows_cudnn_allow_tf32(restore_tf32_flags):
    torch.backends.cudnn.allow_tf32 = False
    assert conv_precision(trace_torch(F.conv2d, (X2, W2))) == {"ieee"}
    torch.backends.cudnn.allow_tf32 = True
    assert conv_precision(trace_torch(F.conv2d, (X2, W2))) == {"tf32"}
    assert conv_precision(trace_torch(F.conv2d, (X2, W2), precision="ieee")) == {"ieee"}


def test_conv_precision_follows_new_fp32_precision_api(restore_tf32_flags):
    cudnn = torch.backends.cudnn
    cudnn.conv.fp32_precision = "ieee"
    assert conv_precision(trace_torch(F.conv2d, (X2, W2))) == {"ieee"}
    cudnn.conv.fp32_precision = "tf32"
    assert conv_precision(trace_torch(F.conv2d, (X2, W2))) == {"tf32"}
    cudnn.conv.fp32_precision = "none"  # inherits cudnn, then generic: "none" -> IEEE
    cudnn.rnn.fp32_precision = "tf32"  # the legacy allow_tf32 flag now refuses to answer
    assert conv_precision(trace_torch(F.conv2d, (X2, W2))) == {"ieee"}
    cudnn.fp32_precision = "tf32"
    assert conv_precision(trace_torch(F.conv2d, (X2, W2))) == {"tf32"}


def test_precision_is_per_operator(restore_tf32_flags):
    """By default a fp32 conv runs TF32 and a fp32 matmul IEEE, in the same program."""
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.allow_tf32 = True

    def f(x, w, m):
        return F.conv2d(x, w).flatten(1) @ m

    trace = check(f, X2, W2, rand(4 * 7 * 6, 5))
    by_op = {
        k.op: {st.precision for st in k.statements if st.reduce} for k in trace.program.kernels
    }
    assert by_op[CONV] == {"tf32"} and by_op["aten.mm.default"] == {"ieee"}
    ops = [statement_ops(trace.program, st) for k in trace.program.kernels for st in k.statements]
    assert {c for o in ops for c in o} == {"tc_tf32", "cuda_fp32"}


# ------------------------------------------------------------------- convolution cost facts
def conv_cost(fn, *shapes, precision=None):
    trace = trace_torch(fn, tuple(meta(*s) for s in shapes), precision=precision)
    p = trace.program
    assert len(p.kernels) == 1
    return p, total_ops(p), kernel_io(p, p.kernels[0])


@pytest.mark.parametrize("policy, unit", [(None, "tc_tf32"), ("ieee", "cuda_fp32")])
def test_cost_resnet_stem_conv(policy, unit):
    """N=8, C=3, K=64, 224x224, 7x7, stride 2, pad 3 -> 112x112. Along each spatial dim the
    valid taps of output p are those with 0 <= 2p + r - 3 < 224: 4 for p=0 (r>=3), 6 for p=1,
    5 for p=111 (r<=4), 7 for the other 109: 778 of the 112*7 = 784 dense taps. The padding
    taps multiply zeros, so the exact work is 2*8*64*3*778^2, below the dense
    2*8*64*112*112*3*7*7 by (784/778)^2."""
    fn = lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=3)  # noqa: E731
    p, ops, io = conv_cost(fn, (8, 3, 224, 224), (64, 3, 7, 7), (64,), precision=policy)
    assert 4 + 6 + 5 + 109 * 7 == 778
    assert ops == {unit: 2 * 8 * 64 * 3 * 778 * 778}
    assert 2 * 8 * 64 * 3 * 778**2 < 2 * 8 * 64 * 112 * 112 * 3 * 7 * 7
    assert io.reads["x"].elements == 8 * 3 * 224 * 224 and io.reads["x"].exact
    assert io.reads["w"].elements == 64 * 3 * 7 * 7
    assert io.reads["b"].elements == 64
    assert io.writes["convolution"].elements == 8 * 64 * 112 * 112
    assert io.read_bytes == 4 * (8 * 3 * 224 * 224 + 64 * 3 * 7 * 7 + 64)
    assert io.write_bytes == 4 * 8 * 64 * 112 * 112
    assert p.kernels[0].statements[1].precision == ("tf32" if policy is None else "ieee")


def test_cost_unpadded_conv_is_the_dense_count():
    """No padding: every output times every tap. 2x16x32x32, 3x3 -> 30x30."""
    _, ops, io = conv_cost(
        lambda x, w: F.conv2d(x, w), (2, 16, 32, 32), (32, 16, 3, 3), precision="tf32"
    )
    assert ops == {"tc_tf32": 2 * 2 * 32 * 30 * 30 * 16 * 3 * 3}
    assert io.reads["x"].elements == 2 * 16 * 32 * 32


def test_cost_dilated_conv():
    """Dilation 2, 3x3, no padding: 16 -> 16 - 2*2 = 12 outputs per dim, dense.
    With padding 2 ('same'): output p reads p + 2r - 2, valid for r >= 1 at p = 0, 1 and
    r <= 1 at p = 14, 15: 4*2 + 12*3 = 44 taps per dim instead of 48."""
    _, ops, io = conv_cost(lambda x, w: F.conv2d(x, w, dilation=2), (1, 8, 16, 16), (8, 8, 3, 3))
    assert ops == {"tc_tf32": 2 * 1 * 8 * 12 * 12 * 8 * 9}
    assert io.reads["x"].elements == 8 * 16 * 16  # the dilated windows still cover the input
    fn = lambda x, w: F.conv2d(x, w, dilation=2, padding=2)  # noqa: E731
    _, ops, io = conv_cost(fn, (1, 8, 16, 16), (8, 8, 3, 3))
    assert ops == {"tc_tf32": 2 * 1 * 8 * 8 * 44 * 44}
    assert io.writes["convolution"].elements == 8 * 16 * 16


def test_cost_dilated_strided_conv_skips_input_rows():
    """Stride 3, dilation 1, 1x1 kernel: only every third row and column is read."""
    fn = lambda x, w: F.conv2d(x, w, stride=3)  # noqa: E731
    _, ops, io = conv_cost(fn, (2, 4, 10, 10), (8, 4, 1, 1))
    assert ops == {"tc_tf32": 2 * 2 * 8 * 4 * 4 * 4}
    assert io.reads["x"].elements == 2 * 4 * 4 * 4  # rows/cols 0, 3, 6, 9


@pytest.mark.parametrize("groups, c, k", [(1, 32, 64), (4, 32, 64), (32, 32, 32), (32, 32, 64)])
def test_cost_grouped_and_depthwise_conv(groups, c, k):
    """Flops = 2*N*K*P*Q*(C/groups)*R*S: each output channel sees only its group's inputs."""
    fn = lambda x, w: F.conv2d(x, w, groups=groups)  # noqa: E731
    _, ops, io = conv_cost(fn, (2, c, 12, 12), (k, c // groups, 3, 3))
    assert ops == {"tc_tf32": 2 * 2 * k * 10 * 10 * (c // groups) * 3 * 3}
    assert io.reads["w"].elements == k * (c // groups) * 9
    assert io.reads["x"].elements == 2 * c * 12 * 12


def test_cost_pointwise_conv_is_a_matmul():
    _, ops, _ = conv_cost(F.conv2d, (4, 64, 14, 14), (128, 64, 1, 1), precision="ieee")
    assert ops == {"cuda_fp32": 2 * 4 * 14 * 14 * 64 * 128}


@pytest.mark.parametrize("groups", [1, 2])
def test_cost_transposed_conv_counts_every_input_pixel_times_every_tap(groups):
    """No padding: each (input pixel, tap) pair lands inside the output, once:
    flops = 2*N*C_in*H_in*W_in*(K_out/groups)*R*S, none for the zero-inserted upsampling."""
    n, cin, h, w, kout, r, s = 2, 8, 5, 6, 4, 3, 3

    def fn(x, wt):
        return F.conv_transpose2d(x, wt, stride=2, output_padding=1, groups=groups)

    p, ops, io = conv_cost(fn, (n, cin, h, w), (cin, kout // groups, r, s))
    assert ops == {"tc_tf32": 2 * n * cin * h * w * (kout // groups) * r * s}
    assert sum(st.reduce == "sum" for st in p.kernels[0].statements) == 4  # 2x2 residues
    assert io.reads["x"].elements == n * cin * h * w
    assert io.reads["wt"].elements == cin * (kout // groups) * r * s
    assert io.writes["convolution"].elements == n * kout * (2 * h + 2) * (2 * w + 2)


def test_cost_transposed_conv_with_padding_drops_the_cropped_taps():
    """Stride 2, 3 taps, pad 1, 5 inputs per dim: tap r of input i lands at 2i + r - 1, in
    [0, 9) except (i=0, r=0) and (i=4, r=2): 15 - 2 = 13 pairs per dim."""
    fn = lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1)  # noqa: E731
    _, ops, io = conv_cost(fn, (2, 8, 5, 5), (8, 4, 3, 3))
    assert ops == {"tc_tf32": 2 * 2 * 8 * 4 * 13 * 13}
    assert io.writes["convolution"].elements == 2 * 4 * 9 * 9


def test_cost_bf16_conv_runs_on_bf16_tensor_cores():
    x, w = meta(2, 16, 8, 8, dtype=torch.bfloat16), meta(16, 16, 3, 3, dtype=torch.bfloat16)
    p = trace_torch(F.conv2d, (x, w)).program
    assert total_ops(p) == {"tc_bf16": 2 * 2 * 16 * 6 * 6 * 16 * 9}
    assert kernel_io(p, p.kernels[0]).read_bytes == 2 * (2 * 16 * 64 + 16 * 16 * 9)


# --------------------------------------------------------------------------------- pooling
P1, P2, P3 = rand(2, 3, 13), rand(2, 3, 9, 10), rand(2, 2, 6, 7, 5)

MAX_POOLS = [
    case(lambda x: F.max_pool1d(x, 3), P1, id="1d"),
    case(
        lambda x: F.max_pool1d(x, 4, 2, 2, dilation=2, ceil_mode=True, return_indices=True),
        P1,
        id="1d_all",
    ),
    case(lambda x: F.max_pool2d(x, 2), P2, id="2d"),
    case(lambda x: F.max_pool2d(x, 2, return_indices=True), P2, id="2d_indices"),
    case(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), P2, id="2d_s2p1"),
    case(lambda x: F.max_pool2d(x, (3, 2), (1, 2), (1, 0), return_indices=True), P2, id="2d_rect"),
    case(lambda x: F.max_pool2d(x, 3, 2, dilation=2, return_indices=True), P2, id="2d_dil"),
    case(lambda x: F.max_pool2d(x, 2, 2, ceil_mode=True, return_indices=True), P2, id="2d_ceil"),
    case(
        lambda x: F.max_pool2d(x, 3, 2, 1, dilation=(2, 1), ceil_mode=True, return_indices=True),
        P2,
        id="2d_all",
    ),
    case(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), P2 - 5, id="2d_negative_pad"),
    case(
        lambda x: F.max_pool2d(x, 3, 1, 1, return_indices=True),
        small_ints(2, 3, 9, 10),
        id="2d_ties",
    ),
    case(
        lambda x: F.max_pool2d(x, 2, 2, 1, ceil_mode=True, return_indices=True),
        small_ints(2, 3, 9, 10),
        id="2d_ties_ceil",
    ),
    case(lambda x: F.max_pool2d(x, 2, return_indices=True), rand(3, 9, 10), id="2d_unbatched"),
    case(lambda x: F.max_pool3d(x, 2, return_indices=True), P3, id="3d"),
    case(
        lambda x: F.max_pool3d(
            x,
            (3, 2, 2),
            (2, 1, 2),
            (1, 0, 1),
            dilation=(1, 2, 1),
            ceil_mode=True,
            return_indices=True,
        ),
        P3,
        id="3d_all",
    ),
    case(
        lambda x: F.max_pool3d(x, 3, 1, 1, return_indices=True),
        small_ints(2, 2, 6, 7, 5),
        id="3d_ties",
    ),
    case(nn.MaxPool2d(3, 2, 1), P2, id="module"),
    case(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), P2.bfloat16(), id="2d_bf16"),
]

AVG_POOLS = [
    case(lambda x: F.avg_pool1d(x, 3), P1, id="1d"),
    case(
        lambda x: F.avg_pool1d(x, 4, 3, 2, ceil_mode=True, count_include_pad=False), P1, id="1d_all"
    ),
    case(lambda x: F.avg_pool2d(x, 2), P2, id="2d"),
    case(lambda x: F.avg_pool2d(x, 3, 2, 1), P2, id="2d_pad_include"),
    case(lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), P2, id="2d_pad_exclude"),
    case(lambda x: F.avg_pool2d(x, 2, 2, ceil_mode=True), P2, id="2d_ceil"),
    case(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), P2, id="2d_ceil_pad_include"),
    case(
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        P2,
        id="2d_ceil_pad_exclude",
    ),
    case(
        lambda x: F.avg_pool2d(x, (3, 2), (1, 2), (1, 1), divisor_override=4), P2, id="2d_divisor"
    ),
    case(lambda x: F.avg_pool2d(x, 2), rand(3, 9, 10), id="2d_unbatched"),
    case(lambda x: F.avg_pool3d(x, 2), P3, id="3d"),
    case(
        lambda x: F.avg_pool3d(
            x, (3, 2, 3), (2, 1, 2), (1, 1, 0), ceil_mode=True, count_include_pad=False
        ),
        P3,
        id="3d_all_exclude",
    ),
    case(lambda x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True), P3, id="3d_ceil_include"),
    case(lambda x: F.avg_pool3d(x, 2, 1, 1, divisor_override=3), P3, id="3d_divisor"),
    case(nn.AvgPool2d(3, 2, 1, count_include_pad=False), P2, id="module"),
    case(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), P2.bfloat16(), id="2d_bf16"),
]

ADAPTIVE = [
    case(lambda x: F.adaptive_avg_pool1d(x, 4), P1, id="avg1d_nonuniform"),
    case(lambda x: F.adaptive_avg_pool2d(x, (3, 5)), P2, id="avg2d_uniform"),
    case(lambda x: F.adaptive_avg_pool2d(x, (4, 3)), P2, id="avg2d_nonuniform"),
    case(lambda x: F.adaptive_avg_pool2d(x, (12, 13)), P2, id="avg2d_upsample"),
    case(lambda x: F.adaptive_avg_pool2d(x, (4, None)), P2, id="avg2d_none"),
    case(lambda x: F.adaptive_avg_pool2d(x, 3), rand(3, 9, 10), id="avg2d_unbatched"),
    case(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 4)), P3, id="avg3d"),
    case(nn.AdaptiveAvgPool2d((5, 4)), P2, id="avg_module"),
    case(lambda x: F.adaptive_max_pool1d(x, 5, return_indices=True), P1, id="max1d"),
    case(lambda x: F.adaptive_max_pool2d(x, (3, 5), return_indices=True), P2, id="max2d_uniform"),
    case(
        lambda x: F.adaptive_max_pool2d(x, (4, 7), return_indices=True), P2, id="max2d_nonuniform"
    ),
    case(
        lambda x: F.adaptive_max_pool2d(x, (4, 7), return_indices=True),
        small_ints(2, 3, 9, 10),
        id="max2d_ties",
    ),
    case(
        lambda x: F.adaptive_max_pool2d(x, (11, 12), return_indices=True), P2, id="max2d_upsample"
    ),
    case(lambda x: F.adaptive_max_pool3d(x, (4, 3, 2), return_indices=True), P3, id="max3d"),
    case(lambda x: F.adaptive_avg_pool2d(x, (4, 3)), P2.bfloat16(), id="avg2d_bf16"),
]


@pytest.mark.parametrize("fn, inputs", MAX_POOLS)
def test_max_pool(fn, inputs):
    trace = check(fn, *inputs)
    assert len(trace.program.kernels) == 1
    assert trace.program.kernels[0].op.startswith("aten.max_pool")


@pytest.mark.parametrize("fn, inputs", AVG_POOLS)
def test_avg_pool(fn, inputs):
    trace = check(fn, *inputs)
    assert len(trace.program.kernels) == 1
    assert trace.program.kernels[0].op.startswith("aten.avg_pool")


@pytest.mark.parametrize("fn, inputs", ADAPTIVE)
def test_adaptive_pool(fn, inputs):
    trace = check(fn, *inputs)
    assert len(trace.program.kernels) == 1
    assert "adaptive" in trace.program.kernels[0].op


def test_max_pool_pads_with_minus_infinity_not_zero():
    x = -1 - rand(1, 1, 4, 4).abs()  # all negative: a zero pad would win
    trace = check(lambda x: F.max_pool2d(x, 3, 1, 1, return_indices=True), x)
    values, indices = trace.program.kernels[0].statements
    assert values.reduce == "max" and len(values.guards) == 2
    assert indices.reduce == "min" and indices.guards == values.guards


def test_max_pool_indices_are_the_first_maximum_in_the_window():
    x = torch.tensor([[[[1.0, 3.0, 3.0], [3.0, 0.0, 3.0], [2.0, 3.0, 1.0]]]])
    _, got = F.max_pool2d(x, 3, return_indices=True)
    assert got.item() == 1  # torch itself: first occurrence in row-major window order
    check(lambda x: F.max_pool2d(x, 3, return_indices=True), x)
    check(lambda x: F.adaptive_max_pool2d(x, 1, return_indices=True), x)


@pytest.mark.parametrize(
    "size, out, classes",
    [(8, 4, 1), (9, 3, 1), (7, 3, 1), (10, 4, 2), (14, 6, 2), (100, 40, 2), (5, 3, 3), (1, 3, 1)],
)
def test_adaptive_window_classes_are_exact(size, out, classes):
    got = window_classes(size, out)
    assert len(got) == classes
    windows = {}
    for wc in got:
        for j in range(wc.count):
            start = wc.start + wc.in_step * j
            windows[wc.first + wc.out_step * j] = (start, start + wc.size)
    assert [windows[i] for i in range(out)] == adaptive_windows(size, out)


def test_adaptive_pool_beyond_the_class_limit_is_a_clear_error():
    x = rand(1, 1, 14, 14)
    assert len(window_classes(14, 9)) == 9
    check(lambda x: F.adaptive_avg_pool1d(x, 9), x[0, 0])  # 9 classes: fine
    match = f"81 affine classes, more than the {MAX_WINDOW_CLASSES}"
    with pytest.raises(UnsupportedOperatorError, match=match):
        trace_torch(lambda x: F.adaptive_avg_pool2d(x, 9), x)


# ------------------------------------------------------------------------ pooling cost facts
def pool_ops(fn, shape):
    p = trace_torch(fn, (meta(*shape),)).program
    return p, [statement_ops(p, st) for st in p.kernels[0].statements]


def test_cost_max_pool_combines_taps_minus_one_per_output():
    """2x2 windows, stride 2, no padding: 8x8 -> 4x4, 3 maximum ops per output."""
    p, (values, _) = pool_ops(lambda x: F.max_pool2d(x, 2), (2, 3, 8, 8))
    assert values == {"cuda_fp32": 2 * 3 * 16 * 3}
    io = kernel_io(p, p.kernels[0])
    assert io.reads == {"x": io.reads["x"]} and io.reads["x"].elements == 2 * 3 * 64
    assert io.write_bytes == 2 * 3 * 16 * (4 + 8)  # values and int64 indices


def test_cost_max_pool_with_padding_counts_only_valid_taps():
    """2x2, stride 2, pad 1 on 8x8 -> 5x5. Window of output p is [2p - 1, 2p + 1): 1 valid
    tap for p = 0 and p = 4, 2 for p = 1, 2, 3: 8 per dim, 64 per plane (the windows tile
    the input); combines = valid taps - outputs = 64 - 25 per plane, padding costs nothing."""
    _, (values, _) = pool_ops(lambda x: F.max_pool2d(x, 2, 2, 1), (2, 3, 8, 8))
    assert values == {"cuda_fp32": 2 * 3 * (8 * 8 - 25)}


def test_cost_max_pool_overlapping_windows_credit_reuse():
    """3x3, stride 2, pad 1 on 8x8 -> 4x4: the windows hold 11 valid taps per dim (2, 3, 3, 3),
    121 per plane, but overlap. The IR counts a non-contraction reduction's combines as
    (distinct terms - outputs) = 64 - 16 per plane, a lower bound below 121 - 16 that credits
    sliding-window reuse (separable / van Herk-Gil-Werman running maxima)."""
    _, (values, _) = pool_ops(lambda x: F.max_pool2d(x, 3, 2, 1), (2, 3, 8, 8))
    assert values == {"cuda_fp32": 2 * 3 * (64 - 16)}
    assert 64 - 16 < 11 * 11 - 16


def test_cost_max_pool_dilated_ceil_mode():
    """1D, 11 inputs, kernel 2, dilation 3, stride 2, ceil_mode: ceil((11 - 4)/2) + 1 = 5
    outputs with windows {2p, 2p + 3} (disjoint: even and odd); the last one, {8, 11},
    overhangs the input and has 1 valid tap: 9 valid taps - 5 outputs = 4 combines per row."""
    fn = lambda x: F.max_pool1d(x, 2, 2, dilation=3, ceil_mode=True)  # noqa: E731
    p, (values, _) = pool_ops(fn, (4, 11))
    assert p.tensors[p.outputs[0]].shape == (4, 5)
    assert values == {"cuda_fp32": 4 * (9 - 5)}


def test_cost_avg_pool():
    """2x2/2 on 8x8: 3 adds per output, then one divide by the constant 4 per output."""
    p, (sums, divide) = pool_ops(lambda x: F.avg_pool2d(x, 2), (2, 3, 8, 8))
    assert sums == {"cuda_fp32": 2 * 3 * 16 * 3} and divide == {"cuda_fp32": 2 * 3 * 16}
    io = kernel_io(p, p.kernels[0])
    assert io.read_bytes == 4 * 2 * 3 * 64 and io.write_bytes == 4 * 2 * 3 * 16


def test_cost_avg_pool_with_padding():
    """2x2/2 pad 1 on 8x8 -> 5x5, count_include_pad=False: adds = valid taps - outputs =
    64 - 25 per plane as for max. The divisor (valid taps per dim: 1, 2, 2, 2, 1) is
    min(2p + 1, 8) - max(2p - 1, 0), evaluated per distinct p (3 ops x 5) and per distinct q
    (3 x 5), one multiply per (p, q) (25), then one divide per output."""
    fn = lambda x: F.avg_pool2d(x, 2, 2, 1, count_include_pad=False)  # noqa: E731
    _, (sums, divide) = pool_ops(fn, (2, 3, 8, 8))
    assert sums == {"cuda_fp32": 2 * 3 * (64 - 25)}
    assert divide == {"cuda_fp32": 2 * 3 * 25 + 3 * 5 + 3 * 5 + 25}
    # counting the padding every window has min(2, 8 + 2 - 2p) = 2 taps per dim: constant 4
    p, (sums, divide) = pool_ops(lambda x: F.avg_pool2d(x, 2, 2, 1), (2, 3, 8, 8))
    assert sums == {"cuda_fp32": 2 * 3 * (64 - 25)} and divide == {"cuda_fp32": 2 * 3 * 25}
    assert str(p.kernels[0].statements[1].expr).endswith("/ 4)")


def test_cost_adaptive_pools():
    """14x14 -> 7x7 is one uniform class (2x2/2 windows): 3 adds and 1 divide per output.
    10 -> 4 needs two classes per dim, windows [0,3) [2,5) | [5,8) [7,10): each of the 2x2
    class combinations reads a 5x5 block for 2x2 outputs: 25 - 4 combines (distinct terms -
    outputs), 4 * 21 = 100 - 16 per plane."""
    _, ops = pool_ops(lambda x: F.adaptive_avg_pool2d(x, 7), (2, 3, 14, 14))
    assert ops == [{"cuda_fp32": 2 * 3 * 49 * 3}, {"cuda_fp32": 2 * 3 * 49}]
    p, ops = pool_ops(lambda x: F.adaptive_max_pool2d(x, 4), (2, 3, 10, 10))
    assert len(ops) == 2 * 4  # 2x2 class combinations, values then indices
    assert [o["cuda_fp32"] for o in ops[:4]] == [2 * 3 * (25 - 4)] * 4
    assert sum(o["cuda_fp32"] for o in ops[:4]) == 2 * 3 * (100 - 16)
    io = kernel_io(p, p.kernels[0])
    assert io.reads["x"].elements == 2 * 3 * 100 and io.reads["x"].exact
