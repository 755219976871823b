"""bench/gpu_energy.py without a GPU (``--dry-run``): it selects KernelBench files by its fixed
rule, bounds them on CPU worker processes and prices the bounds with a spec's energy costs; a
floor checked by hand. The measurement itself needs the GPU (the lead's H100 run)."""

from __future__ import annotations

import json

import pytest
import yaml
from console import ROOT, run_bench_script

from solar.hw import load_spec


def test_dry_run_bounds_and_prices_the_selection(tmp_path):
    spec = load_spec("H100").to_dict()
    spec.pop("path")
    spec["energy"] = {
        "idle_w": 70,
        "op_pj": {"cuda_fp32": 1.0},
        "dram_pj_per_byte": 10,
        "measured_on": "a test spec, not a measurement",
    }
    hw = tmp_path / "h100_energy.yaml"
    hw.write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    r = run_bench_script(
        "gpu_energy.py", out, "--dry-run", "--only", "19_ReLU", "--no-training", "--jobs", "1",
        "--hw", hw,
    )  # fmt: skip
    assert "would measure level1/19_ReLU.py" in r.stdout
    (row,) = json.loads((out / "energy.json").read_text())["programs"]
    # 4096 x 393216 fp32 elements n: read and written once, 8n bytes at 3352.32 GB/s; n relu
    # ops at 1 pJ, 8n bytes at 10 pJ, 70 W over that time
    n = 4096 * 393216
    t = 8 * n / 3352.32e9
    assert row["bound_s"]["fused"] == pytest.approx(t, rel=1e-12)
    assert row["floor_j"]["fused"] == pytest.approx(n * 1e-12 + 8 * n * 10e-12 + 70 * t, rel=1e-12)


def test_the_selection_rule_is_every_other_file():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_energy", ROOT / "bench" / "gpu_energy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    chosen = mod.programs(mod.parse(["out"]))
    groups = [g for g, _ in chosen]
    assert (groups.count("level1"), groups.count("level2"), groups.count("training")) == (50, 50, 3)
    level1 = sorted((ROOT / "bench" / "kernelbench" / "level1").glob("*.py"))
    assert [p for g, p in chosen if g == "level1"] == level1[::2]
