"""More aten operators: int8 GEMM (``_int_mm``), ``_trilinear`` (``F.bilinear``),
``multi_margin_loss``, pixel (un)shuffle, remainder/fmod/trunc, bitwise logic, isnan/isinf,
inverse trigonometric and hyperbolic functions, ``div(rounding_mode="trunc")``. Each is traced,
lowered, executed as IR on CPU and compared with eager PyTorch, with its kernels checked; the
contractions' costs are derived by hand. Also the :class:`LoweringContext` API the lowerings
use (keywords forwarded to the builder, kernels opened with sequential loops)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from eager_oracle import check

from solar.frontend.torch import LOWERINGS, lowering, trace_torch
from solar.interp.torch.execute import execute
from solar.ir.affine import Affine
from solar.ir.cost import kernel_io, program_io, statement_ops
from solar.ir.ops import SCALAR_OPS
from solar.ir.program import Guard, Scan
from solar.ir.scalar import call

aten = torch.ops.aten


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + 11 * len(shape) + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype)


def ints(*shape, lo=-9, hi=10, dtype=torch.int64, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


def nonzero(*shape, dtype=torch.int64, seed=2):
    """Integers in [-6, 6] without 0 (integer division by zero raises in eager)."""
    x = ints(*shape, lo=1, hi=7, seed=seed)
    return (x * torch.where(ints(*shape, lo=0, hi=2, seed=seed + 1) > 0, 1, -1)).to(dtype)


def unit(*shape, seed=0):
    """Values in (-1, 1), the domain of asin/acos."""
    return torch.tanh(rand(*shape, seed=seed))


def special(*shape):
    """Random values with NaN, +inf and -inf among them."""
    x = rand(*shape).flatten()
    x[1], x[4], x[7] = math.nan, math.inf, -math.inf
    return x.reshape(shape)


def total_ops(program):
    ops: dict[str, int] = {}
    for k in program.kernels:
        for st in k.statements:
            for cls, n in statement_ops(program, st, k).items():
                ops[cls] = ops.get(cls, 0) + n
    return ops


def case(fn, *inputs, kernels, id):  # noqa: A002
    return pytest.param(fn, inputs, kernels, id=id)


X = rand(3, 5)
Y = rand(3, 5, seed=1) + 0.5
I = ints(3, 5)  # noqa: E741
D = nonzero(3, 5)
B1, B2 = rand(3, 5) > 0, rand(3, 5, seed=1) > 0
ELEMENTWISE = [
    # remainder: the divisor's sign (Python's %); fmod: the dividend's
    case(lambda x, y: torch.remainder(x, y), X, Y, kernels=["aten.remainder.Tensor"], id="rem"),
    case(lambda x: torch.remainder(x, -0.7), X, kernels=["aten.remainder.Scalar"], id="rem_s"),
    case(lambda x: 3 % x, Y, kernels=["aten.remainder.Scalar_Tensor"], id="rem_rs"),
    case(lambda i, d: i % d, I, D, kernels=["aten.remainder.Tensor"], id="rem_int"),
    case(lambda i: i % -4, I, kernels=["aten.remainder.Scalar"], id="rem_int_s"),
    case(lambda x, y: torch.fmod(x, y), X, Y, kernels=["aten.fmod.Tensor"], id="fmod"),
    case(lambda x: torch.fmod(x, 0.7), X, kernels=["aten.fmod.Scalar"], id="fmod_s"),
    case(lambda i, d: torch.fmod(i, d), I, D, kernels=["aten.fmod.Tensor"], id="fmod_int"),
    case(lambda x: x.remainder_(0.3), X.clone(), kernels=["aten.remainder_.Scalar"], id="rem_"),
    case(torch.trunc, 3 * X, kernels=["aten.trunc.default"], id="trunc"),
    case(
        lambda x, y: torch.div(x, y, rounding_mode="trunc"),
        3 * X,
        Y,
        kernels=["aten.div.Tensor_mode"],
        id="div_trunc",
    ),
    case(
        lambda i, d: torch.div(i, d, rounding_mode="trunc"),
        I,
        D,
        kernels=["aten.div.Tensor_mode"],
        id="div_trunc_int",
    ),
    case(
        lambda x: torch.div(x, -0.3, rounding_mode="trunc"),
        X,
        kernels=["aten.div.Tensor_mode"],
        id="div_trunc_s",
    ),
    # bitwise logic on integers and bools
    case(lambda a, b: a & b, I, D, kernels=["aten.bitwise_and.Tensor"], id="and"),
    case(lambda a, b: a | b, I, D, kernels=["aten.bitwise_or.Tensor"], id="or"),
    case(lambda a, b: a ^ b, I, D, kernels=["aten.bitwise_xor.Tensor"], id="xor"),
    case(lambda a: a & 6, I, kernels=["aten.bitwise_and.Scalar"], id="and_s"),
    case(lambda a: a ^ -3, I, kernels=["aten.bitwise_xor.Scalar"], id="xor_s"),
    case(lambda a, b: a & b, B1, B2, kernels=["aten.bitwise_and.Tensor"], id="and_bool"),
    case(lambda a, b: a | b, B1, B2, kernels=["aten.bitwise_or.Tensor"], id="or_bool"),
    case(lambda a, b: a ^ b, B1, B2, kernels=["aten.bitwise_xor.Tensor"], id="xor_bool"),
    case(lambda a: ~a, I, kernels=["aten.bitwise_not.default"], id="not"),
    case(lambda a: ~a, B1, kernels=["aten.bitwise_not.default"], id="not_bool"),
    case(lambda a: ~a, I.to(torch.int8), kernels=["aten.bitwise_not.default"], id="not_int8"),
    case(
        lambda a, b: a.to(torch.int32) & b, I, D, kernels=None, id="and_promoted"
    ),  # int32 & int64 -> int64
    # classification (bool out)
    case(torch.isnan, special(3, 5), kernels=["aten.isnan.default"], id="isnan"),
    case(torch.isinf, special(3, 5), kernels=["aten.isinf.default"], id="isinf"),
    case(torch.isposinf, special(3, 5), kernels=["aten.isposinf.default"], id="isposinf"),
    case(torch.isneginf, special(3, 5), kernels=["aten.isneginf.default"], id="isneginf"),
    case(torch.isnan, I, kernels=["aten.isnan.default"], id="isnan_int"),
    case(
        lambda x: aten.isfinite.default(x), special(3, 5), kernels=None, id="isfinite"
    ),  # torch.isfinite decomposes; the aten op too
    case(torch.isfinite, special(3, 5), kernels=None, id="isfinite_decomposed"),
    # trigonometric and hyperbolic
    case(torch.atan, 3 * X, kernels=["aten.atan.default"], id="atan"),
    case(torch.atan2, X, Y - 0.5, kernels=["aten.atan2.default"], id="atan2"),
    case(torch.asin, unit(3, 5), kernels=["aten.asin.default"], id="asin"),
    case(torch.acos, unit(3, 5), kernels=["aten.acos.default"], id="acos"),
    case(torch.sinh, X, kernels=["aten.sinh.default"], id="sinh"),
    case(torch.cosh, X, kernels=["aten.cosh.default"], id="cosh"),
    case(torch.tan, X, kernels=["aten.tan.default"], id="tan"),
    case(torch.sinh, X.half(), kernels=["aten.sinh.default"], id="sinh_fp16"),
    # take_along_dim records remainder (wrapping negative indices) and gather
    case(
        lambda x, i: torch.take_along_dim(x, i, 1),
        X,
        ints(3, 4, lo=-5, hi=5),
        kernels=None,
        id="take_along_dim",
    ),
]


@pytest.mark.parametrize("fn, inputs, kernels", ELEMENTWISE)
def test_elementwise(fn, inputs, kernels):
    trace = check(fn, *inputs, kernels=kernels)
    if kernels is not None:
        assert all(len(k.statements) == 1 for k in trace.program.kernels)


def test_take_along_dim_is_remainder_then_gather():
    trace = check(lambda x, i: torch.take_along_dim(x, i, 1), X, ints(3, 4, lo=-5, hi=5))
    assert [k.op for k in trace.program.kernels] == [
        "aten.remainder.Scalar",
        "aten.gather.default",
    ]


def test_bitwise_not_is_owned_by_the_elementwise_family():
    from solar.frontend.torch.ops import elementwise

    assert LOWERINGS[aten.bitwise_not.default].__module__ == elementwise.__name__


def test_label_smoothed_cross_entropy_still_lowers():
    """``F.cross_entropy`` with label smoothing and an ignore index records ``bitwise_not``."""
    x, t = rand(4, 6), torch.tensor([1, -100, 3, 5])
    trace = check(lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), x, t)
    assert "aten.bitwise_not.default" in [k.op for k in trace.program.kernels]


@pytest.mark.parametrize(
    "name, alu, sfu",
    [
        ("trunc", 1, 0),
        ("fmod", 4, 0),
        ("remainder", 4, 0),
        ("bitwise_and", 1, 0),
        ("bitwise_not", 1, 0),
        ("isnan", 1, 0),
        ("isinf", 1, 0),
        ("isfinite", 1, 0),
        ("atan", 4, 0),
        ("atan2", 5, 0),
        ("asin", 3, 0),
        ("acos", 4, 0),
        ("tan", 1, 2),
        ("sinh", 3, 1),
        ("cosh", 3, 1),
    ],
)
def test_scalar_op_costs(name, alu, sfu):
    op = SCALAR_OPS[name]
    assert (op.alu, op.sfu) == (alu, sfu)


def test_elementwise_costs_per_element():
    n = 3 * 5
    p = check(lambda x: torch.remainder(x, 0.7), X).program
    assert total_ops(p) == {"cuda_fp32": 4 * n}
    p = check(lambda x, y: torch.div(x, y, rounding_mode="trunc"), X, Y).program
    assert total_ops(p) == {"cuda_fp32": 2 * n}  # a divide and a trunc
    p = check(lambda a, b: a ^ b, I, D).program
    assert total_ops(p) == {"cuda_int32": n}
    p = check(torch.tan, X).program
    assert total_ops(p) == {"cuda_fp32": n, "sfu": 2 * n}
    p = check(torch.isnan, X).program
    assert total_ops(p) == {"cuda_fp32": n}


# --------------------------------------------------------------------------------- _int_mm


def int8(*shape, seed=0):
    return ints(*shape, lo=-128, hi=128, dtype=torch.int8, seed=seed)


def test_int_mm_matches_eager_and_runs_on_int8_tensor_cores():
    m, k, n = 24, 40, 16
    a, b = int8(m, k), int8(k, n, seed=3)
    trace = check(torch._int_mm, a, b, kernels=["aten._int_mm.default"])
    p = trace.program
    (kernel,) = p.kernels
    (st,) = kernel.statements
    assert p.tensors[st.out.tensor].dtype == "int32"
    assert total_ops(p) == {"tc_int8": 2 * m * n * k}
    io = kernel_io(p, kernel)
    assert io.exact
    assert (io.read_bytes, io.write_bytes) == (m * k + k * n, 4 * m * n)
    assert program_io(p).bytes == m * k + k * n + 4 * m * n


def test_int_mm_of_a_transposed_weight_and_a_dequantizing_epilogue():
    """W8A8: ``_int_mm(x, w.t())`` (a view), then fp32 scales: one GEMM kernel, then the
    elementwise epilogue's kernels."""
    x, w = int8(32, 16), int8(8, 16, seed=5)
    xs, ws = rand(32, 1).abs(), rand(8).abs()
    fn = lambda x, w, xs, ws: (torch._int_mm(x, w.t()).float() * xs * ws).to(torch.bfloat16)  # noqa: E731
    trace = check(fn, x, w, xs, ws)
    ops = [k.op for k in trace.program.kernels]
    assert ops[0] == "aten._int_mm.default" and ops.count("aten._int_mm.default") == 1
    assert total_ops(trace.program)["tc_int8"] == 2 * 32 * 8 * 16


