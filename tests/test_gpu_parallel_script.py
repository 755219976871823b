"""bench/gpu_parallel.py (the 2-GPU tensor-parallel measurement) runs: on CPU with gloo and
2 processes at small sizes, and its full-size analysis derives the splits it implements."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import torch

from solar.hw import load_spec

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "gpu_parallel.py"


def load_script():
    spec = importlib.util.spec_from_file_location("gpu_parallel", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_runs_on_cpu_with_gloo(tmp_path):
    r = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path), "--device", "cpu", "--reps", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "VIOLATED" not in r.stdout
    last = r.stdout.strip().splitlines()
    assert last[-4].startswith("mlp_tp2") and last[-1].startswith("gpt_block_tp2")
    doc = json.loads((tmp_path / "parallel_results.json").read_text())
    assert doc["ok"] and set(doc["measured"]) == {"mlp_tp2", "gpt_block_tp2"}
    for m in doc["measured"].values():
        assert m["max_rel_err"] < 1e-4  # the 2-process split computes the same output


def test_full_size_analysis_finds_the_implemented_split():
    """At the examples' sizes solar's own search splits what the script implements:
    the MLP's hidden units; the GPT block's heads and MLP units (Megatron)."""
    mod = load_script()
    h200 = load_spec("H200")
    mlp = mod.analyse("mlp_tp2", "full", torch.bfloat16, h200)
    assert mlp["search_split"] == mlp["split"] == ["down_weight[1]"]
    (ar,) = mlp["collectives"]
    assert ar["kind"] == "all-reduce" and ar["tensor_bytes"] == 4096 * 2048 * 2
    gpt = mod.analyse("gpt_block_tp2", "full", torch.bfloat16, h200)
    assert sorted(gpt["search_split"]) == sorted(gpt["split"])
    assert [c["tensor_bytes"] for c in gpt["collectives"]] == [8 * 2048 * 2048 * 2] * 2
    assert gpt["bounds"]["fused_s"] >= gpt["ideal_s"]
