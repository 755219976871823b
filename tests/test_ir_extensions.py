"""IR extensions: sequential kernel loops, indirect (data-dependent) indices, scans and extern
routines. Each is executed against eager PyTorch (or a per-element oracle) and costed against
hand-derived numbers."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as hs

import solar.interp.torch.execute as ex
from solar.graph.export import to_json, to_text
from solar.graph.lift import lift
from solar.graph.types import DataDependent
from solar.interp.torch.execute import execute
from solar.ir.affine import Affine
from solar.ir.cost import kernel_io, program_io, statement_ops
from solar.ir.footprint import access_footprint, union_footprint
from solar.ir.program import Dim, Guard, ProgramBuilder, with_loops
from solar.ir.scalar import Const, Index, Indirect, Load, call

A = Affine.of


def L(t: str, *idx) -> Load:  # noqa: N802 - reads like the IR
    return Load(t, tuple(i if isinstance(i, Indirect) else A(i) for i in idx))


def I(t: str, *idx) -> Indirect:  # noqa: N802, E743
    return Indirect(L(t, *idx))


def rand(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


def ints(*shape, hi, lo=0, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g)


def close(a, b, tol=1e-5):
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    torch.testing.assert_close(a, b, rtol=tol, atol=tol)


def total_ops(p, k):
    out: dict[str, int] = {}
    for st in k.statements:
        for c, v in statement_ops(p, st, k).items():
            out[c] = out.get(c, 0) + v
    return out


# =============================================================================== loops
def rnn_program(T, B, H, rolling=False, dtype="float32"):
    """h[t+1] = tanh(W h[t] + x[t]); with ``rolling`` the state lives in a local ``h`` that
    every step rewrites, and the step's output is copied to ``y[t]``."""
    b = ProgramBuilder("rnn")
    x = b.tensor("x", (T, B, H), dtype, "input")
    w = b.tensor("W", (H, H), dtype, "weight")
    h0 = b.tensor("h0", (B, H), dtype, "input")
    acc = b.tensor("acc", (B, H), dtype, "local")
    b.begin_kernel("rnn", loops=[("t", T)])
    if not rolling:
        y = b.tensor("h", (T + 1, B, H), dtype, "output")
        first = [Guard(A("t"), 0, 1)]  # h[0] = h0 at t == 0 only
        b.statement([("b", B), ("i", H)], (y, (0, "b", "i")), L(h0, "b", "i"), guards=first)
        prev = L(y, "t", "b", "k")
    else:
        y = b.tensor("y", (T, B, H), dtype, "output")
        h = b.tensor("hstate", (B, H), dtype, "local")
        first = [Guard(A("t"), 0, 1)]
        b.statement([("b", B), ("i", H)], (h, ("b", "i")), L(h0, "b", "i"), guards=first)
        prev = L(h, "b", "k")
    b.statement(
        [("b", B), ("i", H), ("k", H, True)],
        (acc, ("b", "i")),
        call("mul", L(w, "i", "k"), prev),
        reduce="sum",
    )
    step = call("tanh", call("add", L(acc, "b", "i"), L(x, "t", "b", "i")))
    if not rolling:
        b.statement([("b", B), ("i", H)], (y, (A("t") + 1, "b", "i")), step)
    else:
        b.statement([("b", B), ("i", H)], (h, ("b", "i")), step)
        b.statement([("b", B), ("i", H)], (y, ("t", "b", "i")), L(h, "b", "i"))
    b.program.outputs.append(y)
    return b.program


def rnn_reference(x, w, h0):
    hs = [h0]
    for t in range(x.shape[0]):
        hs.append(torch.tanh(hs[-1] @ w.T + x[t]))
    return torch.stack(hs)


@pytest.mark.parametrize("rolling", [False, True])
def test_rnn_recurrence_executes_like_a_python_loop(rolling):
    T, B, H = 7, 3, 5
    p = rnn_program(T, B, H, rolling)
    x, w, h0 = rand(T, B, H), rand(H, H, seed=1) * 0.5, rand(B, H, seed=2)
    got = execute(p, {"x": x, "W": w, "h0": h0})
    want = rnn_reference(x, w, h0)
    close(got["y" if rolling else "h"], want[1:] if rolling else want)
    assert "for t<7 (sequential):" in str(p)


