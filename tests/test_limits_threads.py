"""Analysis holds no process-wide mutable state: two threads bounding different models at once,
each under its own counting limits, get exactly what each gets alone, and limits set in one
thread are seen neither by the other nor by the thread that started them."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from torch import nn

import solar
from solar.ir.limits import DEFAULT, Limits, current_limits, limits

# Small enough that the convolution's footprints take the large-size paths (and its bound
# changes: a leak of these limits into the other thread would change that thread's numbers).
CONV_LIMITS = {"enum": 4, "mask": 4, "grid": 4, "segments": 4}
MLP_LIMITS = {"enum": 1 << 10}


def _mlp():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64))
    return model, (torch.randn(8, 64),)


def _conv():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2, padding=1)
    )
    return model, (torch.randn(2, 3, 16, 16),)


MODELS = {"mlp": (_mlp, MLP_LIMITS), "conv": (_conv, CONV_LIMITS)}


def _job(name: str, meet: threading.Barrier | None = None) -> tuple[dict, list[Limits]]:
    """Bound one model under its own limits; the limits seen before and after the bound."""
    build, lim = MODELS[name]
    model, inputs = build()
    with limits(**lim) as mine:
        if meet is not None:
            meet.wait(timeout=60)  # both threads hold their limits before either bounds
        seen = [current_limits()]
        b = solar.bound(model, inputs, hw="H100", name=name)
        seen.append(current_limits())
        assert all(s == mine for s in seen)
    seen.append(current_limits())
    return b.to_dict(), seen


def test_limits_change_the_conv_bound():
    # the leak check below is only meaningful if the conv's limits change its numbers
    model, inputs = _conv()
    default = solar.bound(model, inputs, hw="H100", name="conv").to_dict()
    assert _job("conv")[0] != default


def test_two_threads_equal_one_at_a_time():
    alone = {name: _job(name)[0] for name in MODELS}
    meet = threading.Barrier(len(MODELS))
    with ThreadPoolExecutor(max_workers=len(MODELS)) as pool:
        futures = {name: pool.submit(_job, name, meet) for name in MODELS}
        together = {name: f.result() for name, f in futures.items()}
    for name, (got, seen) in together.items():
        assert got == alone[name], name
        assert seen[:2] == [Limits(**{**vars(DEFAULT), **MODELS[name][1]})] * 2, name
        assert seen[2] == DEFAULT, name  # the worker thread's own default after the block
    assert current_limits() == DEFAULT  # nothing leaked into the thread that started them


def test_limits_reject_bad_values():
    with pytest.raises(ValueError, match="enum must be a positive int"), limits(enum=0):
        pass
    with limits(enum=8) as outer:
        with limits(mask=16) as inner:
            assert inner == Limits(**{**vars(DEFAULT), "enum": 8, "mask": 16})
        assert current_limits() == outer
    assert current_limits() == DEFAULT
