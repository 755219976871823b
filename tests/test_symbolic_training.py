"""Symbolic sizes of training steps: one trace of forward, backward and optimizer step with
the batch (or a parameter's size) as a symbol, whose formulas equal a numeric trace of the
step at random sizes (counts exactly, times to rounding)."""

from __future__ import annotations

import random

import torch

import solar
from solar.algebra.size import symbol
from solar.report.symbolic_views import fixed_sizes
from tests.symbolic_equal import assert_bounds_equal, fresh_caches

WIDTH, CLASSES = 512, 10


def mlp_step(optimizer, hidden: int = 1024):
    """``(step, model)``: one training step of a two-layer MLP (meta weights) with
    ``optimizer(parameters)``."""
    torch.manual_seed(0)
    with torch.device("meta"):
        model = torch.nn.Sequential(
            torch.nn.Linear(WIDTH, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, CLASSES)
        )
    opt = optimizer(model.parameters())

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def batch(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    return (
        torch.empty(n, WIDTH, device="meta"),
        torch.empty(n, dtype=torch.long, device="meta"),
    )


def numeric(step, inputs):
    fresh_caches()
    return solar.bound(step, inputs, "H100")


def check_batch(optimizer, seed: int) -> None:
    step = mlp_step(optimizer)
    fresh_caches()
    b = solar.bound(step, batch(4096), "H100", symbolic={"batch": [(0, 0), (1, 0)]})
    assert fixed_sizes(b) == {}
    assert symbol("batch") in b.expression("bytes_unfused").free_symbols
    rng = random.Random(seed)
    for n in [2, 4096, 10000, *(rng.randint(2, 1 << 15) for _ in range(4))]:
        fresh_caches()
        assert_bounds_equal(b.at(batch=n), numeric(step, batch(n)))


def test_adamw_step_formula_equals_numeric_bounds_at_random_batches():
    check_batch(lambda ps: torch.optim.AdamW(ps, lr=1e-3), seed=3)


def test_sgd_step_formula_equals_numeric_bounds_at_random_batches():
    check_batch(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-4), seed=5)


def test_optimizer_state_follows_a_symbolic_parameter_size():
    """The hidden width as a symbol: the AdamW state takes its parameters' sizes, and the
    fused optimizer's launches (chunks of 65536 elements) are counted exactly."""

    def adamw(ps):
        return torch.optim.AdamW(ps, lr=1e-3, fused=True)

    marks = {"hidden": [(("param", "0.weight"), 0), (("param", "0.bias"), 0)]}
    marks["hidden"].append((("param", "2.weight"), 1))
    fresh_caches()
    b = solar.bound(mlp_step(adamw), batch(256), "H100", symbolic=marks)
    assert fixed_sizes(b) == {}
    rng = random.Random(11)
    tried = 0
    for h in [1024, *(rng.randint(512, 1024) for _ in range(20))]:
        if not b.counts_region.holds({symbol("hidden"): h}):
            continue
        tried += 1
        fresh_caches()
        assert_bounds_equal(b.at(hidden=h), numeric(mlp_step(adamw, h), batch(256)))
    assert tried >= 3