@pytest.mark.parametrize("rolling", [False, True])
def test_rnn_costs_are_steps_times_per_step(rolling):
    T, B, H = 16, 4, 32
    p = rnn_program(T, B, H, rolling)
    (k,) = p.kernels
    # per step: B·H·H FMAs (2 flops), B·H adds, B·H tanh
    assert total_ops(p, k) == {"cuda_fp32": T * (2 * B * H * H + B * H), "sfu": T * B * H}
    io = kernel_io(p, k)
    # reads x, W, h0 once; the state is never read back from DRAM
    assert io.read_bytes == 4 * (T * B * H + H * H + B * H)
    out = (T + 1) * B * H if not rolling else T * B * H
    assert io.write_bytes == 4 * out
    fused = program_io(p)
    assert fused.bytes == io.bytes
    if not rolling:  # h both read and written inside the loop: a lower bound
        assert not io.reads["h"].exact if "h" in io.reads else True


def test_loop_tags_are_remembered_by_structure():
    """Every statement of a looped kernel asks for the kernel's loop tags; they are computed
    once per structure (statements, loops, the declarations they touch, the limits), whichever
    program or kernel object asks, and the memo holds those values, not kernels."""
    from solar.ir import cost

    cost._tags_of.cache_clear()
    first, same = rnn_program(4, 2, 8, rolling=True), rnn_program(4, 2, 8, rolling=True)
    ops = [statement_ops(first, st) for st in first.kernels[0].statements]  # 4 statements
    assert cost._tags_of.cache_info()[:2] == (3, 1)  # (hits, misses)
    assert [statement_ops(same, st) for st in same.kernels[0].statements] == ops
    assert cost._tags_of.cache_info()[:2] == (7, 1)  # another program of the same structure
    wider = rnn_program(4, 2, 16, rolling=True)
    statement_ops(wider, wider.kernels[0].statements[0])
    assert cost._tags_of.cache_info()[:2] == (7, 2)  # another structure: its own entry


def test_loop_invariant_statements_are_counted_once():
    T, N = 10, 64
    b = ProgramBuilder("inv")
    x = b.tensor("x", (N,), "float32", "input")
    s = b.tensor("s", (T, N), "float32", "output")
    e = b.tensor("e", (N,), "float32", "local")
    b.begin_kernel("k", loops=[("t", T)])
    b.statement([("n", N)], (e, ("n",)), call("exp", L(x, "n")))  # invariant: hoistable
    b.statement([("n", N)], (s, ("t", "n")), call("mul", L(e, "n"), Index(A("t"))))
    b.program.outputs.append(s)
    (k,) = b.program.kernels
    ops = [statement_ops(b.program, st, k) for st in k.statements]
    assert ops == [{"sfu": N}, {"cuda_fp32": T * N}]
    out = execute(b.program, {"x": rand(N)})["s"]
    close(out, torch.exp(rand(N))[None, :] * torch.arange(T)[:, None].float())


def test_rolling_accumulator_is_a_new_value_every_iteration():
    """acc = 0.5 acc + x[t] (a rolling scalar state): T multiply-adds, not one."""
    T, N = 12, 8
    b = ProgramBuilder("ema")
    x = b.tensor("x", (T, N), "float32", "input")
    acc = b.tensor("acc", (N,), "float32", "output")
    b.begin_kernel("fill")
    b.statement([("n", N)], (acc, ("n",)), Const(0.0))
    b.begin_kernel("ema", loops=[("t", T)])
    b.statement(
        [("n", N)],
        (acc, ("n",)),
        call("add", call("mul", L(acc, "n"), Const(0.5)), L(x, "t", "n")),
    )
    b.program.outputs.append(acc)
    k = b.program.kernels[1]
    assert total_ops(b.program, k) == {"cuda_fp32": 2 * T * N}
    xv = rand(T, N)
    want = torch.zeros(N)
    for t in range(T):
        want = want * 0.5 + xv[t]
    close(execute(b.program, {"x": xv})["acc"], want)
    io = kernel_io(b.program, k)  # acc read in the first iteration only, written once
    assert io.reads["acc"].elements == N and io.writes["acc"].elements == N


def test_loop_lifts_with_consistent_ranks():
    p = rnn_program(4, 2, 3)
    g = lift(p)
    ops = list(g.ops())
    assert all(d.loops == (ops[0].loops[0],) for d in ops)
    t = ops[0].loops[0]
    assert all(d.ranks[t] == 4 for d in ops)
    assert ops[1].op_kind == "contraction" and ops[2].op_kind == "map"
    assert ops[1].ops == {"cuda_fp32": 4 * 2 * 2 * 3 * 3}
    to_json(g)
    to_text(g)


