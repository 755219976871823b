"""Models by name (solar/hub/): a Hugging Face model built from its config.json alone on the
meta device, offline, from a folder or the local cache; ``from_pretrained`` in problem files
builds the same way. Counts are derived by hand from the configs (tests/fixtures/hf/)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from console import run_solar
from hf_cache import FIXTURES, make_cache

import solar
from solar.hub import HubError, find_config, hub_model

transformers = pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[1]
HUB_EXAMPLES = ROOT / "examples" / "hub"


@pytest.fixture
def offline_cache(tmp_path, monkeypatch):
    """HF_HUB_CACHE: a cache holding the fixture configs alone; HF_HUB_OFFLINE=1 (for this
    process and the ``solar`` subprocesses it starts)."""
    cache = make_cache(tmp_path / "hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def gpt2_parameters(vocab: int, width: int, positions: int, layers: int) -> int:
    """GPT-2's parameters from its config: token and position tables, per layer two layer
    norms (2 x 2D), the fused QKV projection (3D^2 + 3D), the output projection (D^2 + D) and
    the MLP (4D^2 + 4D, 4D^2 + D); the final layer norm; the LM head is tied to the tokens."""
    per_layer = 4 * width + (3 * width * width + 3 * width) + (width * width + width)
    per_layer += (4 * width * width + 4 * width) + (4 * width * width + width)
    return vocab * width + positions * width + layers * per_layer + 2 * width


def gpt2_fused_bytes(batch, seq, vocab, width, positions, layers, *, cache: bool) -> int:
    """The fused bound's bytes of GPT-2's forward (fp32): every weight once, except the
    position table, of which a gather provably reads one row (the token table is read whole
    by the tied LM head); the ids; the logits; with ``cache`` the keys and values each layer
    returns (``use_cache=True`` is the default of ``model(ids)``)."""
    weights = (gpt2_parameters(vocab, width, positions, layers) - positions * width + width) * 4
    ids = batch * seq * 8
    logits = batch * seq * vocab * 4
    kv = layers * 2 * batch * seq * width * 4 if cache else 0
    return weights + ids + logits + kv


def test_gpt2_parameters_from_its_config():
    model = hub_model(str(FIXTURES / "gpt2")).model
    assert sum(p.numel() for p in model.parameters()) == gpt2_parameters(50257, 768, 1024, 12)
    assert gpt2_parameters(50257, 768, 1024, 12) == 124_439_808  # the published count
    assert all(p.device.type == "meta" for p in model.parameters())  # nothing allocated


def test_fused_bound_reads_every_parameter_once(tmp_path):
    """A small GPT-2 config in a folder: the fused bound's bytes are its parameters x 4 bytes
    (less the position rows a gather provably need not read) plus the I/O, exactly."""
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 2,
           "n_embd": 64, "n_head": 4, "n_positions": 32, "vocab_size": 100}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    b = solar.bound_hub(f"hf:{tmp_path}", batch=2, seq=32)
    assert b.bytes_fused == gpt2_fused_bytes(2, 32, 100, 64, 32, 2, cache=True) == 517_888
    assert any("GPT2LMHeadModel built from config.json alone" in a for a in b.assumptions)


def test_dtype_is_the_configs_unless_asked():
    opt = FIXTURES / "facebook" / "opt-1.3b"  # "torch_dtype": "float16"
    built = hub_model(str(opt))
    params = list(built.model.parameters())
    assert {p.dtype for p in params} == {torch.float16}
    assert sum(p.numel() for p in params) == 1_315_758_080  # OPT-1.3B's published count
    assert "dtype float16 (the config's torch_dtype)" in built.notes[0]
    asked = hub_model(str(opt), dtype="bfloat16")
    assert {p.dtype for p in asked.model.parameters()} == {torch.bfloat16}
    assert "as asked" in asked.notes[0]
    assert "float32: the config names no torch_dtype" in hub_model(str(FIXTURES / "gpt2")).notes[0]


def test_the_cache_is_read_offline(offline_cache):
    source = find_config("facebook/bart-large")
    assert source.folder.parent.parent.name == "models--facebook--bart-large"
    assert "Hugging Face cache" in source.where


def test_missing_config_is_one_line_naming_it_and_the_way_out(offline_cache):
    with pytest.raises(HubError) as e:
        find_config("nobody/missing-model")
    msg = str(e.value)
    assert "\n" not in msg
    assert "no config.json for nobody/missing-model" in msg and str(offline_cache) in msg
    assert "HF_HUB_OFFLINE" in msg and "hf download nobody/missing-model config.json" in msg


def test_cli_missing_config(offline_cache):
    rc, out, err = run_solar("bound", "hf:nobody/missing-model", "--seq", "8")
    assert rc != 0 and not out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "no config.json for nobody/missing-model" in lines[0]
    assert "hf download nobody/missing-model config.json" in lines[0]


def test_cli_folder_without_config(tmp_path):
    rc, _, err = run_solar("bound", f"hf:{tmp_path}", "--seq", "8")
    want = f"solar: error: {tmp_path}: the folder holds no config.json (hf:FOLDER needs one)"
    assert rc != 0 and err.strip() == want


def test_cli_gpt2_by_name_offline(offline_cache):
    """``solar bound hf:gpt2`` from the cache, offline: exact fused bytes of the real config."""
    rc, out, err = run_solar("bound", "hf:gpt2", "--batch", "1", "--seq", "128", "--json")
    assert rc == 0, err
    b = json.loads(out)
    want = gpt2_fused_bytes(1, 128, 50257, 768, 1024, 12, cache=True)
    assert b["totals"]["bytes"]["fused"] == want
    assert any("no weights downloaded" in a for a in b["assumptions"])


HUB_PROBLEMS = ["gpt2", "opt_1_3b", "gpt_neo_2_7b", "bart_large", "electra_small"]


def test_benchmark_problems_with_from_pretrained_bound_offline(offline_cache):
    """The model-level problems (from_pretrained in ``Model.__init__``, KernelBench level 4's
    form) are bounded by ``solar bound FILE`` offline, each from its config alone."""
    files = [HUB_EXAMPLES / f"{name}.py" for name in HUB_PROBLEMS]
    rc, out, err = run_solar("bound", *files, "--jobs", "1", "--json")
    assert rc == 0, err[-3000:]
    results = {Path(p["path"]).stem: p for p in json.loads(out)["programs"]}
    for name in HUB_PROBLEMS:
        assert results[name]["status"] == "ok", results[name]
        notes = results[name]["bound"]["assumptions"]
        assert any("from_pretrained" in n and "no weights downloaded" in n for n in notes)
    gpt2 = results["gpt2"]["bound"]["totals"]["bytes"]["fused"]
    assert gpt2 == gpt2_fused_bytes(8, 1024, 50257, 768, 1024, 12, cache=False)  # logits only


def test_bigbird_problem_bounds_offline(offline_cache):
    """BigBird's block-sparse attention reshapes its context layers in place
    (``unsqueeze_``): lowered as views, no kernel."""
    rc, out, err = run_solar("bound", HUB_EXAMPLES / "bigbird_roberta_base.py", "--json")
    assert rc == 0, err
    assert json.loads(out)["totals"]["bytes"]["fused"] > 0


def test_from_pretrained_without_config_in_a_problem_file(offline_cache, tmp_path):
    """``from_pretrained(name)`` alone (no config passed), a model class: read from the cache."""
    f = tmp_path / "electra.py"
    f.write_text(
        "import torch, transformers\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.m = transformers.ElectraModel.from_pretrained(\n"
        "            'google/electra-small-discriminator', torch_dtype=torch.bfloat16)\n"
        "    def forward(self, x):\n"
        "        return self.m(x).last_hidden_state\n"
        "def get_inputs():\n"
        "    return [torch.randint(0, 30522, (2, 64))]\n"
    )
    from solar.problem import load_problem

    p = load_problem(f)
    params = list(p.model.parameters())
    assert sum(x.numel() for x in params) == 13_483_008  # ELECTRA-small's published count
    assert {x.dtype for x in params} == {torch.bfloat16} and not p.model.training
    assert any("ElectraModel.from_pretrained" in n and "as asked" in n for n in p.notes)


def test_problem_file_with_missing_config_is_one_line(offline_cache, tmp_path):
    f = tmp_path / "missing.py"
    f.write_text(
        "import torch, transformers\n"
        "config = transformers.AutoConfig.from_pretrained('nobody/missing-model')\n"
        "class Model(torch.nn.Module):\n"
        "    pass\n"
        "def get_inputs():\n"
        "    return []\n"
    )
    rc, _, err = run_solar("bound", f)
    assert rc != 0 and len(err.strip().splitlines()) == 1, err
    assert f"{f}: no config.json for nobody/missing-model" in err


def test_environment_is_untouched_by_the_redirection(offline_cache, tmp_path):
    """After a problem file is loaded, ``from_pretrained`` is transformers' own again."""
    from solar.problem import load_problem

    before = transformers.AutoModelForCausalLM.from_pretrained.__func__
    load_problem(HUB_EXAMPLES / "electra_small.py")
    assert transformers.AutoModelForCausalLM.from_pretrained.__func__ is before
    assert os.environ["HF_HUB_OFFLINE"] == "1"


