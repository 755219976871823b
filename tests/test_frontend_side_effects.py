"""The frontends change nothing process-wide: ``import solar`` leaves ``sys.meta_path`` as it
was, and an observed trace reads ``.tolist()`` through its own TorchFunctionMode, never by
replacing ``torch.Tensor.tolist``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import solar

ROOT = Path(__file__).resolve().parents[1]


def test_import_solar_leaves_meta_path_unchanged():
    code = """
        import sys
        before = list(sys.meta_path)
        import solar, solar.api
        print(sys.meta_path == before, "torch" in sys.modules)
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["True", "False"]


class SplitByCounts(torch.nn.Module):
    """Rows split by counts read with ``.tolist()``: ``x[:c0] * 2`` and ``x[c0:].sum(0)``.
    Records which ``torch.Tensor.tolist`` it sees on each call."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[object] = []

    def forward(self, x, counts):
        self.seen.append(torch.Tensor.tolist)
        a, b = x.split(counts.tolist())
        return a * 2, b.sum(0)


@pytest.mark.parametrize("counts,fused_bytes", [([2, 6], 176), ([5, 3], 224)])
def test_observed_tolist_leaves_tensor_tolist_alone(counts, fused_bytes):
    """x: 8 x 4 float32 (128 bytes read). Outputs: c0 x 4 float32 (16 c0 bytes) and 4 float32
    (16 bytes): [2, 6] writes 48, [5, 3] 96 bytes. Flops: c0 * 4 multiplies + (c1 - 1) * 4
    adds = 28 either way. The fused bytes follow the counts only if the observed run read
    them."""
    original = torch.Tensor.tolist
    model = SplitByCounts()
    b = solar.bound(model, (torch.randn(8, 4), torch.tensor(counts)), observe=True)
    totals = b.to_dict()["totals"]
    assert totals["bytes"]["fused"] == fused_bytes
    assert totals["flops"] == {"cuda_fp32": 28}
    assert len(model.seen) >= 2  # the observed run and the trace
    assert all(t is original for t in model.seen)
    assert torch.Tensor.tolist is original
