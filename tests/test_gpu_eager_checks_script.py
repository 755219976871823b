"""bench/gpu_eager_checks.py (solar's refusals against eager PyTorch on a GPU) runs on the CPU:
a smoke run of its first programs, each one agreeing (eager raises iff solar refuses), and
its table written."""

import json

from console import run_bench_script


def test_runs_on_cpu(tmp_path):
    run_bench_script("gpu_eager_checks.py", tmp_path, "--limit", "4")
    rows = json.loads((tmp_path / "eager_checks.json").read_text())
    assert [r["name"] for r in rows] == ["mm", "bmm", "mv", "dot"]
    assert all(r["agrees"] and r["solar"].startswith("refused: RuntimeError: ") for r in rows)
    assert "4 of 4 agree" in (tmp_path / "eager_checks.md").read_text()
