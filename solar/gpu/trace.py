"""Trace records as SOL-ExecBench writes them (its trace format's documentation): one per
workload run, with ``definition``, ``solution``, ``workload`` (the line as written) and
``evaluation`` (``status``, ``log``, ``correctness``, ``performance`` in milliseconds,
``environment``, ``timestamp``; ``correctness`` and ``performance`` ``null`` where its nullable
table says).
solar adds one object, ``sol``: the bound ``T_SOL`` (ms), the bound level, the unit that binds
it, the GPU spec it is for, the SOL score and a violation (a time below the bound), so that a
leaderboard pipeline can take solar's numbers in place of its own."""

from __future__ import annotations

import datetime
import importlib.metadata
import math

__all__ = ["environment", "trace_record"]

#: the libraries whose versions a trace's environment records (distribution names)
LIBS = ("torch", "triton", "nvidia-cutlass-dsl", "cuda-python")


def environment(hardware: str) -> dict:
    """``{"hardware", "libs"}``: the GPU's name and the versions of :data:`LIBS` installed
    (and CUDA's, as torch was built with it)."""
    import torch

    libs = {}
    for lib in LIBS:
        try:
            libs[lib] = importlib.metadata.version(lib)
        except importlib.metadata.PackageNotFoundError:
            continue
    if torch.version.cuda:
        libs["cuda"] = torch.version.cuda
    return {"hardware": hardware, "libs": libs}


def trace_record(definition: str, solution: str, row, env: dict, spec_name: str) -> dict:
    """The trace of one :class:`~solar.gpu.score.WorkloadScore` ``row``."""
    passed = row.status == "PASSED"
    numerical = row.status == "INCORRECT_NUMERICAL"
    performance = None
    if passed:
        performance = {
            "latency_ms": row.mean_k * 1e3,
            "reference_latency_ms": row.mean_b * 1e3,
            "speedup_factor": row.mean_b / row.mean_k if row.mean_k else None,
        }
    bounded = row.status != "NO_BOUND" and row.t_sol > 0
    return {
        "definition": definition,
        "solution": solution,
        "workload": row.workload,
        "evaluation": {
            "status": row.status,
            "log": row.note,
            "correctness": row.correctness.to_trace() if (passed or numerical) else None,
            "performance": performance,
            "environment": env,
            "timestamp": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            ),
        },
        "sol": {
            "t_sol_ms": row.t_sol * 1e3 if bounded else None,
            "bound_level": row.level,
            "bound_by": row.bound_by or None,
            "hardware_spec": spec_name,
            "latency_median_ms": row.t_k * 1e3 if passed else None,
            "reference_latency_median_ms": row.t_b * 1e3 if passed else None,
            # an infinite score (a time far below the bound) is not JSON: null, with the violation
            "sol_score": row.score if row.score is None or math.isfinite(row.score) else None,
            "violation": row.violation or None,
        },
    }