def test_with_loops_prepends_parallel_dims():
    p = rnn_program(4, 2, 3)
    k = p.kernels[0]
    st = with_loops(k.statements[1], k.loops)
    assert [d.name for d in st.dims] == ["t", "b", "i", "k"] and not st.dims[0].reduction
    assert with_loops(st, ()) is st


def test_loop_dims_must_not_shadow_statement_dims():
    b = ProgramBuilder("bad")
    o = b.tensor("o", (4,), "float32", "output")
    b.begin_kernel("k", loops=[("t", 4)])
    with pytest.raises(ValueError, match="duplicate loop dims"):
        b.statement([("t", 4)], (o, ("t",)), Const(1.0))


# ========================================================================= indirect
def embedding_program(V, D, N, dtype="float32"):
    b = ProgramBuilder("emb")
    tab = b.tensor("tab", (V, D), dtype, "weight")
    ids = b.tensor("ids", (N,), "int64", "input")
    o = b.tensor("o", (N, D), dtype, "output")
    b.begin_kernel("aten.embedding.default")
    b.statement([("n", N), ("d", D)], (o, ("n", "d")), L(tab, I(ids, "n"), "d"))
    b.program.outputs.append(o)
    return b.program


def test_gather_executes_and_checks_ranges():
    p = embedding_program(10, 4, 6)
    tab, ids = rand(10, 4), ints(6, hi=10)
    close(execute(p, {"tab": tab, "ids": ids})["o"], tab[ids])
    for bad in (torch.tensor([0, 1, 2, 3, 4, 10]), torch.tensor([0, -1, 2, 3, 4, 5])):
        with pytest.raises(ValueError, match=r"indirect index \{ids\[n\]\} takes values"):
            execute(p, {"tab": tab, "ids": bad})


def test_gather_costs_the_provable_minimum():
    V, D, N = 1000, 64, 32
    p = embedding_program(V, D, N)
    (k,) = p.kernels
    (st,) = k.statements
    io = kernel_io(p, k)
    assert io.reads["ids"].elements == N and io.reads["ids"].exact
    assert io.reads["tab"].elements == D and not io.reads["tab"].exact
    assert io.read_bytes == N * 8 + D * 4 and io.write_bytes == N * D * 4
    assert access_footprint(p, st, "tab", st.expr.index).exact is False
    g = lift(p)
    (d,) = g.ops()
    assert d.op_kind == "gather"
    assert "{ids[" in d.einsum
    assert d.operands[0].indirect and d.operands[0].ranks[0] is None
    assert isinstance(d.operands[0].index[0], DataDependent)


def test_union_with_an_indirect_access_adds_nothing():
    """tab[5, :] and tab[{ids[n]}, :]: the gathered row may be row 5; the union is 1 row."""
    p = embedding_program(10, 4, 6)
    st = p.kernels[0].statements[0]
    direct = (st, "tab", (A(5), A("d")))
    gathered = (st, "tab", st.expr.index)
    assert union_footprint(p, [direct, gathered]).elements == 4
    two_rows = (st, "tab", (A("d") * 0 + 7, A("d")))
    f = union_footprint(p, [direct, two_rows, gathered])
    assert f.elements == 8 and not f.exact


def test_gathered_values_are_counted_at_their_minimum():
    """exp(tab[{ids[n]}, d]) is evaluated at least once per column d (all ids equal)."""
    V, D, N = 50, 8, 20
    b = ProgramBuilder("g")
    tab = b.tensor("tab", (V, D), "float32", "weight")
    ids = b.tensor("ids", (N,), "int64", "input")
    o = b.tensor("o", (N, D), "float32", "output")
    b.begin_kernel("k")
    idx = Indirect(call("add", L(ids, "n"), Const(1)))  # index arithmetic is free
    st = b.statement([("n", N), ("d", D)], (o, ("n", "d")), call("exp", L(tab, idx, "d")))
    assert statement_ops(b.program, st) == {"sfu": D}
    b.program.outputs.append(o)
    tv, iv = rand(V, D), ints(N, hi=V - 1)
    close(execute(b.program, {"tab": tv, "ids": iv})["o"], torch.exp(tv[iv + 1]))


