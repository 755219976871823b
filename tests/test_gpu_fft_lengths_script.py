"""bench/gpu_fft_lengths.py (FFTs of lengths that are not powers of two, validated and timed
on a GPU) runs on the CPU at small sizes (``--small``): each case validates against
torch.fft, none is faster than its bounds, and the table is written."""

import json

from console import run_bench_script

SCRIPT = "gpu_fft_lengths.py"


def test_runs_small_on_cpu(tmp_path):
    cases = "fft 251,irfft 1000,rfft2 243x250"
    run_bench_script(SCRIPT, tmp_path, "--small", "--budget-s", "0.05", "--only", cases)
    rows = json.loads((tmp_path / "fft_lengths.json").read_text())
    assert [row["name"] for row in rows] == cases.split(",")
    assert [row["plans"] for row in rows] == [
        ["rader"],
        ["cooley_tukey"],
        ["cooley_tukey", "prime_factor"],
    ]
    for row in rows:
        assert row["validation"] == "passed" and row["violations"] == 0, row
        assert not row["faster_than_a_bound"], row
    assert "| fft 251 | " in (tmp_path / "fft_lengths.md").read_text()
