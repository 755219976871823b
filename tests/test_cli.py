"""The `solar` command line on the examples, and its one-line errors."""

import json
import os
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


# -- models by name on every command; the first hour (issue 37) -------------------------------

TINY_GPT2 = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 2,
             "n_embd": 64, "n_head": 4, "n_positions": 128, "vocab_size": 100}  # fmt: skip
#: one decode step of TINY_GPT2 after 64 cached tokens, batch 2, fp32 (derived by hand in
#: tests/test_hub.py::test_decode_step_by_name_by_hand): weights once, the KV cache read, the
#: new keys and values, ids and positions (2 x 2 x 8), the cache counters (2 x 8), the logits
DECODE_BYTES = 560_208
INT64_BYTES = 2 * 2 * 8 + 2 * 8  # the ids, positions and counters: int64 whatever --dtype


@pytest.fixture
def tiny_gpt2(tmp_path) -> str:
    (tmp_path / "config.json").write_text(json.dumps(TINY_GPT2))
    return f"hf:{tmp_path}"


def test_compare_and_provision_take_hf_models_with_the_flags_of_bound(tiny_gpt2):
    """``solar compare`` and ``solar provision`` take ``hf:`` with ``--batch``, ``--decode``,
    ``--context`` as ``solar bound`` does, and bound the same program."""
    from console import run_solar

    decode = ["--batch", 2, "--decode", "--context", 64]
    code, out, err = run_solar("compare", tiny_gpt2, *decode, "--hw", "H100,A100", "--json")
    assert code == 0, err
    assert [g["bytes"]["fused"] for g in json.loads(out)["gpus"]] == [DECODE_BYTES] * 2
    code, out, err = run_solar("provision", tiny_gpt2, *decode, "--target-ms", 1, "--json")
    assert code == 0, err
    assert json.loads(out)["memory"]["fused_bytes"] == DECODE_BYTES


@pytest.mark.parametrize("dtype", ["bf16", "bfloat16"])
def test_dtype_short_names(capsys, tiny_gpt2, dtype):
    """``--dtype bf16`` is ``bfloat16``: every float byte halves, the int64 ones stay."""
    code, out, _ = run(capsys, "bound", tiny_gpt2, "--batch", 2, "--decode", "--context", 64,
                       "--dtype", dtype, "--json")  # fmt: skip
    assert code == 0
    fused = json.loads(out)["totals"]["bytes"]["fused"]
    assert fused == (DECODE_BYTES - INT64_BYTES) // 2 + INT64_BYTES == 280_128


def test_moe_config_dtype_gets_a_dtype_hint(capsys, tmp_path):
    """A MoE whose config says float32: transformers' experts run ``torch._grouped_mm``, which
    takes bf16 only; the one line says to pass ``--dtype``."""
    config = {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"],
              "num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 128,
              "moe_intermediate_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
              "head_dim": 16, "num_experts": 4, "num_experts_per_tok": 2, "vocab_size": 100,
              "max_position_embeddings": 128, "torch_dtype": "float32"}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, _, err = run(capsys, "bound", f"hf:{tmp_path}", "--seq", 8)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "Expected inputs of BF16 type but got mat_a.dtype=torch.float32" in err
    assert err.strip().endswith(
        "the model was built in its config's dtype, and its library's kernels ask for another: "
        "pass --dtype bf16 (or fp16)"
    )


def test_local_config_sets_hf_hub_offline_for_the_command(capsys, tiny_gpt2, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # restored after the test
    code, _, _ = run(capsys, "bound", tiny_gpt2, "--seq", 8, "--json")
    assert code == 0 and os.environ["HF_HUB_OFFLINE"] == "1"


def test_piping_into_head_ends_quietly():
    """``solar bound ... | head``: the reader goes away before the report is written; solar
    ends with status 0 and nothing on stderr (no Broken pipe error)."""
    from console import SCRIPT

    for argv in (["bound", EXAMPLES[1]], ["bound", EXAMPLES[1], EXAMPLES[2], "--jobs", "1"]):
        p = subprocess.Popen(
            [str(SCRIPT), *map(str, argv)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env={**os.environ, "COLUMNS": "140"},
        )  # fmt: skip
        p.stdout.close()  # the reader is gone (head has read its lines)
        err = p.stderr.read()
        assert p.wait(timeout=300) == 0
        assert "Broken pipe" not in err and "Error" not in err, err


def test_batch_table_names_the_gpu(capsys):
    code, out, _ = run(capsys, "bound", EXAMPLES[1], EXAMPLES[2], "--jobs", 1, "--hw", "A100")
    assert code == 0
    assert out.splitlines()[0] == "bounds on NVIDIA A100 SXM4 80GB"
