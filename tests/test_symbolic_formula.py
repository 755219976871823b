"""``b.formula(q)`` holds wherever it says: a Piecewise of the pieces met, each with the sizes
it holds for (the region reduced by :func:`solar.algebra.condition.condition`), nan elsewhere;
``solar bound --symbolic`` prints each formula with its conditions."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import sympy
from console import run_solar

import solar
from solar.algebra.condition import Condition, condition
from solar.algebra.region import Guard, Region
from solar.algebra.size import symbol
from solar.hw import load_spec

ROOT = Path(__file__).resolve().parents[1]
ATTENTION = ROOT / "examples" / "attention_bf16.py"
S, B = symbol("seq"), symbol("batch")


def region(*relations) -> Region:
    return Region((S, B), tuple(Guard(r) for r in relations))


def test_one_size_guards_fold_to_its_interval():
    """``1 < seq``, ``seq <= 8719.04``, ``seq < 442.01``: 2 <= seq <= 442 (integers); the root
    of ``Ne(16 seq - 16, 0)`` (seq = 1) is outside, the quadratic ``seq^2 - 10 seq > 0`` holds
    from 11 (roots 0 and 10); nothing is left over."""
    r = region(
        S > 1,
        S <= sympy.Float(8719.04),  # noqa: SIM300 (a sympy relation, as guards are)
        S < sympy.Float(442.01),  # noqa: SIM300
        sympy.Ne(16 * S - 16, 0),
        S**2 - 10 * S > 0,
    )
    assert condition(r) == Condition(((S, 11, 442), (B, 1, None)), ())
    assert set(sympy.And.make_args(condition(r).boolean())) == {S >= 11, S <= 442}


def test_what_is_not_one_interval_is_kept():
    """A floor, a guard true on two runs of integers (seq <= 3 or seq >= 8) and a relation of
    two products stay as they are; a guard of one product of sizes bounds that product
    (``2 sqrt(batch) seq > 8`` is ``batch seq^2 >= 17``, integers); a guard false everywhere in
    the span empties the condition."""
    two_runs = (S - 3) * (S - 8) >= 0
    floor = sympy.Eq(sympy.floor(S / 2), 3)
    two_products = B * S**2 + B * S > 10
    r = region(2 * sympy.sqrt(B) * S > 8, floor, two_runs, two_products, B * S**2 <= 1000)
    c = condition(r)
    assert c.bounds == ((S, 1, None), (B, 1, None))
    assert set(c.rest) == {floor, two_runs, two_products}
    assert c.products == ((B * S**2, 17, 1000),)
    assert condition(region(S >= 5, S <= 4)).empty
    assert condition(region(S >= 5, S <= 4)).boolean() is sympy.false


def test_a_bound_decided_to_rounding_follows_the_guards_test():
    """A guard between times holds to a relative 1e-9 (solar.algebra.region): the interval's
    end is where the region's own test says, not the closed form's."""
    edge = sympy.Float(100) * (1 + sympy.Float(5e-10))  # 100.00000005: 100 is inside anyway
    c = condition(region(S * sympy.Float(1.0) <= 100 * (1 - sympy.Float(5e-10))))
    assert c.bounds[0] == (S, 1, 100)
    assert condition(region(S * sympy.Float(1.0) >= edge)).bounds[0] == (S, 100, None)


def test_conditions_of_one_expression_join_where_they_touch():
    a = Condition(((S, 2, 25), (B, 1, None)))
    b = Condition(((S, 26, 638), (B, 1, None)))
    far = Condition(((S, 700, 800), (B, 1, None)))
    assert a.join(b) == Condition(((S, 2, 638), (B, 1, None)))
    assert a.join(far) is None
    assert a.join(Condition(((S, 2, 25), (B, 3, 4)))) == a  # B in [3, 4] lies inside a's
    assert a.join(Condition(((S, 2, 25), (B, 3, 4)), (B * S > 4,))) is None


@pytest.fixture(scope="module")
def attention():
    """The issue's case: attention traced at seq 2048 (bf16, batch 8, 16 heads of 64)."""
    qkv = [torch_empty(8, 16, 2048, 64) for _ in range(3)]
    b = solar.bound(attend, qkv, hw="H100", symbolic={"seq": [(0, 2), (1, 2), (2, 2)]})
    return b


def torch_empty(*shape):
    import torch

    return torch.empty(*shape, dtype=torch.bfloat16, device="meta")


def attend(q, k, v):
    import torch

    return torch.softmax(q @ k.transpose(-2, -1) / 8.0, dim=-1) @ v


def test_the_formula_claims_nothing_where_its_piece_does_not_hold(attention):
    """Traced at 2048 the fused bound is the tensor term alone: the formula says so with the
    sizes where it holds, and gives nan at seq 100 (latency- or DRAM-bound there), never the
    tensor term's 3e-11 * seq^2, below the true bound."""
    b = attention
    f = b.formula("fused")
    assert isinstance(f, sympy.Piecewise)
    assert float(f.subs(S, 2048)) == pytest.approx(b.fused, rel=1e-12)
    assert math.isnan(float(f.subs(S, 100)))
    assert b.expression("fused").subs(S, 100) < b.at(seq=100).fused  # the old, wrong answer


def test_after_a_walk_the_formula_is_the_bound_at_every_size(attention):
    """Along seq from 2 to 8192 the pieces are latency, DRAM, tensor: by hand, the launch floor
    (500 ns) binds until 4 * 8 * 16 * 64 * 2 * seq bytes / BW pass it, then the DRAM, until
    the tensor ops 2 * 2 * 8 * 16 * 64 * seq^2 / peak pass it."""
    b = attention
    crossings = b.crossovers("seq", "fused", hi=8192)
    spec = load_spec("H100")
    bw, peak = spec.dram_bandwidth, spec.peak("tc_bf16")
    launch = spec.latency["kernel_launch"]
    nbytes = 4 * 8 * 16 * 64 * 2
    dram_from = math.ceil(launch * bw / nbytes - 1e-9)
    tensor_from = math.ceil(nbytes / bw * peak / (2 * 2 * 8 * 16 * 64) - 1e-9)
    assert [(x, a, c) for x, a, c in crossings] == [
        (dram_from, "latency", "dram"),
        (tensor_from, "dram", "tensor"),
    ]
    f = b.formula("fused")
    assert len(f.args) == 3
    for seq in (2, dram_from - 1, dram_from, 100, tensor_from - 1, tensor_from, 4096, 8192):
        assert float(f.subs(S, seq)) == pytest.approx(b.at(seq=seq).fused, rel=1e-12), seq
    top = f.args[-1].cond.args[-1].rhs  # the last piece's end: where the walk stopped
    assert b.formula("bytes_fused") == sympy.Piecewise(
        (nbytes * S, sympy.And(S >= 2, S <= top)),  # noqa: SIM300
        evaluate=False,
    )


def test_cli_prints_each_formula_with_where_it_holds():
    """One size: every piece of the walk along S printed with its interval (latency, DRAM,
    tensor cores for the fused level, by the crossovers of test_symbolic_cli)."""
    code, out, err = run_solar("bound", ATTENTION, "--symbolic", "S")
    assert code == 0, err
    text = out[out.index("formulas in S") :]
    assert "for S ≥ 2 ∧ S ≤ 25" in text  # the launch floor's piece, first
    assert "for S ≥ 26 ∧ S ≤ 638" in text  # DRAM
    assert "for S ≥ 639 ∧ S ≤ " in text  # tensor cores
    assert "these formulas hold for" not in text