# ------------------------------------------------------------------------- _trilinear


BILINEAR = [
    ((6, 4), (6, 5), 3, True),
    ((6, 7), (6, 2), 3, False),
    ((2, 3, 4), (2, 3, 4), 5, True),  # leading dims are flattened by F.bilinear
    ((5, 8), (5, 8), 2, True),
]


@pytest.mark.parametrize("s1, s2, out, bias", BILINEAR)
def test_bilinear_matches_eager(s1, s2, out, bias):
    x1, x2 = rand(*s1), rand(*s2, seed=1)
    w = rand(out, s1[-1], s2[-1], seed=2)
    b = rand(out, seed=3) if bias else None
    trace = check(lambda x1, x2, w: F.bilinear(x1, x2, w, b), x1, x2, w)
    ops = [k.op for k in trace.program.kernels]
    assert ops.count("aten._trilinear.default") == 1
    assert ops[-1] == ("aten.add.Tensor" if bias else "aten._trilinear.default")


def test_bilinear_costs_by_hand():
    """``y[b,o] = Σ_ij x1[b,i] W[o,i,j] x2[b,j]`` with B=8, I=6, J=5, O=3: of the pairings
    (x1·W: 2BOIJ + 2BOJ = 1680; W·x2: 2BOIJ + 2BOI = 1728; x1⊗x2 then W: BIJ + 2BOIJ = 1680)
    the first of the cheapest, ``t[b,o,j] = Σ_i x1[b,i] W[o,i,j]`` (eager's), then
    ``y[b,o] = Σ_j t[b,o,j] x2[b,j]``, both contractions (IEEE fp32: CUDA cores). DRAM: the
    inputs once, the output once; the intermediate is kernel-local."""
    bsz, i, j, o = 8, 6, 5, 3
    x1, x2, w = rand(bsz, i), rand(bsz, j, seed=1), rand(o, i, j, seed=2)
    trace = check(lambda x1, x2, w: F.bilinear(x1, x2, w), x1, x2, w)
    p = trace.program
    (kernel,) = p.kernels
    first, second = kernel.statements
    assert first.reduce == second.reduce == "sum"
    assert p.tensors[first.out.tensor].role == "local"
    assert p.tensors[first.out.tensor].shape == (bsz, o, j)
    assert [d.name for d in first.reduction_dims] == ["d2"]  # i
    assert [d.name for d in second.reduction_dims] == ["d3"]  # j
    assert total_ops(p) == {"cuda_fp32": 2 * bsz * o * i * j + 2 * bsz * o * j}
    io = kernel_io(p, kernel)
    assert io.exact
    assert io.read_bytes == 4 * (bsz * i + bsz * j + o * i * j)
    assert io.write_bytes == 4 * bsz * o


