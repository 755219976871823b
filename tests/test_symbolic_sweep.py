"""Sweeps and size questions from one symbolic trace (solar.questions.sweep, .along, .formula,
.inverse): every number equals the numeric bound at that size (counts exactly, times to
1e-9 relative), points outside the trace's count region are traced, a program the formula
cannot follow is traced at every point with its reason, and every closed-form answer is
checked by numeric bounds at the answer and one past it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import sympy
import torch

import solar
from solar.algebra.numeric import compile_exprs
from solar.algebra.size import IntGcd, symbol
from solar.problem import problem_at
from solar.questions.inverse import crossovers, largest_meeting, memory_limit
from solar.questions.sweep import parse_sweep, sweep, sweep_problem
from solar.symbolic.trace import bound_symbolic

ATTENTION = Path(__file__).resolve().parents[1] / "examples" / "attention_bf16.py"
QKV = [(0, 2), (1, 2), (2, 2)]  # S is dim 2 of q, k and v
#: both sides of attention_bf16's crossovers on H100 at B=8 (latency -> dram at 26, dram ->
#: tensor at 639) and S=1, which the trace decides apart (outside its count region)
POINTS = [1, 2, 3, 25, 26, 27, 300, 638, 639, 640, 1500]


def numeric(n: int) -> solar.Bound:
    return solar.bound(*problem_at(ATTENTION, "S", n), hw="H100")


def assert_same(p, b: solar.Bound) -> None:
    """A sweep point equals a numeric bound: counts exactly, times to 1e-9."""
    assert p.flops == sum(b.flops.values())
    assert p.bytes_fused == b.bytes_fused
    assert p.bytes_cache_aware == b.bytes_cache_aware
    assert p.peak_bytes == b.memory.peak_bytes
    for level in ("unfused", "fused", "cache_aware"):
        assert p.time(level) == pytest.approx(b.time(level), rel=1e-9, abs=0)
        assert getattr(p, f"{level}_bound_by") == b.bound_by(level)


@pytest.fixture(scope="module")
def attention() -> solar.Bound:
    model, inputs = problem_at(ATTENTION, "S", 300)
    return bound_symbolic(model, inputs, "H100", {"S": QKV})


def test_formula_sweep_equals_traced_sweep():
    f = sweep_problem(ATTENTION, "S", POINTS, "H100")
    t = sweep_problem(ATTENTION, "S", POINTS, "H100", symbolic=False)
    source = {p.size: p.source for p in f.points}
    assert source.pop(1) == "traced"  # outside the count region: S > 1
    assert source.pop(1500) == "traced"  # the largest size checks the formula
    assert set(source.values()) == {"formula"}
    assert f.how.startswith("9 points from one symbolic trace at S=300 (formula, ")
    assert "2 points traced: S=1500 checks the formula; S=1 outside" in f.how
    assert {p.source for p in t.points} == {"traced"}
    assert t.how == "11 points traced, one trace each (symbolic=False)"
    for p, q in zip(f.points, t.points, strict=True):
        assert p.size == q.size
        assert_same(p, t.traced[q.size])
    rows = f.to_dict()["points"]
    assert [r["source"] for r in rows][:2] == ["traced", "formula"]
    assert f.to_dict()["how"] == f.how


def test_bounds_of_a_formula_sweep_are_the_numeric_bounds():
    f = sweep_problem(ATTENTION, "S", range(20, 30), "H100")
    b, n = f.bounds[6], numeric(26)  # S=26: from the formula, evaluated when read
    assert f.points[6].source == "formula", f.how
    assert (b.bytes_fused, b.flops, b.fused_bound_by) == (n.bytes_fused, n.flops, "dram")
    assert b.fused == pytest.approx(n.fused, rel=1e-12)
    assert len(f.bounds) == 10 and f.times("fused")[6] == pytest.approx(n.fused, rel=1e-12)


def test_sweep_of_inputs_alone_takes_the_size_from_the_dims_that_equal_it():
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 32, device="meta")
    s = sweep(lin, lambda n: [torch.empty(n, 64, device="meta")], range(1, 21), param="rows")
    assert {p.source for p in s.points[1:]} >= {"formula"}
    for n in (1, 2, 7, 20):
        assert_same(s.points[n - 1], solar.bound(lin, [torch.empty(n, 64, device="meta")]))


class Repeat(torch.nn.Module):
    """``n`` applications of one layer: the loop count is a Python int, not a tensor's dim."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self.lin = torch.nn.Linear(8, 8, device="meta")

    def forward(self, x):
        for _ in range(self.n):
            x = self.lin(x)
        return x


