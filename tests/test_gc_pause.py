"""Python's garbage collector is process-wide: a library call leaves it as its caller has it
(on or off, thresholds, frozen objects), whatever ``SOLAR_PAUSE_GC`` says; the processes that
own it tune it (``solar bound FILE`` pauses its analysis, a batch's worker process defers full
collections during each task and pauses it with ``SOLAR_PAUSE_GC=1``)."""

from __future__ import annotations

import gc

import pytest
import torch
from gc_probe import EAGER, collections
from torch import nn

import solar
import solar.cli
from solar.collector import DEFERRED, PAUSE_GC, gc_paused, pause_gc_wanted
from solar.questions.executors import map_tasks


class Probe(nn.Module):
    """Records the collector's state (on, thresholds) while solar traces it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.seen: list[tuple[bool, tuple[int, int, int]]] = []

    def forward(self, x):
        self.seen.append((gc.isenabled(), gc.get_threshold()))
        return self.lin(x)


@pytest.mark.parametrize("env", [None, "1", "0"])
def test_a_library_call_leaves_the_collector_as_it_is(monkeypatch, env):
    if env is None:
        monkeypatch.delenv(PAUSE_GC, raising=False)
    else:
        monkeypatch.setenv(PAUSE_GC, env)
    probe = Probe()
    with collections() as seen:
        frozen = gc.get_freeze_count()
        solar.bound(probe, (torch.randn(2, 8),), hw="H100")
        assert set(probe.seen) == {(True, EAGER)}  # during the trace: on, untouched
        assert seen.thresholds == {EAGER}  # at every collection of the call
        assert gc.isenabled() and gc.get_threshold() == EAGER
        assert gc.get_freeze_count() == frozen


PROBLEM = """
import gc
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        with open({out!r}, "a") as f:
            f.write(str(gc.isenabled()))
        return x * 2

def get_inputs():
    return [torch.randn(4, 4)]
"""


@pytest.mark.parametrize(("env", "on_during"), [(None, "False"), ("0", "True")])
def test_solar_bound_file_pauses_its_own_analysis(tmp_path, monkeypatch, capsys, env, on_during):
    """The command's process is its own: its analysis runs with the collector off, unless
    ``SOLAR_PAUSE_GC=0``; the collector is on again after."""
    if env is None:
        monkeypatch.delenv(PAUSE_GC, raising=False)
    else:
        monkeypatch.setenv(PAUSE_GC, env)
    out = tmp_path / "seen.txt"
    problem = tmp_path / "double.py"
    problem.write_text(PROBLEM.format(out=str(out)))
    assert solar.cli.main(["bound", str(problem), "--json"]) == 0
    assert out.read_text() == on_during and gc.isenabled()
    capsys.readouterr()


def collector_state(_: int) -> tuple[int, bool]:
    """A worker task: the oldest generation's threshold and whether the collector is on."""
    return gc.get_threshold()[2], gc.isenabled()


@pytest.mark.parametrize(("env", "on"), [(None, True), ("1", False)])
def test_a_worker_process_defers_full_collections_during_its_tasks(monkeypatch, env, on):
    if env is None:
        monkeypatch.delenv(PAUSE_GC, raising=False)
    else:
        monkeypatch.setenv(PAUSE_GC, env)
    before = gc.get_threshold()
    assert map_tasks(collector_state, [(0,), (1,)], jobs=2) == [(DEFERRED, on)] * 2
    assert gc.get_threshold() == before and gc.isenabled()  # this process's: untouched


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