def test_bilinear_under_tf32_runs_on_tensor_cores():
    x1, x2, w = rand(4, 6), rand(4, 5, seed=1), rand(3, 6, 5, seed=2)
    trace = trace_torch(lambda x1, x2, w: F.bilinear(x1, x2, w), (x1, x2, w), precision="tf32")
    assert all(st.precision == "tf32" for st in trace.program.kernels[0].statements)
    assert total_ops(trace.program) == {"tc_tf32": 2 * 4 * 3 * 6 * 5 + 2 * 4 * 3 * 5}


def test_bilinear_takes_the_outer_product_first_when_it_is_cheaper():
    """Many outputs, few features: x1⊗x2 (B·I·J multiplies) then one contraction over
    (i, j) beats contracting W first (2·B·O·J)."""
    bsz, i, j, o = 4, 2, 3, 16
    x1, x2, w = rand(bsz, i), rand(bsz, j, seed=1), rand(o, i, j, seed=2)
    trace = check(lambda x1, x2, w: F.bilinear(x1, x2, w), x1, x2, w)
    first, second = trace.program.kernels[0].statements
    assert first.reduce is None and not first.reduction_dims
    assert len(second.reduction_dims) == 2
    assert total_ops(trace.program) == {"cuda_fp32": bsz * i * j + 2 * bsz * o * i * j}


