"""bench/gpu_spectral.py (the issue-24 examples validated and timed on a GPU) runs on the CPU
at tiny sizes (``--small``): every example validates against its framework, none is faster
than its bounds, and the table is written."""

import json

from console import run_bench_script

SCRIPT = "gpu_spectral.py"


def test_runs_small_on_cpu(tmp_path):
    run_bench_script(SCRIPT, tmp_path, "--small", "--budget-s", "0.2")
    rows = json.loads((tmp_path / "spectral.json").read_text())
    assert [row["name"] for row in rows] == [
        "op_spectral_conv_fno",
        "jax_linear_solve_train",
        "jax_diffusion_sampler",
    ]
    for row in rows:
        assert row["validation"] == "passed" and row["violations"] == 0, row
        assert not row["faster_than_a_bound"], row
    assert "| op_spectral_conv_fno | passed |" in (tmp_path / "spectral.md").read_text()