def test_gather_inside_a_contraction():
    """embedding_bag with per-sample weights: out[b, d] = sum_j tab[{ids[b, j]}, d] * w[b, j]."""
    V, D, B, J = 12, 5, 3, 4
    b = ProgramBuilder("bag")
    tab = b.tensor("tab", (V, D), "float32", "weight")
    ids = b.tensor("ids", (B, J), "int64", "input")
    w = b.tensor("w", (B, J), "float32", "input")
    o = b.tensor("o", (B, D), "float32", "output")
    b.begin_kernel("k")
    st = b.statement(
        [("b", B), ("d", D), ("j", J, True)],
        (o, ("b", "d")),
        call("mul", L(tab, I(ids, "b", "j"), "d"), L(w, "b", "j")),
        reduce="sum",
    )
    b.program.outputs.append(o)
    assert statement_ops(b.program, st) == {"cuda_fp32": 2 * B * J * D}
    tv, iv, wv = rand(V, D), ints(B, J, hi=V), rand(B, J, seed=3)
    want = (tv[iv] * wv[..., None]).sum(1)
    close(execute(b.program, {"tab": tv, "ids": iv, "w": wv})["o"], want)
    assert [d.op_kind for d in lift(b.program).ops()] == ["gather"]


def test_guarded_out_instances_may_hold_any_index():
    """out[i] = tab[{ids[i]}] where 1 <= i: ids[0] is garbage and never used."""
    b = ProgramBuilder("g")
    tab = b.tensor("tab", (5,), "float32", "input")
    ids = b.tensor("ids", (4,), "int64", "input")
    o = b.tensor("o", (4,), "float32", "output")
    b.begin_kernel("k")
    b.statement([("i", 4)], (o, ("i",)), L(tab, I(ids, "i")), guards=[Guard(A("i"), 1, 4)])
    b.program.outputs.append(o)
    tv = rand(5)
    got = execute(b.program, {"tab": tv, "ids": torch.tensor([-7, 4, 0, 2])})["o"]
    close(got, torch.stack([torch.tensor(0.0), tv[4], tv[0], tv[2]]))


def scatter_program(R, C, N, reduce, accumulate, dtype="float32", red=0):
    """out = self, then out[{idx[n]}, c] (reduce)= src[n, c] (summed over r < red first)."""
    b = ProgramBuilder("scatter")
    s = b.tensor("self", (R, C), dtype, "input")
    idx = b.tensor("idx", (N,), "int64", "input")
    src = b.tensor("src", (N, C, max(red, 1)), dtype, "input")
    o = b.tensor("o", (R, C), dtype, "output")
    b.begin_kernel("k")
    b.statement([("r", R), ("c", C)], (o, ("r", "c")), L(s, "r", "c"))
    dims = [("n", N), ("c", C)] + ([("j", red, True)] if red else [])
    st = b.statement(
        dims,
        (o, (I(idx, "n"), "c")),
        L(src, "n", "c", "j" if red else 0),
        reduce=reduce,
        accumulate=accumulate,
    )
    b.program.outputs.append(o)
    return b.program, st


TORCH_REDUCE = {None: "sum", "sum": "sum", "prod": "prod", "max": "amax", "min": "amin"}


@pytest.mark.parametrize("reduce", [None, "sum", "prod", "max", "min"])
@pytest.mark.parametrize("accumulate", [True, False])
def test_scatter_reductions_match_scatter_reduce(reduce, accumulate):
    R, C, N = 5, 3, 9
    p, _ = scatter_program(R, C, N, reduce, accumulate)
    sv, iv, xv = rand(R, C), ints(N, hi=R), rand(N, C, 1, seed=4)
    if reduce is None and not accumulate:  # overwrite: make the indices distinct
        iv = torch.randperm(R)[: N % R]
        p, _ = scatter_program(R, C, len(iv), None, False)
        xv = xv[: len(iv)]
        want = sv.clone()
        want[iv] = xv[..., 0]
    else:
        want = sv.scatter_reduce(
            0, iv[:, None].expand(N, C), xv[..., 0], TORCH_REDUCE[reduce], include_self=accumulate
        )
    close(execute(p, {"self": sv, "idx": iv, "src": xv})["o"], want)


def test_scatter_with_reduction_dims_and_chunking():
    R, C, N, J = 6, 4, 10, 3
    p, _ = scatter_program(R, C, N, "sum", False, red=J)
    sv, iv, xv = rand(R, C), ints(N, hi=R), rand(N, C, J)
    want = sv.scatter_reduce(0, iv[:, None].expand(N, C), xv.sum(-1), "sum", include_self=False)
    saved, ex.CHUNK_ELEMENTS = ex.CHUNK_ELEMENTS, 4
    try:
        got = execute(p, {"self": sv, "idx": iv, "src": xv})["o"]
    finally:
        ex.CHUNK_ELEMENTS = saved
    close(got, want)


