"""Batches that finish (issue 22): a problem whose ``get_inputs()`` never returns is stopped at
its time limit (``--timeout``) and recorded as ``timeout``, a crashing one as an error, and the
rest of the batch is bounded; progress is printed as problems finish (one line per problem
when stderr is not a terminal). Through the installed ``solar`` script, as users run it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from console import run_solar

from solar.questions.executors import DEFAULT_TIMEOUT_S, map_tasks

HANGS = """import time

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    while True:
        time.sleep(1)
"""
CRASHES = "import os\nos._exit(3)  # the worker process dies while importing the problem\n"
GOOD = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(8, 16)]
"""
LIMIT = 10  # seconds: the good problem takes about one once its worker is warm


@pytest.fixture()
def batch(tmp_path) -> Path:
    (tmp_path / "hangs.py").write_text(HANGS)
    (tmp_path / "crashes.py").write_text(CRASHES)
    (tmp_path / "good.py").write_text(GOOD)
    return tmp_path


def _rows(out: str) -> dict[str, str]:
    return {line.split()[0]: line for line in out.splitlines()[2:-1]}


def test_hanging_crashing_and_good_problems_in_worker_processes(batch):
    t0 = time.perf_counter()
    code, out, err = run_solar("bound", batch, "--jobs", "2", "--timeout", LIMIT, timeout=300)
    assert time.perf_counter() - t0 < 120  # finishes, where it used to run forever
    assert code == 1
    rows = _rows(out)
    assert rows["good"].split()[-1] == "ok"
    assert rows["crashes"].endswith(
        "error: the worker process died (exit code 3): a crash or out of memory"
    )
    assert rows["hangs"].endswith(
        f"timeout: no result within the time limit of {LIMIT} s (--timeout)"
    )
    assert out.splitlines()[-1] == "1 of 3 bounded, 1 failed, 1 timed out, 0 skipped"
    # progress: one line per problem as it finished, on stderr (not a terminal here)
    lines = err.splitlines()
    assert sorted(line.split("] ")[1].split(":")[0] for line in lines) == [
        "crashes",
        "good",
        "hangs",
    ]
    assert [line.split("]")[0] for line in lines] == ["solar: [1/3", "solar: [2/3", "solar: [3/3"]
    assert f"solar: [3/3] hangs: timeout: no result within the time limit of {LIMIT} s" in err


def test_a_hanging_problem_in_this_process(batch):
    """``--jobs 1`` runs in the solar process: a timer signal stops the hanging Python code."""
    code, out, err = run_solar(
        "bound", batch / "hangs.py", batch / "good.py", "--jobs", "1", "--timeout", LIMIT, "--json"
    )
    assert code == 1
    doc = json.loads(out)
    assert [(p["name"], p["status"]) for p in doc["programs"]] == [
        ("hangs", "timeout"),
        ("good", "ok"),
    ]
    late = f"no result within the time limit of {LIMIT} s (--timeout)"
    assert doc["programs"][0]["error"] == late
    assert err.splitlines() == [
        f"solar: [1/2] hangs: timeout: {late}",
        "solar: [2/2] good: ok",
    ]


def test_the_default_limit_is_documented():
    code, out, _ = run_solar("bound", "--help")
    assert code == 0 and DEFAULT_TIMEOUT_S == 600
    assert "--timeout S" in out and "(default 600)" in " ".join(out.split())


def test_map_tasks_time_limit_without_a_crash_result():
    """A task function without ``crash_result`` gets a TimeoutError as its result; the other
    tasks' results are intact and in input order."""
    out = map_tasks(time.sleep, [(0,), (60,), (0,)], jobs=2, timeout=3)
    assert out[0] is None and out[2] is None
    assert isinstance(out[1], TimeoutError) and "3 s" in str(out[1])


def test_ray_time_limit():
    """On Ray a timer in the worker, started with the task, stops it at its limit (the
    workers' start-up not counted): the 60 s task comes back timed out, the others finish."""
    pytest.importorskip("ray")
    from solar.questions.executors import ray_map

    t0 = time.perf_counter()
    out = ray_map(time.sleep, [(60,), (0,), (0,)], address="local", num_cpus=2, timeout=3)
    assert time.perf_counter() - t0 < 50
    assert isinstance(out[0], TimeoutError) and out[1:] == [None, None]
