"""Python's garbage collector is process-wide: a library call leaves it alone unless asked
(``SOLAR_PAUSE_GC=1``), and a pause ends with the analysis."""

from __future__ import annotations

import gc

import pytest
import torch
from torch import nn

import solar
from solar.api import PAUSE_GC, gc_paused, pause_gc_wanted


class Probe(nn.Module):
    """Records whether the collector is on while solar traces it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.seen: list[bool] = []

    def forward(self, x):
        self.seen.append(gc.isenabled())
        return self.lin(x)


@pytest.mark.parametrize(("env", "on_during"), [(None, True), ("1", False), ("0", True)])
def test_bound_pauses_the_collector_only_when_asked(monkeypatch, env, on_during):
    if env is None:
        monkeypatch.delenv(PAUSE_GC, raising=False)
    else:
        monkeypatch.setenv(PAUSE_GC, env)
    assert gc.isenabled()
    probe = Probe()
    solar.bound(probe, (torch.randn(2, 8),), hw="H100")
    assert probe.seen and set(probe.seen) == {on_during}
    assert gc.isenabled()  # a pause ends with the analysis


def test_pause_policy(monkeypatch):
    monkeypatch.delenv(PAUSE_GC, raising=False)
    assert not pause_gc_wanted() and pause_gc_wanted(default=True)
    monkeypatch.setenv(PAUSE_GC, "0")
    assert not pause_gc_wanted(default=True)  # the command's default yields to the variable
    monkeypatch.setenv(PAUSE_GC, "1")
    gc.disable()  # a caller that turned the collector off itself keeps it off
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