@pytest.fixture
def tiny_gpt2(tmp_path):
    """A folder holding a 2-layer GPT-2 config (width 64, 128 positions, vocabulary 100)."""
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 2,
           "n_embd": 64, "n_head": 4, "n_positions": 128, "vocab_size": 100}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return f"hf:{tmp_path}"


def test_decode_step_by_name_by_hand(tiny_gpt2):
    """One decode step (static cache) after 64 tokens, batch 2: every weight once (one
    position row), the cached keys and values read, the new ones written in place, the ids
    and positions, the cache's position counters, the logits."""
    batch, context, layers, width, vocab, positions = 2, 64, 2, 64, 100, 128
    b = solar.bound_hub(tiny_gpt2, batch=batch, phase="decode", context=context)
    params = gpt2_parameters(vocab, width, positions, layers)
    weights = (params - positions * width + width) * 4
    kv_read = 2 * layers * batch * context * width * 4
    kv_written = 2 * layers * batch * 1 * width * 4
    ids_and_positions = 2 * batch * 8
    counters = layers * 8
    logits = batch * vocab * 4
    want = weights + kv_read + kv_written + ids_and_positions + counters + logits
    assert b.bytes_fused == want == 560_208


def test_prefill_by_name_is_the_forward_with_its_cache(tiny_gpt2):
    b = solar.bound_hub(tiny_gpt2, batch=2, seq=32, phase="prefill")
    assert b.bytes_fused == gpt2_fused_bytes(2, 32, 100, 64, 128, 2, cache=True)


def test_training_step_by_name(tiny_gpt2):
    """One AdamW step of the LM's own loss: forward, backward, optimizer; every parameter, its
    two Adam moments updated in place (28 parameter tensors: 2 tables, 12 per layer, the
    final layer norm's 2)."""
    b = solar.bound_hub(tiny_gpt2, batch=2, seq=32, phase="train")
    assert [p.phase for p in b.phases] == ["forward", "backward", "optimizer"]
    assert any(f"{3 * (2 + 12 * 2 + 2)} input(s) updated in place" in a for a in b.assumptions)
    assert any("dropout off" in a for a in b.assumptions)
