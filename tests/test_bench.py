"""The analysis benchmark's machinery (``python -m solar.bench``), on its smallest workload.

Timings are not asserted (the benchmark measures them, tests do not); what is asserted is that
each stage measures what it says and that the report states every target with its number.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from solar.bench import models
from solar.bench.report import markdown, targets
from solar.bench.stages import run_stage


def test_one_layer_llama_stages():
    trace = run_stage("llama7b_L1", "trace")
    bound = run_stage("llama7b_L1", "bound")
    # the bare trace records every aten op; solar's kernels are the launched ones (no views)
    assert trace["graph_nodes"] > bound["kernels"] > 0
    assert set(bound["parts"]) == {"trace_s", "lower_s", "lift_s", "analyze_s"}
    assert sum(bound["parts"].values()) <= bound["wall_s"]
    assert bound["fused_s"] <= bound["cache_aware_s"] <= bound["unfused_s"]
    assert bound["peak_rss_mb"] >= bound["rss_before_mb"] > 0


def test_jax_workload_is_bounded_against_make_jaxpr():
    pytest.importorskip("jax")
    fn, (params, ids) = models.gpt_jax(layers=1, width=64, heads=2, vocab=128, context=32,
                                       batch=1, tokens=16)  # fmt: skip
    import jax

    import solar

    eqns = len(jax.make_jaxpr(fn)(params, ids).eqns)
    b = solar.bound(fn, (params, ids), hw="H100")
    assert eqns > len(b.kernels) > 0


def _row(name, trace_s, bound_s, **extra):
    parts = {"trace_s": bound_s / 2, "lift_s": bound_s / 4, "analyze_s": 0.0}
    bound = {"wall_s": bound_s, "cpu_s": bound_s, "parts": parts, "kernels": 10}
    bound.update(rss_before_mb=300.0, peak_rss_mb=400.0, **extra)
    return {"model": name, "trace": {"wall_s": trace_s, "cpu_s": trace_s, "graph_nodes": 20},
            "bound": bound}  # fmt: skip


def test_report_states_each_target_with_its_number():
    machine = {"cpu": "x", "cores": 2, "memory_gb": 1, "os": "y", "python": "3", "torch": "2"}
    machine.update(commit="abc", date="now", load_avg_start=(0, 0, 0), load_avg_end=(0, 0, 0))
    doc = {
        "machine": machine,
        "repeat": 1,
        "models": [_row("gpt2_small", 1.0, 1.5), _row("llama70b", 4.0, 10.0),
                   _row("gpt2_small_jax", 1.0, 1.9)],
        "scaling": [],
        "corpus": {"serial": {"error": "x"}, "pool": {"wall_s": 9.0, "files": 3, "jobs": 2,
                                                      "ok": 3, "error": 0, "skipped": 0,
                                                      "task_s_sum": 12.0}},
    }  # fmt: skip
    assert targets(doc) == [
        "solar.bound <= 2x the bare trace for the issue's models: NOT met (worst: llama70b, 2.50x)",
        "solar.bound <= 2x the bare trace for the other workloads: met (worst: gpt2_small_jax, "
        "1.90x)",
        "LLaMA-70B in under 60 s and 4 GB: met (10.0 s, peak RSS 400 MB)",
        "examples corpus in under 120 s: met (9.0 s, 3 files, jobs=2)",
    ]
    text = markdown(doc)
    assert "| llama70b | 4.00 | 10.00 | 2.50x |" in text
    assert models.MODELS["llama70b"][0] in text


def test_command_line_rejects_an_unknown_model():
    proc = subprocess.run(
        [sys.executable, "-m", "solar.bench", "llama8b"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "unknown model 'llama8b'" in proc.stderr.strip().splitlines()[-1]