def test_scatter_costs():
    R, C, N = 100, 16, 40
    p, st = scatter_program(R, C, N, None, True)  # index_add
    assert statement_ops(p, st) == {"cuda_fp32": N * C}
    io = kernel_io(p, p.kernels[0])
    assert io.reads["self"].elements == R * C and io.reads["idx"].elements == N
    assert io.writes["o"].elements == R * C  # the copy covers everything; the scatter adds none
    assert "o" not in io.reads  # written by the copy before the scatter reads it
    p, st = scatter_program(R, C, N, "sum", False, red=5)  # include_self=False, with a sum
    # terms N·C·5, at most N·C distinct outputs: N·C·4 combines at least
    assert statement_ops(p, st) == {"cuda_fp32": N * C * 4}
    g = lift(p)
    assert [d.op_kind for d in g.ops()] == ["copy", "scatter"]


def test_scatter_drops_instances_cut_by_parallel_guards():
    R, C, N = 4, 2, 6
    b = ProgramBuilder("s")
    idx = b.tensor("idx", (N,), "int64", "input")
    src = b.tensor("src", (N, C), "float32", "input")
    o = b.tensor("o", (R, C), "float32", "output")
    b.begin_kernel("k")
    b.statement(
        [("n", N), ("c", C)],
        (o, (I(idx, "n"), "c")),
        L(src, "n", "c"),
        accumulate=True,
        guards=[Guard(A("n"), 2, N)],
    )
    b.program.outputs.append(o)
    iv, sv = torch.tensor([99, -3, 0, 1, 0, 3]), rand(N, C)  # garbage where n < 2
    want = torch.zeros(R, C).index_add(0, iv[2:], sv[2:])
    close(execute(b.program, {"idx": iv, "src": sv})["o"], want)


def test_scatter_into_a_half_precision_view():
    b = ProgramBuilder("s")
    base = b.tensor("base", (6, 4), "float16", "output")
    idx = b.tensor("idx", (5,), "int64", "input")
    src = b.tensor("src", (5, 2), "float16", "input")
    v = b.view("v", base, (3, 2), (4, 2), 5)  # base[1:4, 1::2]
    b.begin_kernel("k")
    b.statement([("n", 5), ("c", 2)], (v, (I(idx, "n"), "c")), L(src, "n", "c"), accumulate=True)
    b.program.outputs.append(base)
    iv, sv = ints(5, hi=3), rand(5, 2, dtype=torch.float16)
    want = torch.zeros(6, 4, dtype=torch.float16)
    want[1:4, 1::2] = torch.zeros(3, 2).index_add(0, iv, sv.float()).half()
    close(execute(b.program, {"idx": iv, "src": sv})["base"], want, 1e-3)


def test_indirect_access_of_an_overlapping_view_claims_one_element():
    b = ProgramBuilder("o")
    x = b.tensor("x", (10,), "float32", "input")
    win = b.view("win", x, (8, 3), (1, 1), 0)  # unfold-like overlapping windows
    ids = b.tensor("ids", (4,), "int64", "input")
    o = b.tensor("o", (4, 3), "float32", "output")
    b.begin_kernel("k")
    st = b.statement([("n", 4), ("w", 3)], (o, ("n", "w")), L(win, I(ids, "n"), "w"))
    assert access_footprint(b.program, st, win, st.expr.index).elements == 1
    b.program.outputs.append(o)
    xv, iv = rand(10), torch.tensor([0, 7, 3, 3])
    close(execute(b.program, {"x": xv, "ids": iv})["o"], xv.unfold(0, 3, 1)[iv])


# ============================================================================== scans
def scan_program(B, n, reduce, reverse=False, dtype="float32"):
    b = ProgramBuilder("scan")
    x = b.tensor("x", (B, n), dtype, "input")
    o = b.tensor("o", (B, n), dtype, "output")
    b.begin_kernel("k")
    i = A(n - 1) - A("i") if reverse else A("i")
    st = b.statement([("b", B), ("i", n)], (o, ("b", i)), L(x, "b", i), reduce=reduce, scan="i")
    b.program.outputs.append(o)
    return b.program, st


SCAN_TORCH = {
    "sum": torch.cumsum,
    "prod": torch.cumprod,
    "max": lambda t, d: torch.cummax(t, d).values,
    "min": lambda t, d: torch.cummin(t, d).values,
    "logsumexp": torch.logcumsumexp,
}