TRILINEAR = [
    # (shapes, expand1, expand2, expand3, sumdim)
    (((2, 3), (3, 4), (2, 4)), [2], [0], [1], [1]),
    (((2, 3), (3, 4), (2, 4)), [2], [0], [1], []),
    (((2, 3), (3, 4), (2, 4)), [2], [0], [1], [0, 1, 2]),
    (((2, 3), (3, 4), (2, 4)), [2], [0], [1], [-1]),
    (((1, 3), (3, 4), (2, 4)), [2], [0], [1], [1]),  # a broadcast size-1 dim
    (((3, 4), (5, 4, 6), (3, 6)), [1, 3], [0], [1, 2], [2, 3]),  # F.bilinear's form
]


@pytest.mark.parametrize("shapes, e1, e2, e3, sumdim", TRILINEAR)
def test_trilinear_matches_eager(shapes, e1, e2, e3, sumdim):
    a, b, c = (rand(*s, seed=k) for k, s in enumerate(shapes))
    fn = lambda a, b, c: aten._trilinear(a, b, c, e1, e2, e3, sumdim)  # noqa: E731
    check(fn, a, b, c, kernels=["aten._trilinear.default"])


# ----------------------------------------------------------------------- multi_margin_loss

SCORES, LABELS = rand(6, 5), torch.tensor([0, 4, 2, 2, 1, 3])
WEIGHT = rand(5, seed=4).abs() + 0.1
MARGIN = [
    pytest.param(dict(), id="default"),
    pytest.param(dict(p=2), id="p2"),
    pytest.param(dict(margin=0.3), id="margin"),
    pytest.param(dict(margin=-0.2, p=2), id="negative_margin"),
    pytest.param(dict(weight=WEIGHT), id="weight"),
    pytest.param(dict(reduction="sum"), id="sum"),
    pytest.param(dict(reduction="none"), id="none"),
    pytest.param(dict(reduction="none", weight=WEIGHT, p=2), id="none_weight_p2"),
]


