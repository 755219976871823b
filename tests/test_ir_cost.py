"""Op counts per statement and DRAM I/O per kernel / program, against hand-derived numbers."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.ir.affine import Affine
from solar.ir.cost import (
    OP_CLASSES,
    KernelIO,
    contraction_class,
    is_contraction,
    kernel_io,
    program_io,
    statement_ops,
)
from solar.ir.footprint import Footprint
from solar.ir.program import Guard, ProgramBuilder
from solar.ir.scalar import Const, Index, Load, call

A = Affine.of


def _nonzero(ops: dict[str, int]) -> dict[str, int]:
    assert set(ops) <= set(OP_CLASSES) and all(ops.values())
    return ops


def _mm(dtype: str, n: int = 4096, precision: str | None = None, cast: bool = False):
    b = ProgramBuilder("mm")
    x = b.tensor("x", (n, n), dtype, "input")
    w = b.tensor("w", (n, n), dtype, "weight")
    y = b.tensor("y", (n, n), "float32" if cast else dtype, "output")
    b.begin_kernel("aten.mm.default")
    lx, lw = Load(x, (A("m"), A("k"))), Load(w, (A("k"), A("n")))
    if cast:
        lx, lw = call("cast", lx, dtype="float32"), call("cast", lw, dtype="float32")
    s = b.statement(
        [("m", n), ("n", n), ("k", n, True)],
        (y, ("m", "n")),
        call("mul", lx, lw),
        reduce="sum",
        precision=precision,
    )
    return b.program, s


def test_mm_fp32_on_cuda_cores():
    p, s = _mm("float32")
    assert is_contraction(s, p)
    assert _nonzero(statement_ops(p, s)) == {"cuda_fp32": 2 * 4096**3}


def test_mm_tf32_and_bf16_on_tensor_cores():
    p, s = _mm("float32", precision="tf32")
    assert _nonzero(statement_ops(p, s)) == {"tc_tf32": 2 * 4096**3}
    p, s = _mm("bfloat16")
    assert _nonzero(statement_ops(p, s)) == {"tc_bf16": 2 * 4096**3}
    # fp16 operands cast to fp32 (fp32 accumulation) still run on the fp16 tensor cores
    p, s = _mm("float16", cast=True)
    assert contraction_class(s, p) == "tc_fp16"
    assert _nonzero(statement_ops(p, s)) == {"tc_fp16": 2 * 4096**3}


@pytest.mark.parametrize(
    ("dtype", "cls"),
    [("float8_e4m3fn", "tc_fp8"), ("int8", "tc_int8"), ("float64", "tc_fp64")],
)
def test_mm_other_dtypes(dtype, cls):
    p, s = _mm(dtype, n=64)
    assert _nonzero(statement_ops(p, s)) == {cls: 2 * 64**3}


def test_causal_masked_contraction_counts_guarded_instances():
    n, d = 1024, 64
    b = ProgramBuilder("attn")
    q = b.tensor("q", (n, d), "bfloat16", "input")
    k = b.tensor("k", (n, d), "bfloat16", "input")
    sc = b.tensor("s", (n, n), "float32", "output")
    b.begin_kernel("scores")
    s = b.statement(
        [("i", n), ("j", n), ("e", d, True)],
        (sc, ("i", "j")),
        call("mul", Load(q, (A("i"), A("e"))), Load(k, (A("j"), A("e")))),
        reduce="sum",
        guards=[Guard(A("i") - A("j"), 0, n)],
    )
    assert _nonzero(statement_ops(b.program, s)) == {"tc_bf16": 2 * d * n * (n + 1) // 2}


def _softmax(r: int = 128, c: int = 1000):
    b = ProgramBuilder("softmax")
    x = b.tensor("x", (r, c), "float32", "input")
    m = b.tensor("m", (r,), "float32", "local")
    e = b.tensor("e", (r, c), "float32", "local")
    s = b.tensor("s", (r,), "float32", "local")
    y = b.tensor("y", (r, c), "float32", "output")
    b.program.outputs.append(y)
    b.begin_kernel("aten._softmax.default")
    ij = (A("i"), A("j"))
    st_max = b.statement([("i", r), ("j", c, True)], (m, ("i",)), Load(x, ij), reduce="max")
    st_exp = b.statement(
        [("i", r), ("j", c)],
        (e, ("i", "j")),
        call("exp", call("sub", Load(x, ij), Load(m, (A("i"),)))),
    )
    st_sum = b.statement([("i", r), ("j", c, True)], (s, ("i",)), Load(e, ij), reduce="sum")
    st_div = b.statement(
        [("i", r), ("j", c)], (y, ("i", "j")), call("div", Load(e, ij), Load(s, (A("i"),)))
    )
    return b.program, (st_max, st_exp, st_sum, st_div)


def test_softmax_statements():
    r, c = 128, 1000
    p, (st_max, st_exp, st_sum, st_div) = _softmax(r, c)
    assert not any(is_contraction(s, p) for s in (st_max, st_exp, st_sum, st_div))
    assert _nonzero(statement_ops(p, st_max)) == {"cuda_fp32": r * (c - 1)}
    assert _nonzero(statement_ops(p, st_exp)) == {"cuda_fp32": r * c, "sfu": r * c}
    assert _nonzero(statement_ops(p, st_sum)) == {"cuda_fp32": r * (c - 1)}
    assert _nonzero(statement_ops(p, st_div)) == {"cuda_fp32": r * c}
    io = kernel_io(p, p.kernels[0])
    assert io.reads == {"x": Footprint(r * c, True)}  # locals are on chip
    assert io.writes == {"y": Footprint(r * c, True)}
    assert io.read_bytes == io.write_bytes == 4 * r * c


def test_hoisting_row_only_subexpression():
    r, c = 64, 512
    b = ProgramBuilder("hoist")
    x = b.tensor("x", (r, c), "float32", "input")
    v = b.tensor("v", (r,), "float32", "input")
    y = b.tensor("y", (r, c), "float32", "output")
    b.begin_kernel("k")
    # y[i,j] = x[i,j] * exp(v[i] * 2): the exp and the inner mul run once per row
    s = b.statement(
        [("i", r), ("j", c)],
        (y, ("i", "j")),
        call(
            "mul",
            Load(x, (A("i"), A("j"))),
            call("exp", call("mul", Load(v, (A("i"),)), Const(2.0))),
        ),
    )
    assert _nonzero(statement_ops(b.program, s)) == {"cuda_fp32": r * c + r, "sfu": r}


def test_broadcast_view_counted_per_element_and_constants_folded():
    r, c = 64, 512
    b = ProgramBuilder("bc")
    v = b.tensor("v", (c,), "bfloat16", "input")
    ve = b.view("ve", v, (r, c), (0, 1))
    y = b.tensor("y", (r, c), "bfloat16", "output")
    b.begin_kernel("k")
    s = b.statement(
        [("i", r), ("j", c)],
        (y, ("i", "j")),
        call("add", call("tanh", Load(ve, (A("i"), A("j")))), call("exp", Const(1.0))),
    )
    # tanh once per element of v; exp(1.0) folded; the add depends on (i, j) through ve only
    assert _nonzero(statement_ops(b.program, s)) == {"cuda_bf16": c, "sfu": c}


def test_index_dependence_and_bool_compute():
    n = 32
    b = ProgramBuilder("mask")
    x = b.tensor("x", (n, n), "float16", "input")
    mk = b.tensor("mk", (n, n), "bool", "output")
    b.begin_kernel("k")
    # mk[i,j] = (x[i,j] > 0) && (j <= i): comparisons on fp16 loads, Index compare on ints
    s = b.statement(
        [("i", n), ("j", n)],
        (mk, ("i", "j")),
        call(
            "logical_and",
            call("gt", Load(x, (A("i"), A("j"))), Const(0.0)),
            call("ge", Index(A("i") - A("j")), Const(0)),
        ),
    )
    ops = _nonzero(statement_ops(b.program, s))
    # gt and logical_and see the fp16 loads; ge over the Index i - j: 2n - 1 distinct values,
    # it has no load below it, so it runs on the integer pipe
    assert ops == {"cuda_fp16": 2 * n * n, "cuda_int32": 2 * n - 1}


def test_pure_copy_and_cast_cost_nothing():
    b = ProgramBuilder("cp")
    x = b.tensor("x", (8, 8), "float32", "input")
    y = b.tensor("y", (8, 8), "bfloat16", "output")
    b.begin_kernel("k")
    s = b.statement(
        [("i", 8), ("j", 8)],
        (y, ("i", "j")),
        call("cast", Load(x, (A("j"), A("i"))), dtype="bfloat16"),
    )
    assert _nonzero(statement_ops(b.program, s)) == {}


def test_accumulate_statements():
    m, n = 16, 24
    b = ProgramBuilder("acc")
    x = b.tensor("x", (m, n), "float32", "input")
    o = b.tensor("o", (m, n), "float32", "output")
    r = b.tensor("r", (m,), "float32", "output")
    b.begin_kernel("k")
    s1 = b.statement(
        [("i", m), ("j", n)], (o, ("i", "j")), Load(x, (A("i"), A("j"))), accumulate=True
    )
    s2 = b.statement(
        [("i", m), ("j", n, True)],
        (r, ("i",)),
        Load(x, (A("i"), A("j"))),
        reduce="sum",
        accumulate=True,
    )
    assert _nonzero(statement_ops(b.program, s1)) == {"cuda_fp32": m * n}
    assert _nonzero(statement_ops(b.program, s2)) == {"cuda_fp32": m * n}


def test_reduction_of_broadcast_is_not_overcounted():
    # sum over j of a value independent of j: no distinct terms to combine
    m, n = 16, 24
    b = ProgramBuilder("bred")
    v = b.tensor("v", (m,), "float32", "input")
    r = b.tensor("r", (m,), "float32", "output")
    b.begin_kernel("k")
    s = b.statement([("i", m), ("j", n, True)], (r, ("i",)), Load(v, (A("i"),)), reduce="sum")
    assert _nonzero(statement_ops(b.program, s)) == {}


def test_kernel_io_addmm():
    m, k, n = 64, 32, 48
    b = ProgramBuilder("addmm")
    x = b.tensor("x", (m, k), "bfloat16", "input")
    w = b.tensor("w", (k, n), "bfloat16", "weight")
    bias = b.tensor("bias", (n,), "bfloat16", "weight")
    out = b.tensor("out", (m, n), "bfloat16", "output")
    b.program.outputs.append(out)
    b.begin_kernel("aten.addmm.default")
    bias_e = b.view("bias_e", bias, (m, n), (0, 1))
    b.statement([("i", m), ("j", n)], (out, ("i", "j")), Load(bias_e, (A("i"), A("j"))))
    s = b.statement(
        [("i", m), ("j", n), ("l", k, True)],
        (out, ("i", "j")),
        call("mul", Load(x, (A("i"), A("l"))), Load(w, (A("l"), A("j")))),
        reduce="sum",
        accumulate=True,
    )
    assert _nonzero(statement_ops(b.program, s)) == {"tc_bf16": 2 * m * n * k}
    io = kernel_io(b.program, b.program.kernels[0])
    assert io.reads == {
        "bias": Footprint(n, True),
        "x": Footprint(m * k, True),
        "w": Footprint(k * n, True),
    }
    assert io.writes == {"out": Footprint(m * n, True)}
    assert io.read_bytes == 2 * (n + m * k + k * n)
    assert io.write_bytes == 2 * m * n
    assert io.exact and isinstance(io, KernelIO)


def test_kernel_io_in_place_reads_count():
    b = ProgramBuilder("inplace")
    x = b.tensor("x", (10, 10), "float32", "intermediate")
    b.begin_kernel("relu_")
    b.statement([("i", 10), ("j", 10)], (x, ("i", "j")), call("relu", Load(x, (A("i"), A("j")))))
    io = kernel_io(b.program, b.program.kernels[0])
    assert io.reads == {"x": Footprint(100, True)}
    assert io.writes == {"x": Footprint(100, True)}


def _linear(b, x, w, y, m, k, n):
    b.begin_kernel("aten.mm.default")
    b.statement(
        [("i", m), ("j", n), ("l", k, True)],
        (y, ("i", "j")),
        call("mul", Load(x, (A("i"), A("l"))), Load(w, (A("l"), A("j")))),
        reduce="sum",
    )


def test_program_io_mlp():
    m, d, h = 8, 64, 256
    b = ProgramBuilder("mlp")
    w1 = b.tensor("w1", (d, h), "bfloat16", "weight")
    w2 = b.tensor("w2", (h, d), "bfloat16", "weight")
    x = b.tensor("x", (m, d), "bfloat16", "input")
    hid = b.tensor("h", (m, h), "bfloat16")
    act = b.tensor("a", (m, h), "bfloat16")
    y = b.tensor("y", (m, d), "bfloat16", "output")
    b.program.outputs.append(y)
    _linear(b, x, w1, hid, m, d, h)
    b.begin_kernel("aten.relu.default")
    b.statement([("i", m), ("j", h)], (act, ("i", "j")), call("relu", Load(hid, (A("i"), A("j")))))
    _linear(b, act, w2, y, m, h, d)
    io = program_io(b.program)
    assert io.reads == {
        "x": Footprint(m * d, True),
        "w1": Footprint(d * h, True),
        "w2": Footprint(h * d, True),
    }
    assert io.writes == {"y": Footprint(m * d, True)}
    assert io.bytes == 2 * (m * d + 2 * d * h + m * d)
    # unfused: the intermediates go through DRAM
    k2 = kernel_io(b.program, b.program.kernels[1])
    assert k2.reads == {"h": Footprint(m * h, True)} and k2.writes == {"a": Footprint(m * h, True)}


def test_program_io_kv_cache_update_then_read():
    # cache[pos] = k_new; read cache[0:pos+1]: only the old rows come from DRAM
    t, d, pos = 100, 16, 40
    b = ProgramBuilder("kv")
    cache = b.tensor("cache", (t, d), "float16", "input")
    knew = b.tensor("knew", (d,), "float16", "input")
    q = b.tensor("q", (d,), "float16", "input")
    sc = b.tensor("sc", (pos + 1,), "float32", "output")
    b.program.outputs += [sc, cache]
    b.begin_kernel("index_put")
    b.statement([("e", d)], (cache, (pos, "e")), Load(knew, (A("e"),)))
    b.begin_kernel("scores")
    b.statement(
        [("j", pos + 1), ("e", d, True)],
        (sc, ("j",)),
        call("mul", Load(q, (A("e"),)), Load(cache, (A("j"), A("e")))),
        reduce="sum",
    )
    io = program_io(b.program)
    assert io.reads == {
        "knew": Footprint(d, True),
        "q": Footprint(d, True),
        "cache": Footprint(pos * d, True),
    }
    assert io.writes == {"cache": Footprint(d, True), "sc": Footprint(pos + 1, True)}


@settings(max_examples=150, deadline=None)
@given(
    ni=st.integers(1, 6),
    nj=st.integers(1, 6),
    nk=st.integers(1, 5),
    a=st.integers(-2, 2),
    c=st.integers(-2, 2),
    lo=st.integers(-4, 6),
    width=st.integers(0, 10),
)
def test_property_guarded_contraction_instances(ni, nj, nk, a, c, lo, width):
    b = ProgramBuilder("g")
    x = b.tensor("x", (ni, nk), "bfloat16", "input")
    w = b.tensor("w", (nk, nj), "bfloat16", "input")
    y = b.tensor("y", (ni, nj), "float32", "output")
    b.begin_kernel("k")
    expr = a * A("i") + c * A("j") + A("k")
    s = b.statement(
        [("i", ni), ("j", nj), ("k", nk, True)],
        (y, ("i", "j")),
        call("mul", Load(x, (A("i"), A("k"))), Load(w, (A("k"), A("j")))),
        reduce="sum",
        guards=[Guard(expr, lo, lo + width)],
    )
    want = sum(
        1
        for i, j, k in itertools.product(range(ni), range(nj), range(nk))
        if lo <= a * i + c * j + k < lo + width
    )
    assert statement_ops(b.program, s).get("tc_bf16", 0) == 2 * want


def test_identical_subtrees_counted_once():
    n = 100
    b = ProgramBuilder("cse")
    x = b.tensor("x", (n,), "float32", "input")
    y = b.tensor("y", (n,), "float32", "output")
    b.begin_kernel("k")
    ex = call("exp", Load(x, (A("i"),)))
    s = b.statement([("i", n)], (y, ("i",)), call("mul", ex, ex))
    assert statement_ops(b.program, s) == {"cuda_fp32": n, "sfu": n}


def test_contraction_with_both_operands_broadcast_over_a_dim():
    # out[b,i,j] = sum_k a[i,k] * w[k,j] for every b: the products repeat across b
    nb, m, k, n = 4, 8, 16, 32
    b = ProgramBuilder("bmm")
    a = b.tensor("a", (m, k), "float16", "input")
    ae = b.view("ae", a, (nb, m, k), (0, k, 1))
    w = b.tensor("w", (k, n), "float16", "weight")
    o = b.tensor("o", (nb, m, n), "float16", "output")
    b.begin_kernel("bmm")
    s = b.statement(
        [("b", nb), ("i", m), ("j", n), ("l", k, True)],
        (o, ("b", "i", "j")),
        call("mul", Load(ae, (A("b"), A("i"), A("l"))), Load(w, (A("l"), A("j")))),
        reduce="sum",
    )
    assert statement_ops(b.program, s) == {"tc_fp16": 2 * m * n * k}


def test_kernel_io_interleaved_writes_exact_when_the_bounds_meet():
    """Reads, then a write, then reads again: the lower bound (all 10 read before the write)
    meets the upper bound (|R| - |W0| = 10), so the count is exact."""
    b = ProgramBuilder("il")
    x = b.tensor("x", (10,), "float32", "intermediate")
    y = b.tensor("y", (10,), "float32", "intermediate")
    z = b.tensor("z", (10,), "float32", "intermediate")
    b.begin_kernel("k")
    b.statement([("i", 10)], (y, ("i",)), Load(x, (A("i"),)))
    b.statement([("i", 5)], (x, ("i",)), Const(0.0))
    b.statement([("i", 10)], (z, ("i",)), Load(x, (A("i"),)))
    io = kernel_io(b.program, b.program.kernels[0])
    assert io.reads == {"x": Footprint(10, True)}
    assert io.writes == {
        "x": Footprint(5, True),
        "y": Footprint(10, True),
        "z": Footprint(10, True),
    }


def test_kernel_io_interleaved_writes_are_a_lower_bound():
    """Read x[0:5], write x[0:10], read x[0:10]: 5 elements come from DRAM; the upper bound
    |R| - |W0| = 10 does not meet the lower bound 5, which is reported as a bound."""
    b = ProgramBuilder("il2")
    x = b.tensor("x", (10,), "float32", "intermediate")
    y = b.tensor("y", (5,), "float32", "intermediate")
    z = b.tensor("z", (10,), "float32", "intermediate")
    b.begin_kernel("k")
    b.statement([("i", 5)], (y, ("i",)), Load(x, (A("i"),)))
    b.statement([("i", 10)], (x, ("i",)), Const(0.0))
    b.statement([("i", 10)], (z, ("i",)), Load(x, (A("i"),)))
    io = kernel_io(b.program, b.program.kernels[0])
    assert io.reads == {"x": Footprint(5, False)}
