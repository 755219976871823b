"""The model zoo (``python -m solar.bench.zoo``): driven through its entry point on two small
torchvision models, its failure records (every missing operator of a graph, not only the
first) and its table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import solar
from solar.bench.zoo_child import failure
from solar.bench.zoo_table import markdown
from solar.frontend.torch.registry import UnsupportedOperatorError

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("torchvision")


def _zoo(*args: str, out: Path, library: str = "torchvision") -> subprocess.CompletedProcess:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    cmd = [sys.executable, "-m", "solar.bench.zoo", "--library", library, "--out", str(out)]
    return subprocess.run(
        [*cmd, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )


def test_entry_point_bounds_models_and_writes_the_table(tmp_path):
    proc = _zoo(
        "--only", "squeezenet1_1,resnet18", "--train-every", "0", "--jobs", "2", out=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    records = json.loads((tmp_path / "zoo.json").read_text())["models"]
    assert set(records) == {"torchvision/squeezenet1_1", "torchvision/resnet18"}
    for rec in records.values():
        assert rec["forward"]["ok"], rec["forward"]
        assert rec["forward"]["fused_ms"] > 0 and rec["forward"]["kernels"] > 10
        assert "train" not in rec  # --train-every 0: no training step
    table = (tmp_path / "zoo.md").read_text()
    import torchvision

    total = len(torchvision.models.list_models())
    assert f"| torchvision | 2 of {total} | 2 | 0 of 0 | - |" in table
    for name in ("squeezenet1_1", "resnet18"):
        assert f"| {name} | {records[f'torchvision/{name}']['forward']['kernels']} |" in table
    assert "2 of 2 bounded" in proc.stdout
    from importlib.metadata import version

    env = f"torch {version('torch')}, torchvision {version('torchvision')}"
    assert all(rec["environment"].startswith(env) for rec in records.values())
    assert f"- {records['torchvision/resnet18']['environment']}: 2 models" in table


def test_slowest_models_run_first():
    from solar.bench.zoo import longest_first

    doc = {"models": {"a/x": {"seconds": 3.0}, "a/y": {"seconds": 40.0}, "a/z": {}}}
    todo = [("a", 0, "x"), ("a", 1, "y"), ("a", 2, "new"), ("a", 3, "z")]
    assert [n for *_, n in longest_first(todo, doc)] == ["new", "y", "x", "z"]


def test_a_model_over_its_time_limit_is_a_row_saying_so(tmp_path):
    unet = "UNet2DConditionModel"
    proc = _zoo("--only", unet, "--timeout", "0.2", out=tmp_path, library="diffusers")
    assert proc.returncode == 0, proc.stderr
    table = (tmp_path / "zoo.md").read_text()
    assert f"| {unet} | forward | timeout | no result within 0 s |  |" in table
    assert "| diffusers | 1 of 5 | 0 | 0 of 0 | timeout 1 |" in table


@torch.library.custom_op("zoo_test::mystery", mutates_args=())
def _mystery(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@torch.library.custom_op("zoo_test::other", mutates_args=())
def _other(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


for _op in (_mystery, _other):
    _op.register_fake(lambda x: torch.empty_like(x))


class TwoGaps(nn.Module):
    def forward(self, x):
        return torch.ops.zoo_test.other(torch.ops.zoo_test.mystery(torch.ops.zoo_test.mystery(x)))


def test_a_failure_lists_every_missing_operator_with_its_count():
    with pytest.raises(UnsupportedOperatorError) as info:
        solar.bound(TwoGaps(), (torch.randn(4, 4),))
    rec = failure(info.value, "bound")
    assert rec["category"] == "missing operator"
    assert rec["missing"] == {"zoo_test.mystery.default": 2, "zoo_test.other.default": 1}
    assert rec["error"].startswith("UnsupportedOperatorError: ")  # one line, whatever its form


def _rec(name: str, forward: dict, **extra) -> dict:
    return {"library": "timm", "name": name, "forward": forward, **extra}


def test_table_ranks_missing_operators_by_models_blocked():
    gap = {"ok": False, "category": "missing operator", "error": "E: x"}
    doc = {
        "models": {
            "timm/a": _rec("a", {**gap, "missing": {"aten.fold.default": 1}}),
            "timm/b": _rec(
                "b",
                {**gap, "missing": {"aten.fold.default": 3, "aten.cdist.default": 1}},
                train={**gap, "missing": {"aten.cdist.default": 2}},
            ),
            "timm/c": _rec("c", {**gap, "missing": {"aten.fold.default": 1}}),
            "timm/d": _rec(
                "d", {"ok": True, "kernels": 7, "fused_ms": 0.5, "bound_by": "dram"}, notes=[]
            ),
        }
    }
    table = markdown(doc)
    assert "| timm | 4 | 1 | 0 of 1 | missing operator 3 |" in table
    fold = table.index("| `aten.fold.default` | 3 | 5 | a, b, c |")
    cdist = table.index("| `aten.cdist.default` | 1 | 3 | b |")
    assert fold < cdist
    assert "| b | train | missing operator | missing `aten.cdist.default` x2 |  |" in table
    assert "| d | 7 | 0.5 | dram | - |  |" in table
