"""SOL-ExecBench's score S = 1 / (1 + (T_k - T_sol) / (T_b - T_sol))."""

import math

import pytest

import solar
from solar.gpu.score import sol_score


def test_reference_points():
    assert sol_score(2.0, 2.0, 1.0) == pytest.approx(0.5)  # as fast as the baseline
    assert sol_score(1.0, 2.0, 1.0) == pytest.approx(1.0)  # at the speed of light
    assert sol_score(3.0, 2.0, 1.0) == pytest.approx(1 / 3)  # twice the baseline's gap
    assert solar.sol_score is sol_score


def test_formula_and_monotonicity():
    tb, ts = 5e-3, 1e-3
    ks = [1.2e-3, 2e-3, 4e-3, 8e-3, 2e-2]
    scores = [sol_score(tk, tb, ts) for tk in ks]
    for tk, s in zip(ks, scores):
        assert s == pytest.approx(1 / (1 + (tk - ts) / (tb - ts)))
        assert 0 < s < 1
    assert scores == sorted(scores, reverse=True)


def test_beating_the_bound():
    assert sol_score(0.9, 2.0, 1.0) > 1.0  # a violation scores above 1
    assert sol_score(0.1, 1.5, 1.0) == math.inf  # denominator <= 0


@pytest.mark.parametrize(
    "args",
    [(0.0, 2.0, 1.0), (1.0, -2.0, 1.0), (1.0, 2.0, float("nan")), ("x", 2.0, 1.0), (1, 2, None)],
)
def test_bad_times(args):
    with pytest.raises(ValueError, match="positive finite time|time in seconds"):
        sol_score(*args)


def test_baseline_not_slower_than_bound():
    with pytest.raises(ValueError, match="not slower than the SOL bound"):
        sol_score(1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="undefined"):
        sol_score(1.0, 0.5, 1.0)
