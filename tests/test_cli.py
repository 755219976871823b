"""The `solar` command line on the examples, and its one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from solar.cli import main

ROOT = Path(__file__).resolve().parents[1]
# The README's examples; the whole corpus runs in tests/test_corpus.py.
README_EXAMPLES = [
    "matmul",
    "mlp",
    "softmax",
    "elementwise",
    "reduction",
    "attention_bf16",
    "mlp_bf16",
]
EXAMPLES = [ROOT / "examples" / f"{name}.py" for name in README_EXAMPLES]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_examples_exist():
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_bound_json_on_every_example(capsys, path):
    code, out, _ = run(capsys, "bound", path, "--hw", "H100", "--json")
    assert code == 0
    d = json.loads(out)
    b = d["bounds"]
    assert 0 < b["fused_s"] <= b["cache_aware_s"]
    assert b["fused_s"] <= b["unfused_s"]
    assert d["kernels"]


def test_bound_table(capsys):
    code, out, _ = run(capsys, "bound", ROOT / "examples/mlp.py", "--hw", "H100")
    assert code == 0
    assert "addmm" in out and "cache-aware" in out


def test_ir_and_graph(capsys, tmp_path):
    code, out, _ = run(capsys, "ir", ROOT / "examples/matmul.py")
    assert code == 0 and "kernel mm_0" in out and "for " in out
    dot = tmp_path / "g.dot"
    code, out, _ = run(capsys, "graph", ROOT / "examples/mlp.py", "--dot", dot)
    assert code == 0 and "contraction" in out
    assert dot.read_text().startswith("digraph")
    code, out, _ = run(capsys, "graph", ROOT / "examples/matmul.py", "--json")
    assert json.loads(out)["graph"]["name"] == "matmul"


def test_specs(capsys):
    code, out, _ = run(capsys, "specs")
    assert code == 0 and "H100" in out


@pytest.mark.parametrize(
    "source, needle",
    [
        ("import torch\ndef get_inputs():\n    return []\n", "defines no Model"),
        ("import torch\nclass Model(torch.nn.Module):\n    pass\n", "get_inputs"),
        ("raise RuntimeError('boom')\n", "importing it failed"),
        (
            "import torch\nclass Model(torch.nn.Module):\n"
            "    def forward(self, x):\n        return torch.special.zeta(x, 2.0)\n"
            "def get_inputs():\n    return [torch.randn(8, 8)]\n",
            "zeta",
        ),
    ],
)
def test_bad_problem_files_give_one_line(capsys, tmp_path, source, needle):
    f = tmp_path / "problem.py"
    f.write_text(source)
    code, out, err = run(capsys, "bound", f)
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_unknown_hw_and_missing_file(capsys):
    code, _, err = run(capsys, "bound", ROOT / "examples/mlp.py", "--hw", "NoSuchGPU")
    assert code == 2 and "NoSuchGPU" in err
    code, _, err = run(capsys, "bound", ROOT / "examples/nope.py")  # missing on purpose
    assert code == 2 and "no such file" in err


def test_console_script_entry_point():
    proc = subprocess.run(
        [sys.executable, "-m", "solar", "specs"], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0 and "H100" in proc.stdout


HANGS_IN_FORWARD = """import time

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        while True:
            time.sleep(0.1)


def get_inputs():
    return [torch.randn(4, 4)]
"""


def test_one_hanging_file_honours_timeout(tmp_path):
    """``solar bound FILE --timeout S`` stops one file as a batch stops each of its files,
    with the line the batch records (issue 37, item 4); through the installed script."""
    from console import run_solar

    f = tmp_path / "hangs.py"
    f.write_text(HANGS_IN_FORWARD)
    code, out, err = run_solar("bound", f, "--timeout", 2, timeout=120)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "solar: error: hangs.py: no result within the time limit of 2 s (--timeout)"
    ]