@pytest.mark.parametrize("reduce", list(SCAN_TORCH))
@pytest.mark.parametrize("reverse", [False, True])
def test_scans_execute_like_torch(reduce, reverse):
    p, _ = scan_program(3, 9, reduce, reverse)
    x = rand(3, 9)
    want = SCAN_TORCH[reduce](x.flip(1) if reverse else x, 1)
    close(execute(p, {"x": x})["o"], want.flip(1) if reverse else want)


def test_scan_is_not_split_along_the_scanned_dim():
    p, _ = scan_program(4, 50, "sum")
    x = rand(4, 50)
    saved, ex.CHUNK_ELEMENTS = ex.CHUNK_ELEMENTS, 8
    try:
        close(execute(p, {"x": x})["o"], x.cumsum(1))
    finally:
        ex.CHUNK_ELEMENTS = saved


def test_exclusive_scan_by_index_arithmetic():
    """o[b, 0] = 0; o[b, i + 1] = sum_{i' <= i} x[b, i'] for i < n - 1."""
    B, n = 2, 6
    b = ProgramBuilder("excl")
    x = b.tensor("x", (B, n), "float32", "input")
    o = b.tensor("o", (B, n), "float32", "output")
    b.begin_kernel("k")
    b.statement([("b", B)], (o, ("b", 0)), Const(0.0))
    b.statement(
        [("b", B), ("i", n - 1)], (o, ("b", A("i") + 1)), L(x, "b", "i"), reduce="sum", scan="i"
    )
    b.program.outputs.append(o)
    xv = rand(B, n)
    close(execute(b.program, {"x": xv})["o"], xv.cumsum(1) - xv)


def test_guarded_scan_skips_and_keeps():
    """Masked-out elements contribute nothing and are not written."""
    b = ProgramBuilder("g")
    x = b.tensor("x", (8,), "float32", "input")
    o = b.tensor("o", (8,), "float32", "output")
    b.begin_kernel("k")
    b.statement([("i", 8)], (o, ("i",)), Const(-1.0))
    b.statement(
        [("i", 8)], (o, ("i",)), L(x, "i"), reduce="sum", scan="i", guards=[Guard(A("i"), 2, 6)]
    )
    b.program.outputs.append(o)
    xv = rand(8)
    want = torch.full((8,), -1.0)
    want[2:6] = xv[2:6].cumsum(0)
    close(execute(b.program, {"x": xv})["o"], want)


def test_scan_costs_one_combine_per_element_beyond_the_first():
    B, n = 8, 1000
    p, st = scan_program(B, n, "sum")
    assert statement_ops(p, st) == {"cuda_fp32": (n - 1) * B}
    p, st = scan_program(B, n, "logsumexp")
    assert statement_ops(p, st) == {"cuda_fp32": 2 * (n - 1) * B, "sfu": (n - 1) * B}
    io = kernel_io(p, p.kernels[0])
    assert io.read_bytes == io.write_bytes == B * n * 4 and io.exact
    g = lift(p)
    (d,) = g.ops()
    assert d.op_kind == "scan" and d.scan in d.ranks
    assert "scan_logsumexp[i]" in str(p)


def test_logsumexp_reduction():
    """A plain logsumexp reduction: n - 1 combines per row of 2 flops and 1 MUFU op."""
    B, n = 3, 7
    b = ProgramBuilder("lse")
    x = b.tensor("x", (B, n), "float32", "input")
    o = b.tensor("o", (B,), "float32", "output")
    b.begin_kernel("k")
    st = b.statement([("b", B), ("r", n, True)], (o, ("b",)), L(x, "b", "r"), reduce="logsumexp")
    b.program.outputs.append(o)
    assert statement_ops(b.program, st) == {"cuda_fp32": 2 * (n - 1) * B, "sfu": (n - 1) * B}
    xv = rand(B, n)
    close(execute(b.program, {"x": xv})["o"], torch.logsumexp(xv, 1))
    assert "logaddexp=" in str(b.program)
    idx = b.tensor("idx", (B,), "int64", "input")
    with pytest.raises(ValueError, match="logsumexp scatter"):
        b.statement(
            [("b", B), ("r", n, True)], (o, (I(idx, "b"),)), L(x, "b", "r"), reduce="logsumexp"
        )


def test_malformed_scans_are_rejected():
    b = ProgramBuilder("bad")
    x = b.tensor("x", (4, 3), "float32", "input")
    o = b.tensor("o", (4,), "float32", "output")
    b.begin_kernel("k")
    with pytest.raises(ValueError, match="not a parallel dim"):
        b.statement([("i", 4), ("j", 3, True)], (o, ("i",)), L(x, "i", "j"), reduce="sum", scan="j")
    with pytest.raises(ValueError, match="needs a reduce operator"):
        b.statement([("i", 4)], (o, ("i",)), L(x, "i", 0), scan="i")