def test_sweeps_the_formula_cannot_follow_are_traced_at_every_point_with_the_reason():
    lin = torch.nn.Linear(8, 8, device="meta")
    doubled = sweep(lin, lambda n: [torch.empty(2 * n, 8, device="meta")], range(2, 12))
    assert {p.source for p in doubled.points} == {"traced"}
    assert doubled.how == (
        "10 points traced, one trace each (input 0 dim 0 is 14 at size=7 and 22 at size=11: "
        "not size itself (a symbol marks a dim equal to the swept size))"
    )
    # the size reaches the program as a loop count too: the check point disagrees
    loop = sweep(None, lambda n: (Repeat(n), [torch.empty(n, 8, device="meta")]), range(2, 12))
    assert {p.source for p in loop.points} == {"traced"}
    assert "the formula from a trace at size=7 differs from a trace at size=11 (flops" in loop.how
    assert loop.points[-1].flops == 11 * 2 * 11 * 8 * 8  # 11 layers of 11 rows (addmm)
    few = sweep(lin, lambda n: [torch.empty(n, 8, device="meta")], [4, 8])
    assert few.how.endswith("(a formula is tried from 8 sizes, or with symbolic=True)")


def test_largest_size_meeting_a_target_is_checked_at_the_answer_and_one_past(attention):
    a = largest_meeting(attention, "S", 1e-3, "cache_aware")
    assert a.value == 5715
    assert numeric(5715).cache_aware <= 1e-3 < numeric(5716).cache_aware
    assert a.text == (
        "S <= 5715 meets 1 ms (cache-aware bound on h100_sxm): 0.9997314 ms at 5715, "
        "1.000081 ms at 5716"
    )
    assert largest_meeting(attention, "S", 1e-9).value is None  # below the launch floor


def test_memory_limit_is_checked_at_the_answer_and_one_past(attention):
    a = memory_limit(attention, "S")
    capacity = numeric(2).dram_capacity
    assert numeric(a.value).memory.peak_bytes <= capacity < numeric(a.value + 1).memory.peak_bytes
    assert a.value == 12452
    assert a.text.startswith(
        "the peak memory reaches h100_sxm's 80 GB (80,000,000,000 B) at S=12453"
    )


def test_crossovers_are_where_the_numeric_bound_by_changes(attention):
    a = crossovers(attention, "S", "fused", hi=1000)
    assert a.value == [[26, "latency", "dram"], [639, "dram", "tensor"]]
    for x, below, above in a.value:
        assert (numeric(x - 1).fused_bound_by, numeric(x).fused_bound_by) == (below, above)
    assert a.text == (
        "fused bound on h100_sxm along S in [2, 1000]: latency-bound below 26, dram-bound "
        "from 26, tensor-bound from 639"
    )


def test_compiled_expressions_equal_sympy_exactly():
    a, b = symbol("a"), symbol("b")

    class FloorDiv(sympy.Function):  # PyTorch's, by name (an untranslated guard)
        pass

    exprs = [
        3 * a**2 * b + 7,
        sympy.floor(a / 3) * b,
        sympy.Mod(a * b + 1, 7),
        IntGcd(a, 12) * b,
        sympy.Max(a * sympy.Float(2.5e-9), b * sympy.Float(1e-9)) + sympy.Float(3e-6),
        sympy.sqrt(a) * b,
        sympy.ceiling(sympy.Rational(5, 3) * a),
        1 / a + b,
        sympy.Piecewise((a, a > b), (b, True)),
        2**70 * a,
    ]
    xs, ys = np.arange(1, 60), np.arange(1, 60) * 7 % 13 + 1
    exact, floats = compile_exprs([a, b], exprs, exact=True), compile_exprs([a, b], exprs)
    ve, vf = exact(xs, ys), floats(xs, ys)
    for i, e in enumerate(exprs):
        for j in range(0, len(xs), 7):
            ref = e.subs({a: int(xs[j]), b: int(ys[j])})
            one = exact(int(xs[j]), int(ys[j]))[i]
            many = np.broadcast_to(np.asarray(ve[i], dtype=object), xs.shape)[j]
            if ref.is_Integer:
                assert one == many == int(ref)  # exact, 2**70 included
            assert float(np.broadcast_to(vf[i], xs.shape)[j]) == pytest.approx(float(ref))
            assert float(one) == pytest.approx(float(ref))
    (q,) = compile_exprs([a], [FloorDiv(a + 1, 2)], exact=True)(np.arange(1, 6))
    assert list(q) == [1, 1, 2, 2, 3]
    (z,) = compile_exprs([a], [1 / sympy.floor(a / 3)], exact=True)(2)  # 1/0 at a=2
    assert math.isinf(z) or math.isnan(z)


