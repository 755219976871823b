"""The counting oracle itself (:mod:`solar.interp.torch.oracle`): hand-derived counts on small
programs built directly in the IR, the provable minimum of gathers met by its tightest data, its
checks (indices outside a tensor), and :func:`check` reporting disagreements."""

from __future__ import annotations

import pytest
import torch

from solar.interp.torch.oracle import OracleError, check, count
from solar.ir import Affine, Const, Guard, Index, Indirect, Load, ProgramBuilder, call

A = Affine.of


def test_matmul_counts():
    m, k, n = 3, 4, 5
    b = ProgramBuilder("mm")
    x = b.tensor("x", (m, k), "float32", "input")
    w = b.tensor("w", (k, n), "float32", "weight")
    y = b.tensor("y", (m, n), "float32", "output")
    b.begin_kernel("mm")
    b.statement(
        [("i", m), ("j", n), ("r", k, True)],
        (y, ("i", "j")),
        call("mul", Load(x, (A("i"), A("r"))), Load(w, (A("r"), A("j")))),
        reduce="sum",
    )
    c = count(b.program)
    assert c.ops == {(0, 0): {"cuda_fp32": 2 * m * n * k}}
    assert c.kernel_reads == [{"x": m * k, "w": k * n}]
    assert c.kernel_writes == [{"y": m * n}]
    assert c.program_reads == {"x": m * k, "w": k * n} and c.program_writes == {"y": m * n}
    assert check(b.program, counts=c) == []


def test_repeated_operand_pairs_and_hoisting():
    """``out[i, j] = Σ_k a[k] b[k]`` repeats the same K pairs for every (i, j): 2K flops.
    ``exp(a[i]) + c[j]``: the exp once per i, the add once per (i, j)."""
    ni, nj, nk = 3, 4, 5
    b = ProgramBuilder("p")
    a = b.tensor("a", (nk,), "float32", "input")
    v = b.tensor("v", (nk,), "float32", "input")
    cc = b.tensor("c", (nj,), "float32", "input")
    out = b.tensor("out", (ni, nj), "float32", "output")
    out2 = b.tensor("out2", (ni, nj), "float32", "output")
    b.begin_kernel("dot")
    b.statement(
        [("i", ni), ("j", nj), ("k", nk, True)],
        (out, ("i", "j")),
        call("mul", Load(a, (A("k"),)), Load(v, (A("k"),))),
        reduce="sum",
    )
    b.begin_kernel("map")
    b.statement(
        [("i", ni), ("j", nj)],
        (out2, ("i", "j")),
        call("add", call("exp", Load(a, (A("i"),))), Load(cc, (A("j"),))),
    )
    c = count(b.program)
    assert c.ops[(0, 0)] == {"cuda_fp32": 2 * nk}
    assert c.ops[(1, 0)] == {"sfu": ni, "cuda_fp32": ni * nj}
    assert check(b.program, counts=c) == []