# ============================================================================ externs
def sort_program(B, n, k=None, dtype="float32"):
    b = ProgramBuilder("sort")
    x = b.tensor("x", (B, n), dtype, "input")
    m = k or n
    v = b.tensor("v", (B, m), dtype, "output")
    i = b.tensor("i", (B, m), "int64", "output")
    b.begin_kernel("aten.sort.default")
    name, attrs = ("topk", {"k": k}) if k else ("sort", {"descending": True})
    dims = [("b", B), ("p", m), ("r", n, True)]
    for out, which in ((v, "values"), (i, "indices")):
        b.statement(
            dims, (out, ("b", "p")), L(x, "b", "r"), extern=f"{name}.{which}", extern_attrs=attrs
        )
    b.program.outputs += [v, i]
    return b.program


def test_extern_sort_and_topk():
    x = rand(3, 11)
    got = execute(sort_program(3, 11), {"x": x})
    want = x.sort(1, descending=True)
    close(got["v"], want.values)
    close(got["i"], want.indices)
    got = execute(sort_program(3, 11, k=4), {"x": x})
    want = x.topk(4, 1)
    close(got["v"], want.values)
    close(got["i"], want.indices)


def test_extern_costs_memory_only():
    B, n = 4, 1000
    p = sort_program(B, n)
    (k,) = p.kernels
    assert all(statement_ops(p, st) == {} for st in k.statements)
    io = kernel_io(p, k)
    assert io.read_bytes == B * n * 4 and io.write_bytes == B * n * (4 + 8) and io.exact
    g = lift(p)
    kinds = list(g.ops())
    assert {d.op_kind for d in kinds} == {"extern"}
    assert {d.extern for d in kinds} == {"sort.values", "sort.indices"}
    assert "sort.values[r](x[b,r], descending=True)" in str(p)


def test_extern_row_spans_several_dims():
    """The median of each (3, 4) slab: the row is r0, r1 flattened."""
    b = ProgramBuilder("med")
    x = b.tensor("x", (2, 3, 4), "float32", "input")
    o = b.tensor("o", (2,), "float32", "output")
    b.begin_kernel("k")
    b.statement(
        [("b", 2), ("p", 1), ("r0", 3, True), ("r1", 4, True)],
        (o, ("b",)),
        L(x, "b", "r0", "r1"),
        extern="median.values",
    )
    b.program.outputs.append(o)
    xv = rand(2, 3, 4)
    close(execute(b.program, {"x": xv})["o"], xv.flatten(1).median(1).values)


def test_malformed_externs_are_rejected():
    b = ProgramBuilder("bad")
    x = b.tensor("x", (4, 3), "float32", "input")
    o = b.tensor("o", (4, 3), "float32", "output")
    b.begin_kernel("k")
    dims = [("b", 4), ("p", 3), ("r", 3, True)]
    with pytest.raises(ValueError, match="not in solar.ir.extern.EXTERN_OPS"):
        b.statement(dims, (o, ("b", "p")), L(x, "b", "r"), extern="sort.nothing")
    with pytest.raises(ValueError, match="uses the output position dim p"):
        b.statement(dims, (o, ("b", "p")), L(x, "b", "p"), extern="sort.values")
    with pytest.raises(ValueError, match="takes no reduce"):
        b.statement(dims, (o, ("b", "p")), L(x, "b", "r"), extern="sort.values", reduce="sum")