def test_parse_sweep_takes_lists_and_ranges():
    assert parse_sweep("S=1,2") == ("S", [1, 2])
    assert parse_sweep("S=1..5") == ("S", [1, 2, 3, 4, 5])
    assert parse_sweep("S=64..256:64,1000") == ("S", [64, 128, 192, 256, 1000])
    with pytest.raises(ValueError, match="NAME=lo..hi"):
        parse_sweep("S=5..1")


def test_a_walk_memo_never_answers_for_a_freed_object():
    """map_values' memo is keyed by object ids: temporaries walked one after another (each
    node's attribute dict while a graph is rehinted) share an address once the first is
    freed, and must still get their own results (a rehinted graph took another node's
    attributes)."""
    from solar.algebra.size import Size
    from solar.algebra.walk import map_values

    memo: dict = {}
    n = symbol("n")
    out = [map_values({"i": i, "s": Size(i + 1, n)}, lambda v: 10, memo) for i in range(20)]
    assert [o["i"] for o in out] == list(range(20))


def test_cover_gives_each_point_one_piece_that_holds_it_and_values_and_along_share_it():
    """SymbolicBound.cover, the one loop of ``values`` and ``along``: the pieces met so far
    first, then a new piece at the first point left; masks disjoint, covering every point,
    each piece holding at each of its points; a second pass analyses nothing new; a caller
    that stops early leaves that piece's points marked."""
    from solar.questions.along import along

    b = bound_symbolic(*problem_at(ATTENTION, "S", 300), "H100", {"S": QKV})
    xs = np.arange(2, 1001)  # S=1 is outside the count region (S > 1)
    todo = np.ones(xs.shape, dtype=bool)
    got = list(b.cover("S", xs, todo))
    assert got[0][0] is b.pieces[0]  # the traced piece, met first
    assert len(got) == len(b.pieces) >= 3  # latency, dram, tensor bind along S
    masks = np.array([m for _, m in got])
    assert (masks.sum(axis=0) == 1).all() and not todo.any()
    for piece, mask in got:
        for x in xs[mask][:: max(1, int(mask.sum()) // 7)]:
            assert piece.region.holds({symbol("S"): int(x)})
    again = np.ones(xs.shape, dtype=bool)
    assert [p for p, _ in b.cover("S", xs, again)] == [p for p, _ in got]  # nothing new
    rows = along(b, "S", xs)
    assert rows.pieces == len(got)
    assert b.values("fused", "S", xs) == pytest.approx(rows.columns["fused"], rel=1e-12)
    assert [rows.bound_by["fused"][i] for i in (23, 24, 636, 637)] == [
        "latency",  # S=25
        "dram",  # S=26
        "dram",  # S=638
        "tensor",  # S=639
    ]
    fresh = bound_symbolic(*problem_at(ATTENTION, "S", 300), "H100", {"S": QKV})
    left = np.ones(xs.shape, dtype=bool)
    for piece, mask in fresh.cover("S", xs, left):
        if piece is not fresh.pieces[0]:  # stop at the first new piece: its points stay
            assert left[mask].all()
            break
    assert len(fresh.pieces) == 2 and left.any()


def test_points_from_formulas_leave_the_collector_as_it_is(attention):
    """``values`` and ``along`` (what sweeps read) are library calls: the caller's
    collector thresholds stay in force while they run (the commands defer full collections
    around a sweep themselves: :mod:`solar.collector`)."""
    import gc

    from gc_probe import EAGER, collections

    from solar.questions.along import along

    with collections() as seen:
        fused = attention.values("fused", "S", range(2, 400))
        rows = along(attention, "S", range(2, 400))
        assert seen.thresholds == {EAGER} and gc.get_threshold() == EAGER
    assert fused[298] == pytest.approx(rows.columns["fused"][298], rel=1e-12)