@pytest.mark.parametrize("kw", MARGIN)
def test_multi_margin_loss(kw):
    trace = check(
        lambda x, t: F.multi_margin_loss(x, t, **kw),
        SCORES,
        LABELS,
        kernels=None if "weight" in kw else ["aten.multi_margin_loss.default"],
    )
    ops = [k.op for k in trace.program.kernels]
    assert ops.count("aten.multi_margin_loss.default") == 1


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_multi_margin_loss_of_one_sample(reduction):
    x, t = rand(7), torch.tensor(3)
    check(lambda x, t: F.multi_margin_loss(x, t, reduction=reduction), x, t)


def test_multi_margin_loss_of_one_sample_unreduced():
    """Eager returns a 0-dim loss, torch's meta function (so the trace) a ``(1,)`` one."""
    x, t = rand(7), torch.tensor(3)
    fn = lambda x, t: F.multi_margin_loss(x, t, reduction="none")  # noqa: E731
    trace = trace_torch(fn, (x, t))
    (got,) = execute(trace.program, trace.values(fn, (x, t))).values()
    torch.testing.assert_close(got.reshape(()), fn(x, t))


def test_multi_margin_loss_cost_and_traffic():
    """Per element an add, a max and the selector multiply (3 n c), per row the hoisted
    ``margin - x[n, y]`` (n) and the row sum's combines (n c - n); then n - 1 combines of the
    row sums and one divide: 4 n c + n flops. DRAM: the scores and labels once, the scalar
    loss (the gathered ``x[n, y]`` lies inside the scores already read)."""
    n, c = SCORES.shape
    trace = check(lambda x, t: F.multi_margin_loss(x, t), SCORES, LABELS)
    p = trace.program
    assert total_ops(p) == {"cuda_fp32": 4 * n * c + n}
    io = kernel_io(p, p.kernels[0])
    assert io.read_bytes == 4 * n * c + 8 * n
    assert io.write_bytes == 4


# -------------------------------------------------------------------- pixel (un)shuffle

PIXEL = [
    case(lambda x: F.pixel_shuffle(x, 2), rand(2, 8, 3, 4), kernels=None, id="shuffle"),
    case(lambda x: F.pixel_shuffle(x, 3), rand(9, 2, 2), kernels=None, id="shuffle_3d"),
    case(lambda x: F.pixel_shuffle(x, 2), rand(2, 3, 4, 2, 3), kernels=None, id="shuffle_5d"),
    case(lambda x: F.pixel_unshuffle(x, 2), rand(2, 3, 4, 6), kernels=None, id="unshuffle"),
    case(lambda x: F.pixel_unshuffle(x, 3), rand(1, 6, 3), kernels=None, id="unshuffle_3d"),
    case(
        lambda x: F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2),
        rand(2, 8, 3, 4),
        kernels=None,
        id="roundtrip",
    ),
    case(
        lambda x: F.pixel_shuffle(x.permute(0, 3, 1, 2), 2),
        rand(2, 3, 4, 8),
        kernels=None,
        id="strided_input",
    ),
]


@pytest.mark.parametrize("fn, inputs, kernels", PIXEL)
def test_pixel_shuffle(fn, inputs, kernels):
    trace = check(fn, *inputs)
    for k in trace.program.kernels:
        assert k.op in ("aten.pixel_shuffle.default", "aten.pixel_unshuffle.default")
        assert len(k.statements) == 1


def test_pixel_shuffle_is_pure_data_movement():
    x = rand(2, 8, 3, 4)
    trace = check(lambda x: F.pixel_shuffle(x, 2), x, kernels=["aten.pixel_shuffle.default"])
    p = trace.program
    assert total_ops(p) == {}
    io = kernel_io(p, p.kernels[0])
    assert io.exact and io.read_bytes == io.write_bytes == 4 * x.numel()


