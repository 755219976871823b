"""The vectorised IR executor against eager PyTorch on hand-built programs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as hs

import solar.interp.torch.execute as ex
from solar.interp.torch.execute import execute
from solar.ir.affine import Affine
from solar.ir.program import Guard, ProgramBuilder
from solar.ir.scalar import Const, Index, Load, call

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

A = Affine.of


def L(t: str, *idx) -> Load:  # noqa: N802 - reads like the IR
    return Load(t, tuple(Affine.of(i) for i in idx))


def rand(*shape, dtype=torch.float32, device="cpu", gen=None):
    g = gen or torch.Generator().manual_seed(0)
    return torch.randn(*shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)


def close(a: torch.Tensor, b: torch.Tensor, rtol=1e-5, atol=1e-5):
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    torch.testing.assert_close(a.cpu(), b.cpu(), rtol=rtol, atol=atol)


def mm_program(M, N, K, dtype="float32", out_dtype=None):
    b = ProgramBuilder("mm")
    a = b.tensor("A", (M, K), dtype, "input")
    w = b.tensor("B", (K, N), dtype, "input")
    c = b.tensor("C", (M, N), out_dtype or dtype, "output")
    b.begin_kernel("aten.mm.default")
    b.statement(
        [("m", M), ("n", N), ("k", K, True)],
        (c, ("m", "n")),
        call("mul", L(a, "m", "k"), L(w, "k", "n")),
        reduce="sum",
    )
    b.program.outputs.append(c)
    return b.program


# ------------------------------------------------------------------------------ contractions
@pytest.mark.parametrize("device", DEVICES)
def test_mm(device):
    p = mm_program(33, 17, 45)
    a, w = rand(33, 45, device=device), rand(45, 17, device=device)
    out = execute(p, {"A": a, "B": w}, device=device)
    assert set(out) == {"C"}
    assert out["C"].device.type == device
    close(out["C"], a @ w, rtol=1e-4, atol=1e-4)


def test_batched_matmul_with_broadcasting():
    Bt, M, N, K = 4, 6, 7, 5
    b = ProgramBuilder("bmm")
    x = b.tensor("x", (1, M, K), "float32", "input")  # batch-broadcast operand
    y = b.tensor("y", (Bt, K, N), "float32", "input")
    o = b.tensor("o", (Bt, M, N), "float32", "output")
    b.begin_kernel("aten.bmm.default")
    b.statement(
        [("b", Bt), ("m", M), ("n", N), ("k", K, True)],
        (o, ("b", "m", "n")),
        call("mul", L(x, 0, "m", "k"), L(y, "b", "k", "n")),
        reduce="sum",
    )
    b.program.outputs.append(o)
    xv, yv = rand(1, M, K), rand(Bt, K, N)
    close(execute(b.program, {"x": xv, "y": yv})["o"], torch.matmul(xv, yv), 1e-4, 1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_addmm_two_statements_in_one_kernel(device):
    M, N, K = 8, 9, 10
    b = ProgramBuilder("addmm")
    bias = b.tensor("bias", (N,), "float32", "weight")
    a = b.tensor("a", (M, K), "float32", "input")
    w = b.tensor("w", (K, N), "float32", "weight")
    o = b.tensor("o", (M, N), "float32", "output")
    b.begin_kernel("aten.addmm.default")
    b.statement([("m", M), ("n", N)], (o, ("m", "n")), L(bias, "n"))
    b.statement(
        [("m", M), ("n", N), ("k", K, True)],
        (o, ("m", "n")),
        call("mul", L(a, "m", "k"), L(w, "k", "n")),
        reduce="sum",
        accumulate=True,
    )
    b.program.outputs.append(o)
    assert len(b.program.kernels) == 1
    vals = {"bias": rand(N, device=device), "a": rand(M, K, device=device)}
    vals["w"] = rand(K, N, device=device, gen=torch.Generator().manual_seed(1))
    got = execute(b.program, vals)["o"]
    close(got, torch.addmm(vals["bias"], vals["a"], vals["w"]), 1e-4, 1e-4)


def conv2d_program(N, C, H, W, K, R, S, stride, pad, dil):
    P = (H + 2 * pad - dil * (R - 1) - 1) // stride + 1
    Q = (W + 2 * pad - dil * (S - 1) - 1) // stride + 1
    b = ProgramBuilder("conv")
    i = b.tensor("I", (N, C, H, W), "float32", "input")
    w = b.tensor("W", (K, C, R, S), "float32", "weight")
    o = b.tensor("O", (N, K, P, Q), "float32", "output")
    h = stride * A("p") + dil * A("r") - pad
    x = stride * A("q") + dil * A("s") - pad
    b.begin_kernel("aten.convolution.default")
    b.statement(
        [("n", N), ("k", K), ("p", P), ("q", Q), ("c", C, True), ("r", R, True), ("s", S, True)],
        (o, ("n", "k", "p", "q")),
        call("mul", L(i, "n", "c", h, x), L(w, "k", "c", "r", "s")),
        reduce="sum",
        guards=[Guard(h, 0, H), Guard(x, 0, W)],
    )
    b.program.outputs.append(o)
    return b.program


@pytest.mark.parametrize("device", DEVICES)
def test_conv2d_stride_padding_dilation(device):
    N, C, H, W, K, R, S = 2, 3, 20, 18, 5, 7, 5
    p = conv2d_program(N, C, H, W, K, R, S, stride=2, pad=3, dil=2)
    iv, wv = rand(N, C, H, W, device=device), rand(K, C, R, S, device=device)
    got = execute(p, {"I": iv, "W": wv})["O"]
    want = F.conv2d(iv, wv, stride=2, padding=3, dilation=2)
    close(got, want, 1e-4, 1e-4)


@settings(max_examples=25, deadline=None)
@given(
    hw=hs.tuples(hs.integers(4, 12), hs.integers(4, 12)),
    rs=hs.tuples(hs.integers(1, 4), hs.integers(1, 4)),
    stride=hs.integers(1, 3),
    pad=hs.integers(0, 3),
    dil=hs.integers(1, 2),
)
def test_conv2d_matches_torch(hw, rs, stride, pad, dil):
    (H, W), (R, S) = hw, rs
    if H + 2 * pad < dil * (R - 1) + 1 or W + 2 * pad < dil * (S - 1) + 1:
        return
    p = conv2d_program(2, 2, H, W, 3, R, S, stride, pad, dil)
    iv, wv = rand(2, 2, H, W), rand(3, 2, R, S)
    want = F.conv2d(iv, wv, stride=stride, padding=pad, dilation=dil)
    close(execute(p, {"I": iv, "W": wv})["O"], want, 1e-4, 1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_bf16_contraction_accumulates_in_fp32(device):
    M, N, K = 16, 24, 4096
    a, w = rand(M, K, dtype=torch.bfloat16, device=device), rand(K, N, dtype=torch.bfloat16)
    w = w.to(device)
    exact = a.double() @ w.double()
    got = execute(mm_program(M, N, K, "bfloat16"), {"A": a, "B": w})["C"]
    assert got.dtype == torch.bfloat16
    close(got, exact.to(torch.bfloat16), rtol=1e-2, atol=1e-2)
    # fp32 output of bf16 operands: accumulated (and kept) in fp32
    got32 = execute(mm_program(M, N, K, "bfloat16", "float32"), {"A": a, "B": w})["C"]
    close(got32, exact.float(), rtol=1e-5, atol=1e-4)


def test_cast_and_const_factors_in_contraction():
    M, N, K = 5, 6, 7
    b = ProgramBuilder("scaled")
    a = b.tensor("a", (M, K), "float32", "input")
    w = b.tensor("w", (K, N), "bfloat16", "input")
    o = b.tensor("o", (M, N), "float32", "output")
    b.begin_kernel("k")
    expr = call(
        "mul",
        call("mul", call("cast", L(a, "m", "k"), dtype="bfloat16"), Const(0.5)),
        call("cast", L(w, "k", "n"), dtype="float32"),
    )
    b.statement([("m", M), ("n", N), ("k", K, True)], (o, ("m", "n")), expr, reduce="sum")
    b.program.outputs.append(o)
    av, wv = rand(M, K), rand(K, N, dtype=torch.bfloat16)
    want = 0.5 * (av.bfloat16().float() @ wv.float())
    close(execute(b.program, {"a": av, "w": wv})["o"], want, 1e-5, 1e-5)


def test_contraction_does_not_build_iteration_space():
    # 512^3 must just work; 256 x 256 x 65536 would be 2**32 floats (16 GiB) if materialised.
    p = mm_program(512, 512, 512)
    a, w = rand(512, 512), rand(512, 512)
    close(execute(p, {"A": a, "B": w})["C"], a @ w, 1e-3, 1e-3)
    M, N, K = 256, 256, 1 << 16
    a, w = rand(M, K), rand(K, N)
    got = execute(mm_program(M, N, K), {"A": a, "B": w})["C"]
    close(got, a @ w, 1e-3, 1e-2)


def test_guarded_sum_with_unused_reduction_dim_and_parallel_guard():
    # o[i] = Σ_{j,u} x[i,j] where i < 3 (u is used by no load: counts u-extent times)
    b = ProgramBuilder("p")
    x = b.tensor("x", (5, 4), "float32", "input")
    o = b.tensor("o", (5,), "float32", "output")
    b.begin_kernel("k")
    b.statement(
        [("i", 5), ("j", 4, True), ("u", 3, True)],
        (o, ("i",)),
        L(x, "i", "j"),
        reduce="sum",
        guards=[Guard(A("i"), 0, 3)],
    )
    b.program.outputs.append(o)
    xv = rand(5, 4)
    want = xv.sum(1) * 3
    want[3:] = 0
    close(execute(b.program, {"x": xv})["o"], want)


def test_contraction_with_masking_guards():
    # causal: o[m,n] = Σ_{k<=m} a[m,k] b[k,n], and a window 2 <= k < K-1 (kept as mask operands)
    M, N, K = 9, 4, 9
    b = ProgramBuilder("causal")
    a = b.tensor("a", (M, K), "float32", "input")
    w = b.tensor("w", (K, N), "float32", "input")
    o = b.tensor("o", (M, N), "float32", "output")
    b.begin_kernel("k")
    b.statement(
        [("m", M), ("n", N), ("k", K, True)],
        (o, ("m", "n")),
        call("mul", L(a, "m", "k"), L(w, "k", "n")),
        reduce="sum",
        guards=[Guard(A("m") - A("k"), 0, M), Guard(A("k"), 2, K - 1)],
    )
    b.program.outputs.append(o)
    av, wv = rand(M, K), rand(K, N)
    keep = torch.tril(torch.ones(M, K))
    keep[:, :2] = 0
    keep[:, K - 1 :] = 0
    close(execute(b.program, {"a": av, "w": wv})["o"], (av * keep) @ wv, 1e-5, 1e-5)


# ---------------------------------------------------------------------------- generic path
@pytest.mark.parametrize("device", DEVICES)
def test_maxpool_with_padding(device):
    N, C, H, W = 2, 3, 11, 10
    P, Q = (H + 2 - 3) // 2 + 1, (W + 2 - 3) // 2 + 1
    b = ProgramBuilder("pool")
    i = b.tensor("I", (N, C, H, W), "float32", "input")
    o = b.tensor("O", (N, C, P, Q), "float32", "output")
    h, x = 2 * A("p") + A("r") - 1, 2 * A("q") + A("s") - 1
    b.begin_kernel("aten.max_pool2d.default")
    b.statement(
        [("n", N), ("c", C), ("p", P), ("q", Q), ("r", 3, True), ("s", 3, True)],
        (o, ("n", "c", "p", "q")),
        L(i, "n", "c", h, x),
        reduce="max",
        guards=[Guard(h, 0, H), Guard(x, 0, W)],
    )
    b.program.outputs.append(o)
    iv = rand(N, C, H, W, device=device) - 3.0  # mostly negative: zero padding must not win
    got = execute(b.program, {"I": iv})["O"]
    close(got, F.max_pool2d(iv, 3, stride=2, padding=1), 0, 0)


def softmax_program(R, C, dtype="float32"):
    b = ProgramBuilder("softmax")
    x = b.tensor("x", (R, C), dtype, "input")
    mx = b.tensor("mx", (R,), "float32", "local")
    sm = b.tensor("sm", (R,), "float32", "local")
    o = b.tensor("o", (R, C), dtype, "output")
    b.begin_kernel("aten._softmax.default")
    b.statement([("r", R), ("c", C, True)], (mx, ("r",)), L(x, "r", "c"), reduce="max")
    e = call("exp", call("sub", L(x, "r", "c"), L(mx, "r")))
    b.statement([("r", R), ("c", C, True)], (sm, ("r",)), e, reduce="sum")
    b.statement([("r", R), ("c", C)], (o, ("r", "c")), call("div", e, L(sm, "r")))
    b.program.outputs.append(o)
    return b.program


@pytest.mark.parametrize("device", DEVICES)
def test_softmax_three_statements(device):
    xv = rand(13, 70, device=device) * 4
    out = execute(softmax_program(13, 70), {"x": xv}, keep_intermediates=True)
    close(out["o"], torch.softmax(xv, -1))
    close(out["mx"], xv.amax(-1))
    xb = xv.bfloat16()
    got = execute(softmax_program(13, 70, "bfloat16"), {"x": xb})["o"]
    close(got, torch.softmax(xb.float(), -1).bfloat16(), rtol=1e-2, atol=1e-2)


def test_chunked_generic_and_contraction(monkeypatch):
    monkeypatch.setattr(ex, "CHUNK_ELEMENTS", 200)
    xv = rand(13, 70) * 4
    close(execute(softmax_program(13, 70), {"x": xv})["o"], torch.softmax(xv, -1))
    a, w = rand(30, 20), rand(20, 25)
    close(execute(mm_program(30, 25, 20), {"A": a, "B": w})["C"], a @ w, 1e-4, 1e-4)
    iv, wv = rand(2, 3, 12, 12), rand(4, 3, 3, 3)
    p = conv2d_program(2, 3, 12, 12, 4, 3, 3, stride=1, pad=1, dil=1)
    close(execute(p, {"I": iv, "W": wv})["O"], F.conv2d(iv, wv, padding=1), 1e-4, 1e-4)


def test_elementwise_broadcasting():
    I_, J = 6, 9
    b = ProgramBuilder("ew")
    x = b.tensor("x", (I_, J), "float32", "input")
    y = b.tensor("y", (J,), "float32", "input")
    z = b.tensor("z", (I_, 1), "float16", "input")
    o = b.tensor("o", (I_, J), "float16", "output")
    b.begin_kernel("k")
    expr = call("add", call("mul", L(x, "i", "j"), L(y, "j")), call("relu", L(z, "i", 0)))
    b.statement([("i", I_), ("j", J)], (o, ("i", "j")), expr)
    b.program.outputs.append(o)
    xv, yv, zv = rand(I_, J), rand(J), rand(I_, 1, dtype=torch.float16)
    want = (xv * yv + torch.relu(zv.float())).half()
    close(execute(b.program, {"x": xv, "y": yv, "z": zv})["o"], want, 1e-3, 1e-3)


def test_transpose_view_read_by_kernels_and_view_output():
    M, N = 5, 7
    b = ProgramBuilder("view")
    x = b.tensor("x", (M, N), "float32", "input")
    xt = b.view("xt", x, (N, M), (1, N))
    o = b.tensor("o", (N, M), "float32", "intermediate")
    ot = b.view("ot", o, (M, N), (1, M))  # output is a view: o transposed back
    b.begin_kernel("k")
    b.statement([("i", N), ("j", M)], (o, ("i", "j")), call("mul", L(xt, "i", "j"), Const(2.0)))
    s = b.tensor("s", (M, M), "float32", "output")  # x @ x.T through the view
    b.begin_kernel("mm")
    b.statement(
        [("m", M), ("n", M), ("k", N, True)],
        (s, ("m", "n")),
        call("mul", L(x, "m", "k"), L(xt, "k", "n")),
        reduce="sum",
    )
    b.program.outputs += [ot, s]
    xv = rand(M, N)
    out = execute(b.program, {"x": xv})
    close(out["ot"], xv * 2)
    assert out["ot"].stride() == (1, M)
    close(out["s"], xv @ xv.T, 1e-5, 1e-5)


def test_write_into_slices_cat():
    I_, J1, J2 = 4, 3, 5
    b = ProgramBuilder("cat")
    x = b.tensor("x", (I_, J1), "float32", "input")
    y = b.tensor("y", (I_, J2), "float32", "input")
    o = b.tensor("o", (I_, J1 + J2), "float32", "output")
    b.begin_kernel("aten.cat.default")
    b.statement([("i", I_), ("j", J1)], (o, ("i", "j")), L(x, "i", "j"))
    b.statement([("i", I_), ("j", J2)], (o, ("i", A("j") + J1)), L(y, "i", "j"))
    b.program.outputs.append(o)
    xv, yv = rand(I_, J1), rand(I_, J2)
    close(execute(b.program, {"x": xv, "y": yv})["o"], torch.cat([xv, yv], 1), 0, 0)


def test_write_through_a_view_of_the_output():
    b = ProgramBuilder("slice")
    x = b.tensor("x", (3, 4), "float32", "input")
    o = b.tensor("o", (3, 10), "float32", "output")
    win = b.view("win", o, (3, 4), (10, 2), offset=1)  # o[:, 1:9:2]
    b.begin_kernel("k")
    b.statement([("i", 3), ("j", 4)], (win, ("i", "j")), call("neg", L(x, "i", "j")))
    b.program.outputs.append(o)
    xv = rand(3, 4)
    want = torch.zeros(3, 10)
    want[:, 1:9:2] = -xv
    close(execute(b.program, {"x": xv})["o"], want, 0, 0)


def test_tril_via_index():
    n, m = 6, 8
    b = ProgramBuilder("tril")
    x = b.tensor("x", (n, m), "float32", "input")
    o = b.tensor("o", (n, m), "float32", "output")
    b.begin_kernel("aten.tril.default")
    cond = call("le", Index(A("j")), Index(A("i") - 1))
    b.statement(
        [("i", n), ("j", m)], (o, ("i", "j")), call("where", cond, L(x, "i", "j"), Const(0.0))
    )
    b.program.outputs.append(o)
    xv = rand(n, m)
    close(execute(b.program, {"x": xv})["o"], torch.tril(xv, -1), 0, 0)


def test_iota_index_value():
    b = ProgramBuilder("iota")
    o = b.tensor("o", (4, 5), "int64", "output")
    b.begin_kernel("k")
    b.statement([("i", 4), ("j", 5)], (o, ("i", "j")), Index(3 * A("i") - A("j") + 2))
    b.program.outputs.append(o)
    i, j = torch.meshgrid(torch.arange(4), torch.arange(5), indexing="ij")
    close(execute(b.program, {})["o"], 3 * i - j + 2, 0, 0)


@pytest.mark.parametrize("reduce", ["prod", "min", "max", "sum"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_reductions(reduce, dtype):
    b = ProgramBuilder("red")
    x = b.tensor("x", (4, 6), dtype, "input")
    o = b.tensor("o", (4,), dtype, "output")
    b.begin_kernel("k")
    # guarded out: j == 5 never contributes (the identity must be right for ints too)
    b.statement(
        [("i", 4), ("j", 6, True)],
        (o, ("i",)),
        call("abs", L(x, "i", "j")) if reduce == "prod" else L(x, "i", "j"),
        reduce=reduce,
        guards=[Guard(A("j"), 0, 5)],
    )
    b.program.outputs.append(o)
    xv = rand(4, 6) if dtype == "float32" else torch.randint(-9, 9, (4, 6), dtype=torch.int32)
    xs = xv[:, :5]
    want = {
        "prod": lambda: xs.abs().prod(1),
        "min": lambda: xs.amin(1),
        "max": lambda: xs.amax(1),
        "sum": lambda: xs.sum(1),
    }[reduce]().to(xv.dtype)
    close(execute(b.program, {"x": xv})["o"], want, 1e-5, 1e-5)


def test_accumulate_semantics():
    b = ProgramBuilder("acc")
    x = b.tensor("x", (4, 6), "float32", "input")
    y = b.tensor("y", (4,), "float32", "input")
    omax = b.tensor("omax", (4,), "float32", "output")
    oadd = b.tensor("oadd", (4,), "float32", "output")
    oprod = b.tensor("oprod", (4,), "float32", "output")
    ogrd = b.tensor("ogrd", (4,), "float32", "output")
    b.begin_kernel("k")
    red = [("i", 4), ("j", 6, True)]
    b.statement([("i", 4)], (omax, ("i",)), L(y, "i"))
    b.statement(red, (omax, ("i",)), L(x, "i", "j"), reduce="max", accumulate=True)
    b.statement([("i", 4)], (oadd, ("i",)), L(y, "i"))
    b.statement([("i", 4)], (oadd, ("i",)), L(y, "i"), accumulate=True)  # reduce None: add
    b.statement([("i", 4)], (oprod, ("i",)), L(y, "i"))
    b.statement(red, (oprod, ("i",)), L(x, "i", "j"), reduce="prod", accumulate=True)
    # non-reduction guard: elements outside keep their previous value
    b.statement([("i", 4)], (ogrd, ("i",)), L(y, "i"))
    b.statement([("i", 4)], (ogrd, ("i",)), Const(7.0), guards=[Guard(A("i"), 1, 3)])
    # a second max-accumulate on top
    b.statement(red, (omax, ("i",)), call("neg", L(x, "i", "j")), reduce="max", accumulate=True)
    b.program.outputs += [omax, oadd, oprod, ogrd]
    xv, yv = rand(4, 6), rand(4) + 1
    out = execute(b.program, {"x": xv, "y": yv})
    want_max = torch.maximum(torch.maximum(yv, xv.amax(1)), (-xv).amax(1))
    close(out["omax"], want_max)
    close(out["oadd"], 2 * yv)
    close(out["oprod"], yv * xv.prod(1))
    close(out["ogrd"], torch.tensor([yv[0], 7.0, 7.0, yv[3]]))


def test_reduction_restarts_from_identity():
    b = ProgramBuilder("restart")
    x = b.tensor("x", (3, 4), "float32", "input")
    o = b.tensor("o", (3,), "float32", "output")
    b.begin_kernel("k")
    b.statement([("i", 3), ("j", 4, True)], (o, ("i",)), L(x, "i", "j"), reduce="sum")
    b.statement([("i", 3), ("j", 4, True)], (o, ("i",)), L(x, "i", "j"), reduce="sum")
    b.program.outputs.append(o)
    xv = rand(3, 4)
    close(execute(b.program, {"x": xv})["o"], xv.sum(1))


def test_guarded_generic_sum_padding_and_flips():
    n = 10
    b = ProgramBuilder("pad")
    x = b.tensor("x", (n,), "float32", "input")
    o = b.tensor("o", (n,), "float32", "output")
    f = b.tensor("f", (n,), "float32", "output")
    g = b.tensor("g", (n,), "float32", "output")
    b.begin_kernel("k")
    idx = A("i") + A("t") - 1
    # o[i] = Σ_t |x[i+t-1]| over the in-range taps: a generic (non-product) guarded sum
    b.statement(
        [("i", n), ("t", 3, True)],
        (o, ("i",)),
        call("abs", L(x, idx)),
        reduce="sum",
        guards=[Guard(idx, 0, n)],
    )
    b.statement([("i", n)], (f, ("i",)), L(x, n - 1 - A("i")))  # negative read stride
    b.statement([("i", n)], (g, (n - 1 - A("i"),)), call("exp", L(x, "i")))  # negative write
    b.program.outputs += [o, f, g]
    xv = rand(n)
    out = execute(b.program, {"x": xv})
    want = F.conv1d(xv.abs()[None, None], torch.ones(1, 1, 3), padding=1)[0, 0]
    close(out["o"], want)
    close(out["f"], xv.flip(0), 0, 0)
    close(out["g"], xv.exp().flip(0))


def test_in_place_shift_reads_before_writes(monkeypatch):
    # x[i] = x[i+1] (i < n-1) with the input written in place: reads see the old memory,
    # also when chunked; the caller's tensor is not modified.
    n = 50
    b = ProgramBuilder("shift")
    x = b.tensor("x", (n,), "float32", "input")
    b.begin_kernel("k")
    b.statement([("i", n - 1)], (x, ("i",)), L(x, A("i") + 1))
    b.program.outputs.append(x)
    xv = rand(n)
    keep = xv.clone()
    want = torch.cat([xv[1:], xv[-1:]])
    close(execute(b.program, {"x": xv})["x"], want, 0, 0)
    monkeypatch.setattr(ex, "CHUNK_ELEMENTS", 7)
    close(execute(b.program, {"x": xv})["x"], want, 0, 0)
    close(xv, keep, 0, 0)


def test_constants_and_keep_intermediates():
    b = ProgramBuilder("c")
    x = b.tensor("x", (3, 4), "float32", "input")
    c = b.tensor("c", (4,), "float32", "constant")
    t = b.tensor("t", (3, 4), "float32")
    o = b.tensor("o", (3,), "float32", "output")
    b.program.constants[c] = [1.0, 2.0, 3.0, 4.0]
    b.begin_kernel("mul")
    b.statement([("i", 3), ("j", 4)], (t, ("i", "j")), call("mul", L(x, "i", "j"), L(c, "j")))
    b.begin_kernel("sum")
    b.statement([("i", 3), ("j", 4, True)], (o, ("i",)), L(t, "i", "j"), reduce="sum")
    b.program.outputs.append(o)
    xv = rand(3, 4)
    cv = torch.tensor([1.0, 2.0, 3.0, 4.0])
    out = execute(b.program, {"x": xv})
    assert set(out) == {"o"}
    close(out["o"], (xv * cv).sum(1))
    out = execute(b.program, {"x": xv}, keep_intermediates=True)
    assert set(out) == {"o", "t"}
    close(out["t"], xv * cv)


def test_integer_and_bool_statements():
    b = ProgramBuilder("ints")
    x = b.tensor("x", (5, 3), "int32", "input")
    m = b.tensor("m", (5, 3), "bool", "output")
    s = b.tensor("s", (5,), "int64", "output")
    b.begin_kernel("k")
    b.statement([("i", 5), ("j", 3)], (m, ("i", "j")), call("gt", L(x, "i", "j"), Const(0)))
    b.statement([("i", 5), ("j", 3, True)], (s, ("i",)), L(m, "i", "j"), reduce="sum")
    b.program.outputs += [m, s]
    xv = torch.randint(-5, 5, (5, 3), dtype=torch.int32)
    out = execute(b.program, {"x": xv})
    close(out["m"], xv > 0, 0, 0)
    close(out["s"], (xv > 0).sum(1), 0, 0)


# ------------------------------------------------------------------------------------ errors
def test_error_messages_name_the_tensor():
    p = mm_program(4, 5, 6)
    a, w = rand(4, 6), rand(6, 5)
    with pytest.raises(ValueError, match=r"missing value for input 'B'"):
        execute(p, {"A": a})
    with pytest.raises(ValueError, match=r"'Z'.*not an input"):
        execute(p, {"A": a, "B": w, "Z": a})
    with pytest.raises(ValueError, match=r"'B' has shape \(5, 6\); expected \(6, 5\)"):
        execute(p, {"A": a, "B": w.T.contiguous()})
    with pytest.raises(ValueError, match=r"'A' has dtype torch.float64; expected float32"):
        execute(p, {"A": a.double(), "B": w})
    with pytest.raises(ValueError, match=r"'A' is a ndarray"):
        execute(p, {"A": a.numpy(), "B": w})
    for msg in ("missing", "not an input"):
        try:
            execute(p, {"A": a} if msg == "missing" else {"A": a, "B": w, "Z": a})
        except ValueError as e:
            assert "\n" not in str(e)


def test_malformed_statements_are_rejected():
    b = ProgramBuilder("bad")
    x = b.tensor("x", (4,), "float32", "input")
    o = b.tensor("o", (4,), "float32", "output")
    b.begin_kernel("k")
    b.statement([("i", 4), ("j", 2)], (o, ("i",)), L(x, "i"))  # j: a write race
    b.program.outputs.append(o)
    with pytest.raises(ValueError, match="parallel dim j does not move the output"):
        execute(b.program, {"x": rand(4)})
    b = ProgramBuilder("bad2")
    x = b.tensor("x", (4,), "float32", "input")
    o = b.tensor("o", (4,), "float32", "output")
    b.begin_kernel("k")
    b.statement([("i", 4)], (o, (A("i") + 1,)), L(x, "i"))
    b.program.outputs.append(o)
    with pytest.raises(ValueError, match=r"output o\[i\+1\] index 0 ranges over \[1, 4\]"):
        execute(b.program, {"x": rand(4)})


# --------------------------------------------------------- fuzz against a per-element oracle
def _reference(program, values):
    """A per-instance Python interpreter of the IR (no views): the semantics, slowly."""
    import itertools

    from solar.interp.torch.scalar import TORCH_OPS
    from solar.ir.ops import REDUCTION_IDENTITY

    combine = {None: torch.add, "sum": torch.add, "prod": torch.mul}
    combine |= {"max": torch.maximum, "min": torch.minimum}
    mem = {n: values[n].clone() for n in program.inputs}
    for n, t in program.tensors.items():
        mem.setdefault(n, torch.zeros(t.shape, dtype=torch.float64))

    def ev(e, env):
        if isinstance(e, Load):
            return mem[e.tensor][tuple(i.evaluate(env) for i in e.index)]
        if isinstance(e, Const):
            return torch.tensor(e.value, dtype=torch.float64)
        if isinstance(e, Index):
            return torch.tensor(e.expr.evaluate(env), dtype=torch.float64)
        return TORCH_OPS[e.op](*(ev(a, env) for a in e.args), **dict(e.attrs))

    for k in program.kernels:
        for st in k.statements:
            new = mem[st.out.tensor].clone()
            par, red = st.parallel_dims, st.reduction_dims
            for pi in itertools.product(*(range(d.extent) for d in par)):
                env = {d.name: i for d, i in zip(par, pi, strict=True)}
                acc, hit = None, False
                if st.reduce:
                    acc = torch.tensor(REDUCTION_IDENTITY[st.reduce], dtype=torch.float64)
                for ri in itertools.product(*(range(d.extent) for d in red)):
                    env2 = {**env, **{d.name: i for d, i in zip(red, ri, strict=True)}}
                    if all(g.lo <= g.expr.evaluate(env2) < g.hi for g in st.guards):
                        v = ev(st.expr, env2)
                        acc = combine[st.reduce](acc, v) if st.reduce else v
                        hit = True
                if st.reduce is None and not hit:
                    continue
                oi = tuple(e.evaluate(env) for e in st.out.index)
                new[oi] = combine[st.reduce](new[oi], acc) if st.accumulate else acc
            mem[st.out.tensor] = new
    return {n: mem[n] for n in program.outputs}


_coef = hs.integers(-2, 2)


@settings(max_examples=60, deadline=None)
@given(
    idx=hs.lists(hs.tuples(_coef, _coef, hs.integers(-3, 3)), min_size=4, max_size=4),
    form=hs.sampled_from(["product", "generic", "where_index"]),
    reduce=hs.sampled_from([None, "sum", "max", "min", "prod"]),
    accumulate=hs.booleans(),
    window=hs.tuples(hs.integers(-1, 2), hs.integers(1, 5)),
    chunk=hs.sampled_from([ex.CHUNK_ELEMENTS, 2]),
)
def test_fuzz_against_reference(idx, form, reduce, accumulate, window, chunk):
    I_, J = 4, 3
    b = ProgramBuilder("fuzz")
    x = b.tensor("x", (5, 6), "float64", "input")
    y = b.tensor("y", (6, 5), "float64", "input")
    z = b.tensor("z", (I_,), "float64", "input")
    o = b.tensor("o", (I_,), "float64", "output")
    dims = [("i", I_), ("j", J, reduce is not None)]
    es = [c_i * A("i") + c_j * A("j") + c for c_i, c_j, c in idx]
    guards = [Guard(es[0], 0, 5), Guard(es[1], 0, 6), Guard(es[2], 0, 6), Guard(es[3], 0, 5)]
    guards.append(Guard(A("j") + A("i"), window[0], window[0] + window[1]))  # a masking guard
    lx, ly = L(x, es[0], es[1]), L(y, es[2], es[3])
    expr = {
        "product": call("mul", call("mul", lx, ly), Const(1.5)),
        "generic": call("add", call("exp", lx), call("sin", ly)),
        "where_index": call("where", call("lt", Index(A("j")), Index(A("i"))), lx, ly),
    }[form]
    b.begin_kernel("k")
    b.statement([("i", I_)], (o, ("i",)), L(z, "i"))
    if reduce is None:
        dims = [("i", I_), ("j", 1)]  # j must not be parallel (it would race on o[i])
    b.statement(dims, (o, ("i",)), expr, reduce=reduce, accumulate=accumulate, guards=guards)
    b.program.outputs.append(o)
    gen = torch.Generator().manual_seed(3)
    vals = {
        n: torch.rand(*b.program.tensors[n].shape, generator=gen, dtype=torch.float64) + 0.5
        for n in ("x", "y", "z")
    }
    saved, ex.CHUNK_ELEMENTS = ex.CHUNK_ELEMENTS, chunk
    try:
        got = execute(b.program, vals)["o"]
    finally:
        ex.CHUNK_ELEMENTS = saved
    close(got, _reference(b.program, vals)["o"], rtol=1e-10, atol=1e-12)


def test_an_extern_routine_runs_on_whole_batches_of_rows(monkeypatch):
    """An FFT's rows go to the routine in one call when they fit (the chunk is rows plus
    outputs, not rows x output positions): a C2R of a half spectrum that is not Hermitian is
    implementation-defined, and cuFFT resolves it differently for other batch sizes, so the
    executor batches as the source's call does (the FNO example on the H100 matched only
    then)."""
    import solar
    import solar.interp.torch.routine_kernels as routines
    from solar.interp.torch.execute import execute

    calls = []
    c2r = routines.TORCH_ROUTINES["fft.c2r"]

    def counted(rows, **attrs):
        calls.append(tuple(rows.shape))
        return c2r(rows, **attrs)

    monkeypatch.setitem(routines.TORCH_ROUTINES, "fft.c2r", counted)
    spectrum = torch.randn(16, 8, 64, 33, dtype=torch.complex64)  # 128 rows x 64x64 outputs
    trace = solar.trace(lambda z: torch.fft.irfft2(z, s=(64, 64)), [spectrum])
    out = execute(trace.program, trace.values(lambda z: z, [spectrum]))
    assert calls == [(16, 8, 64 * 33)]
    assert torch.allclose(
        out[trace.output_names[0]], torch.fft.irfft2(spectrum, s=(64, 64)), atol=1e-5
    )