def test_reduction_combines_and_guards():
    """A row sum combines J - 1 times per row; a lower-triangular row sum (guard j <= i)
    combines i times in row i."""
    n = 5
    b = ProgramBuilder("r")
    x = b.tensor("x", (n, n), "float32", "input")
    s = b.tensor("s", (n,), "float32", "output")
    t = b.tensor("t", (n,), "float32", "output")
    b.begin_kernel("sum")
    b.statement([("i", n), ("j", n, True)], (s, ("i",)), Load(x, (A("i"), A("j"))), reduce="sum")
    b.begin_kernel("tri")
    b.statement(
        [("i", n), ("j", n, True)],
        (t, ("i",)),
        Load(x, (A("i"), A("j"))),
        reduce="sum",
        guards=[Guard(A("j") - A("i"), -n, 1)],
    )
    c = count(b.program)
    assert c.ops[(0, 0)] == {"cuda_fp32": n * (n - 1)}
    assert c.ops[(1, 0)] == {"cuda_fp32": sum(range(n))}
    assert c.kernel_reads[1] == {"x": n * (n + 1) // 2}
    assert check(b.program, counts=c) == []


def test_negative_and_zero_stride_views():
    """A reversed view (stride -1) and a broadcast one (stride 0) of one base: the copy reads
    every element of the reversed view once, the broadcast row once per column."""
    b = ProgramBuilder("v")
    x = b.tensor("x", (6,), "float32", "input")
    rev = b.view("rev", x, (6,), (-1,), 5)
    bc = b.view("bc", x, (4, 3), (0, 1), 0)
    y = b.tensor("y", (6,), "float32", "output")
    z = b.tensor("z", (4, 3), "float32", "output")
    b.begin_kernel("rev")
    b.statement([("i", 6)], (y, ("i",)), call("neg", Load(rev, (A("i"),))))
    b.begin_kernel("bc")
    b.statement([("i", 4), ("j", 3)], (z, ("i", "j")), call("exp", Load(bc, (A("i"), A("j")))))
    c = count(b.program)
    assert c.kernel_reads == [{"x": 6}, {"x": 3}]
    assert c.ops[(1, 0)] == {"sfu": 3}  # exp of 3 distinct elements
    assert check(b.program, counts=c) == []


def _rnn(steps: int, h: int):
    """``hs[t+1] = tanh(W hs[t] + x[t])`` in a looped kernel, with a loop-invariant statement
    ``w2 = 2 W`` inside the loop."""
    b = ProgramBuilder("rnn")
    w = b.tensor("w", (h, h), "float32", "weight")
    x = b.tensor("x", (steps, h), "float32", "input")
    hs = b.tensor("hs", (steps + 1, h), "float32", "output")
    w2 = b.tensor("w2", (h, h), "float32", "local")
    acc = b.tensor("acc", (h,), "float32", "local")
    b.begin_kernel("rnn", loops=[("t", steps)])
    b.statement(
        [("a", h), ("c", h)], (w2, ("a", "c")), call("mul", Load(w, (A("a"), A("c"))), Const(2.0))
    )
    b.statement(
        [("a", h), ("c", h, True)],
        (acc, ("a",)),
        call("mul", Load(w2, (A("a"), A("c"))), Load(hs, (A("t"), A("c")))),
        reduce="sum",
    )
    b.statement(
        [("a", h)],
        (hs, (A("t") + 1, "a")),
        call("tanh", call("add", Load(acc, (A("a"),)), Load(x, (A("t"), A("a"))))),
    )
    return b.program


def test_recurrence_counts_each_step_and_hoists_the_invariant():
    steps, h = 4, 3
    p = _rnn(steps, h)
    c = count(p)
    assert c.ops[(0, 0)] == {"cuda_fp32": h * h}  # loop-invariant: once
    assert c.ops[(0, 1)] == {"cuda_fp32": 2 * steps * h * h}  # a new h every step
    assert c.ops[(0, 2)] == {"cuda_fp32": steps * h, "sfu": steps * h}
    assert c.kernel_reads == [{"w": h * h, "x": steps * h, "hs": h}]  # hs[0] only
    assert c.kernel_writes == [{"hs": steps * h}]
    assert check(p, counts=c) == []


def _embedding(ids: list[int], vocab: int = 6, dim: int = 3):
    b = ProgramBuilder("emb")
    table = b.tensor("table", (vocab, dim), "float32", "weight")
    idx = b.tensor("ids", (len(ids),), "int64", "input")
    out = b.tensor("out", (len(ids), dim), "float32", "output")
    b.begin_kernel("embedding")
    b.statement(
        [("i", len(ids)), ("j", dim)],
        (out, ("i", "j")),
        Load(table, (Indirect(Load(idx, (A("i"),))), A("j"))),
    )
    values = {"table": torch.randn(vocab, dim), "ids": torch.tensor(ids)}
    return b.program, values


def test_gather_reads_the_rows_the_data_selects():
    """Distinct ids read one row each; the analytical count is the provable minimum (one
    row, ``exact=False``), met exactly when every id is equal."""
    p, values = _embedding([4, 1, 1, 5])
    c = count(p, values)
    assert c.kernel_reads == [{"table": 3 * 3, "ids": 4}]
    bad = check(p, values, c)
    assert bad == []
    same, values = _embedding([2, 2, 2, 2])
    c = count(same, values)
    assert c.kernel_reads == [{"table": 3, "ids": 4}]
    from solar.ir.cost import kernel_io

    assert kernel_io(same, same.kernels[0]).reads["table"].elements == 3  # the minimum, met


def test_indirect_indices_need_values():
    p, _ = _embedding([0, 1])
    with pytest.raises(OracleError, match="values"):
        count(p)


def test_an_index_outside_its_tensor_is_an_error():
    b = ProgramBuilder("oob")
    x = b.tensor("x", (4,), "float32", "input")
    y = b.tensor("y", (5,), "float32", "output")
    b.begin_kernel("k")
    b.statement([("i", 5)], (y, ("i",)), call("neg", Load(x, (A("i"),))))
    with pytest.raises(OracleError, match=r"index 0 of x\[i\] takes values in \[0, 4\]"):
        count(b.program)


def test_check_reports_what_disagrees():
    """Counts of the same program without its guard contradict every guarded count."""
    n = 4

    def program(guarded: bool):
        b = ProgramBuilder("g")
        x = b.tensor("x", (n,), "float32", "input")
        y = b.tensor("y", (n,), "float32", "output")
        b.begin_kernel("k")
        guards = [Guard(A("i"), 0, 2)] if guarded else []
        b.statement([("i", n)], (y, ("i",)), call("exp", Load(x, (A("i"),))), guards=guards)
        return b.program

    bad = check(program(True), counts=count(program(False)))
    assert {(d.where, d.what) for d in bad} == {
        ("kernel k_0 statement 0", "sfu"),
        ("kernel k_0 reads", "x"),
        ("kernel k_0 writes", "y"),
        ("program reads", "x"),
        ("program writes", "y"),
    }
    d = next(d for d in bad if d.what == "sfu")
    assert (d.analytical, d.exact, d.oracle) == (2, True, n)
    assert str(d) == "kernel k_0 statement 0 sfu: analytical 2 (exact), oracle 4"


def test_index_values_are_part_of_a_call_signature():
    """``where(i < j, x[i], 0)`` over (i, j): the compare runs on every distinct (i, j)."""
    n = 3
    b = ProgramBuilder("ix")
    x = b.tensor("x", (n,), "float32", "input")
    y = b.tensor("y", (n, n), "float32", "output")
    b.begin_kernel("k")
    b.statement(
        [("i", n), ("j", n)],
        (y, ("i", "j")),
        call("where", call("lt", Index(A("i")), Index(A("j"))), Load(x, (A("i"),)), Const(0.0)),
    )
    c = count(b.program)
    assert c.ops[(0, 0)] == {"cuda_fp32": 2 * n * n}  # lt and where, per (i, j)
    assert check(b.program, counts=c) == []