# ---------------------------------------------------------------- the lowering context


@pytest.fixture
def registered():
    """Register a test lowering for an operator and restore the registry afterwards."""
    with LOWERINGS.scoped():
        yield lambda op: lowering(op, replace=op in LOWERINGS)


def test_statement_forwards_every_builder_keyword(registered):
    """``scan`` (and the other builder keywords) pass through ``ctx.statement``."""

    @registered(aten.cumsum.default)
    def cumsum(ctx, x, dim, dtype=None):
        out = ctx.out()
        d = [f"i{k}" for k in range(x.ndim)]
        load = ctx.load(x, d)
        dims = list(zip(d, x.shape, strict=True))
        ctx.statement(dims, out, d, load, reduce="sum", scan=d[dim], dtype=out.dtype)

    trace = check(lambda x: torch.cumsum(x, 1), X, kernels=["aten.cumsum.default"])
    (st,) = trace.program.kernels[0].statements
    assert (
        isinstance(st, Scan) and st.along == "i1" and st.dtype is None
    )  # the output's dtype is dropped


def test_begin_kernel_opens_a_kernel_with_sequential_loops(registered):
    """``ctx.begin_kernel(loops=...)``: out[t] = out[t-1] + x[t] as a loop over t."""

    @registered(aten.cumsum.default)
    def cumsum(ctx, x, dim, dtype=None):
        out = ctx.out()
        (n,) = x.shape
        kernel = ctx.begin_kernel(loops=[("t", n)])
        assert kernel.loops[0].name == "t" and kernel.name.startswith("cumsum_")
        ctx.statement([], out, ["t"], ctx.load(x, ["t"]))
        prev = ctx.load(out, [Affine.of("t") - 1])
        ctx.statement([], out, ["t"], prev, accumulate=True, guards=[Guard(Affine.of("t"), 1, n)])

    x = rand(6)
    trace = check(lambda x: torch.cumsum(x, 0), x, kernels=["aten.cumsum.default"])
    (kernel,) = trace.program.kernels
    assert [d.name for d in kernel.loops] == ["t"] and len(kernel.statements) == 2


def test_begin_kernel_twice_gives_one_node_two_kernels(registered):
    """A copy kernel, then a kernel negating the copy in place: ``-x`` in two kernels."""

    @registered(aten.neg.default)
    def neg(ctx, x):
        out = ctx.out()
        d = [f"i{k}" for k in range(x.ndim)]
        dims = list(zip(d, x.shape, strict=True))
        ctx.statement(dims, out, d, ctx.load(x, d))
        ctx.begin_kernel()
        ctx.statement(dims, out, d, call("neg", ctx.load(out, d)), reduce=None, guards=())

    trace = check(lambda x: -x, X)
    kernels = trace.program.kernels
    assert [k.op for k in kernels] == ["aten.neg.default"] * 2
    assert [len(k.statements) for k in kernels] == [1, 1]
    assert kernels[0].name != kernels[1].name


def test_scaled_mm_fp8_is_one_kernel_on_fp8_tensor_cores():
    m, k, n = 16, 32, 24
    a = torch.randn(m, k).to(torch.float8_e4m3fn)
    b = torch.randn(n, k).to(torch.float8_e4m3fn).t()
    row = torch.rand(m, 1) + 0.5
    col = torch.rand(1, n) + 0.5

    def f(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)

    for sa, sb in ((torch.tensor(0.5), torch.tensor(2.0)), (row, col)):
        trace = trace_torch(f, (a, b, sa, sb))
        got = execute(trace.program, trace.values(f, (a, b, sa, sb)))[trace.output_names[0]]
        torch.testing.assert_close(got.float(), f(a, b, sa, sb).float(), rtol=1e-2, atol=1e-2)
    (kern,) = trace.program.kernels
    ops = statement_ops(trace.program, kern.statements[0])
    assert ops == {"tc_fp8": 2 * m * n * k}
    io = program_io(trace.program)
    nbytes = {t: f.elements * trace.program.tensors[t].itemsize for t, f in io.reads.items()}
    assert sum(nbytes.values()) == m * k + k * n + 4 * (m + n)  # fp8 operands, fp32 scales
    (w,) = io.writes.values()
    assert w.elements == m * n