# ====================================================== per-element oracle, fuzzed
def _reference(program, values):
    """A per-instance interpreter of the IR with loops, indirect indices and scatters."""
    from solar.interp.torch.scalar import TORCH_OPS
    from solar.ir.ops import REDUCTION_IDENTITY

    combine = {None: lambda a, b: a + b, "sum": lambda a, b: a + b, "prod": lambda a, b: a * b}
    combine |= {"max": max, "min": min}
    mem = {n: values[n].clone().double() for n in program.inputs}
    for n, t in program.tensors.items():
        mem.setdefault(n, torch.zeros(t.shape, dtype=torch.float64))

    def index(e, env):
        if isinstance(e, Indirect):
            return int(ev(e.expr, env))
        return e.evaluate(env)

    def ev(e, env):
        if isinstance(e, Load):
            return float(mem[e.tensor][tuple(index(i, env) for i in e.index)])
        if isinstance(e, Const):
            return float(e.value)
        if isinstance(e, Index):
            return float(e.expr.evaluate(env))
        args = [torch.tensor(ev(a, env), dtype=torch.float64) for a in e.args]
        return float(TORCH_OPS[e.op](*args, **dict(e.attrs)))

    for k in program.kernels:
        for it in itertools.product(*(range(d.extent) for d in k.loops)):
            loop_env = {d.name: v for d, v in zip(k.loops, it, strict=True)}
            for st in k.statements:
                new = mem[st.out.tensor].clone()
                par, red = st.parallel_dims, st.reduction_dims
                seen: dict[tuple, float] = {}
                for pi in itertools.product(*(range(d.extent) for d in par)):
                    env = {**loop_env, **{d.name: i for d, i in zip(par, pi, strict=True)}}
                    acc, hit = None, False
                    if st.reduce:
                        acc = REDUCTION_IDENTITY[st.reduce]
                    for ri in itertools.product(*(range(d.extent) for d in red)):
                        env2 = {**env, **{d.name: i for d, i in zip(red, ri, strict=True)}}
                        if all(g.lo <= g.expr.evaluate(env2) < g.hi for g in st.guards):
                            v = ev(st.expr, env2)
                            acc = combine[st.reduce](acc, v) if st.reduce else v
                            hit = True
                    if not hit and (st.reduce is None or st.out.indirect):
                        continue
                    oi = tuple(index(e, env) for e in st.out.index)
                    if st.accumulate:
                        new[oi] = combine[st.reduce](float(new[oi]), acc)
                    elif st.out.indirect and st.reduce:  # include_self=False
                        seen[oi] = combine[st.reduce](seen[oi], acc) if oi in seen else acc
                        new[oi] = seen[oi]
                    else:
                        new[oi] = acc
                mem[st.out.tensor] = new
    return {n: mem[n] for n in program.outputs}


@settings(max_examples=40, deadline=None)
@given(
    reduce=hs.sampled_from([None, "sum", "max", "min"]),
    accumulate=hs.booleans(),
    gather=hs.booleans(),
    steps=hs.integers(1, 3),
    seed=hs.integers(0, 1000),
)
def test_fuzz_loops_gathers_scatters_against_oracle(reduce, accumulate, gather, steps, seed):
    """Per step t: o[{idx[t, n]}, c] (reduce)= sum_j src[t, n, j] * tab[{g[n]}, c] or so."""
    R, C, N, J = 4, 2, 5, 2
    b = ProgramBuilder("fuzz")
    idx = b.tensor("idx", (steps, N), "int64", "input")
    gi = b.tensor("g", (N,), "int64", "input")
    tab = b.tensor("tab", (3, C), "float64", "input")
    src = b.tensor("src", (steps, N, J), "float64", "input")
    o = b.tensor("o", (R, C), "float64", "output")
    b.begin_kernel("init")
    b.statement([("r", R), ("c", C)], (o, ("r", "c")), Index(A("r") + A("c")))
    b.begin_kernel("k", loops=[("t", steps)])
    factor = L(tab, I(gi, "n"), "c") if gather else Index(A("c") + 1)
    expr = call("mul", L(src, "t", "n", "j"), factor)
    red = reduce is not None
    dims = [("n", N), ("c", C)] + ([("j", J, True)] if red else [("j", 1)])
    b.statement(
        dims,
        (o, (I(idx, "t", "n"), "c")),
        expr,
        reduce=reduce,
        accumulate=accumulate or not red,
    )
    b.program.outputs.append(o)
    g = torch.Generator().manual_seed(seed)
    vals = {
        "idx": torch.randint(0, R, (steps, N), generator=g),
        "g": torch.randint(0, 3, (N,), generator=g),
        "tab": torch.rand(3, C, generator=g, dtype=torch.float64) + 0.5,
        "src": torch.rand(steps, N, J, generator=g, dtype=torch.float64) + 0.5,
    }
    got = execute(b.program, vals)["o"]
    want = _reference(b.program, vals)["o"]
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    lift(b.program)


def test_reference_agrees_on_the_rnn():
    p = rnn_program(3, 2, 2)
    x, w, h0 = rand(3, 2, 2).double(), rand(2, 2, seed=1).double(), rand(2, 2, seed=2).double()
    p2 = rnn_program(3, 2, 2, dtype="float64")
    got = execute(p2, {"x": x, "W": w, "h0": h0})["h"]
    torch.testing.assert_close(got, _reference(p2, {"x": x, "W": w, "h0": h0})["h"])
    assert math.isfinite(float(got.sum())) and p.kernels[0].loops == (Dim("t", 3),)
