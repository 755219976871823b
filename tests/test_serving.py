"""The serving frontier (solar/questions/serving*.py): hand-derived checks on a LLaMA-70B-shaped
model (weights and KV bytes per token from its config), each engine switch changing the traced
step, the targets inverted, the views and the ``solar serving`` command."""

from __future__ import annotations

import json
import os

import pytest
from console import run_solar

import solar
from solar.hw import load_spec
from solar.questions.serving import serving
from solar.questions.serving_engine import Engine, ServingError

transformers = pytest.importorskip("transformers")

LLAMA_70B = {  # meta-llama/Llama-3.1-70B's config.json, less its rope scaling
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 8192,
    "intermediate_size": 28672, "num_attention_heads": 64, "num_key_value_heads": 8,
    "vocab_size": 128256, "num_hidden_layers": 80, "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16", "tie_word_embeddings": False,
}  # fmt: skip
TINY = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 128,
    "intermediate_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
    "vocab_size": 500, "num_hidden_layers": 2, "max_position_embeddings": 4096,
    "torch_dtype": "bfloat16",
}  # fmt: skip


def folder(tmp_path, config: dict, **changes) -> str:
    (tmp_path / "config.json").write_text(json.dumps({**config, **changes}))
    return f"hf:{tmp_path}"


def llama_parameters(c: dict) -> int:
    """Per layer Q and O (D x D), K and V (D x kv_heads x head_dim), the gated MLP (3 x D x F)
    and two RMSNorms (D); the final norm; the token table and the LM head (V x D each)."""
    d, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    kv = c["num_key_value_heads"] * d // c["num_attention_heads"]
    return c["num_hidden_layers"] * (2 * d * d + 2 * d * kv + 3 * d * f + 2 * d) + d + 2 * v * d


def llama_bytes(c: dict, batch: int) -> tuple[int, int]:
    """(bf16 weight bytes a decode step reads, KV bytes per cached token) by hand: every
    parameter but the token table, of which the lookup reads ``batch`` rows; KV: layers x
    (K, V) x kv_heads x head_dim x 2 bytes."""
    d, v = c["hidden_size"], c["vocab_size"]
    kv = c["num_key_value_heads"] * d // c["num_attention_heads"]
    weights = (llama_parameters(c) - v * d + batch * d) * 2
    return weights, c["num_hidden_layers"] * 2 * kv * 2


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return folder(tmp_path_factory.mktemp("tiny"), TINY)


@pytest.fixture(scope="module")
def plain(tiny):
    return serving(tiny, "H100", 1, prompt=512, output=8, max_batch=8)


@pytest.fixture(scope="module")
def frontier(tiny):
    return serving(tiny, "H100", [1, 2], prompt=256, output=64, max_batch=64, tpot_s=4e-7)


def test_llama_70b_shape_batch_1_on_8_h100s_reads_its_weights(tmp_path):
    """TPOT at batch 1 on 8 x H100 >= (weights + the KV cache at the mean context) / (8 x DRAM
    bandwidth): TP 8 splits every weight and head evenly. The 70B widths, 2 of its 80 layers
    (the slow test below runs all 80)."""
    cfg = {**LLAMA_70B, "num_hidden_layers": 2}
    s = serving(folder(tmp_path, cfg), "H100", 8, prompt=1024, output=256, max_batch=8)
    f = s.frontier("H100", 8)
    weights, kv_token = llama_bytes(cfg, 1)
    assert kv_token == 2 * 2 * 8 * 128 * 2 == 8192
    assert s.decode_context == 1024 + 255 // 2 == 1151
    bw = load_spec("H100").dram_bandwidth
    p = f.points[0]
    assert p.batch == 1 and p.plan == "TP 8 x PP 1 x DP 1"
    assert p.tpot_s >= weights / (8 * bw)
    assert p.tpot_s >= (weights + kv_token * (1151 + 1)) / (8 * bw) * (1 - 1e-12)


@pytest.mark.skipif(
    os.environ.get("SOLAR_SERVING_70B") != "1", reason="slow (a minute): SOLAR_SERVING_70B=1"
)
def test_llama_70b_all_80_layers(tmp_path):
    s = serving(folder(tmp_path, LLAMA_70B), "H100", [1, 8], prompt=4095, output=1,
                engine=Engine(page_size=None), max_batch=1024)  # fmt: skip
    assert s.frontier("H100", 1).max_batch is None  # 141 GB of weights: no single H100
    f = s.frontier("H100", 8)
    weights, kv_token = llama_bytes(LLAMA_70B, 1)
    assert kv_token == 327_680
    assert f.points[0].tpot_s >= weights / (8 * load_spec("H100").dram_bandwidth)
    cap = load_spec("H100").dram_capacity
    assert f.max_batch <= (cap - llama_parameters(LLAMA_70B) * 2 / 8) // (kv_token * 4096 / 8)


def test_memory_limit_on_batch_at_4096_tokens(tmp_path):
    """No paging: each sequence holds 4,096 slots (prompt 4,095 + 1 output). The largest batch
    that fits one H100 is at most (capacity - weights held) / (KV bytes per token x 4,096) by
    hand (the activations take the rest), within 1%, and one more does not fit. The 70B
    widths, 2 layers: 3,812,663,296 parameters, 8,192 KV bytes per token."""
    cfg = {**LLAMA_70B, "num_hidden_layers": 2}
    s = serving(folder(tmp_path, cfg), "H100", 1, prompt=4095, output=1,
                engine=Engine(page_size=None), max_batch=4096)  # fmt: skip
    assert s.held_context == 4096
    f = s.frontier("H100", 1)
    held = llama_parameters(cfg) * 2
    _, kv_token = llama_bytes(cfg, 1)
    assert (held, kv_token) == (3_812_663_296 * 2, 8192)
    cap = load_spec("H100").dram_capacity
    assert cap == 80 * 10**9
    by_hand = (cap - held) // (kv_token * 4096)
    assert by_hand == 2156
    assert f.memory_binds and 0.99 * by_hand <= f.max_batch <= by_hand
    assert f.points[-1].batch == f.max_batch and f.points[-1].peak_bytes <= cap


def dram_per_slot(s) -> float:
    """The decode step's DRAM term's coefficient of batch x context: seconds per cached slot."""
    import sympy

    term = sympy.expand(sympy.sympify(s.step_terms["dram"]))
    named = {x.name: x for x in term.free_symbols}
    return float(term.coeff(named["batch"] * named["context"]))


def test_decode_step_is_one_formula_of_batch_and_context(plain):
    """2 layers x (K, V) x 2 heads x 32 dims x 2 bytes = 512 B per cached slot and sequence."""
    assert set(plain.step_terms) >= {"dram", "latency"}
    assert dram_per_slot(plain) == pytest.approx(512 / load_spec("H100").dram_bandwidth, rel=1e-12)
    # the mean context 512 + (8 - 1) // 2; its 515 + 1 slots held in 16-token pages
    assert plain.decode_context == 515 and plain.held_context == 528


def test_frontier_shape(frontier):
    f = frontier.frontier("H100", 1)
    assert [p.batch for p in f.points] == [1, 2, 4, 8, 16, 32, 64]
    tpots = [p.tpot_s for p in f.points]
    assert tpots == sorted(tpots)  # TPOT grows with the batch
    for p in f.points:
        assert p.tokens_per_s_per_gpu == pytest.approx(p.batch / p.step_s, rel=1e-12)
    two = frontier.frontier("H100", 2)
    assert all(p.tokens_per_s_per_gpu == pytest.approx(p.batch / p.step_s / 2) for p in two.points)


def test_best_under_tpot_is_the_largest_batch_meeting_it(frontier):
    (t,) = [t for t in frontier.targets if t.question == "best_under_targets"]
    assert t.tpot_s <= 4e-7 and t.binding == "TPOT"
    cfg = frontier.frontier(t.hw_key, t.gpus)
    # one more sequence misses the target: a bound of the step at batch + 1, traced afresh
    assert t.batch < cfg.max_batch


def test_fp8_kv_cache_halves_the_kv_bytes(tiny):
    fp8 = serving(
        tiny, "H100", 1, prompt=100, output=20, max_batch=2, engine=Engine(kv_cache="fp8")
    )
    assert dram_per_slot(fp8) == pytest.approx(256 / load_spec("H100").dram_bandwidth, rel=1e-12)


def test_speculative_step_verifies_k_plus_1_tokens(tiny):
    e = Engine(speculative=(3, 0.5))
    assert e.tokens_per_step == (1 - 0.5**4) / (1 - 0.5) == 1.875
    s = serving(tiny, "H100", 1, prompt=100, output=20, max_batch=2, engine=e)
    assert "context + 4" in s.step_terms["dram"]  # the cache holds context + k + 1 slots
    p = s.frontier("H100", 1).points[0]
    assert p.tpot_s == pytest.approx(p.step_s / 1.875, rel=1e-12)


def test_prefix_caching_prefills_the_rest_and_holds_the_prefix_once(tiny, plain):
    from solar.hub import hub_model
    from solar.questions.serving_steps import prefill_phase

    model = hub_model(tiny, need="causal").model
    phase = prefill_phase(model, 1, 512, Engine(prefix_tokens=384))
    assert tuple(phase.inputs[0].shape) == (1, 128)  # the prompt's own 128 tokens
    assert phase.inputs[2].layers[0].keys.shape[2] == 512  # after the 384 cached
    cached = serving(tiny, "H100", 1, prompt=512, output=8, max_batch=8,
                     engine=Engine(prefix_tokens=384))  # fmt: skip
    a, b = plain.frontier("H100", 1), cached.frontier("H100", 1)
    assert b.ttft_s <= a.ttft_s
    # 8 sequences hold 384 shared tokens once instead of 8 times: 7 x 384 x 512 B of KV less
    # (within 0.5%: the attention's transient scores per slot move the peak a little too)
    saved = a.points[-1].peak_bytes - b.points[-1].peak_bytes
    assert saved == pytest.approx(7 * 384 * 512, rel=5e-3)


def test_static_batching_prefills_the_batch_together(tiny):
    s = serving(tiny, "H100", 1, prompt=512, output=8, max_batch=8,
                engine=Engine(continuous_batching=False))  # fmt: skip
    ttfts = [p.ttft_s for p in s.frontier("H100", 1).points]
    assert ttfts[-1] > ttfts[0] and s.held_context == 520


def test_chunked_prefill_adds_the_chunk_to_each_step(tiny, plain):
    chunked = serving(tiny, "H100", 1, prompt=512, output=8, max_batch=8,
                      engine=Engine(chunked_prefill=128))  # fmt: skip
    a, b = plain.frontier("H100", 1).points[-1], chunked.frontier("H100", 1).points[-1]
    assert a.batch == b.batch == 8 and b.step_s > a.step_s
    assert b.ttft_s == pytest.approx(4 * b.step_s, rel=1e-12)  # 512 prompt tokens, 4 chunks


def test_sliding_window_step_is_taken_at_the_prompt(tmp_path):
    """A window of 64 tokens caps the keys read: the step is not affine in the context, so it
    is taken at the prompt's length (the first step's), and the assumptions say so."""
    cfg = {**TINY, "model_type": "mistral", "architectures": ["MistralForCausalLM"],
           "sliding_window": 64, "layer_types": ["sliding_attention"] * 2,
           "head_dim": 32}  # fmt: skip
    s = serving(folder(tmp_path, cfg), "H100", 1, prompt=48, output=64, max_batch=2)
    assert s.decode_context == 48
    assert any("not affine in the context" in a for a in s.assumptions)


def test_moe_router_is_traced_at_each_batch(tmp_path):
    cfg = {**TINY, "model_type": "mixtral", "architectures": ["MixtralForCausalLM"],
           "num_local_experts": 4, "num_experts_per_tok": 2}  # fmt: skip
    s = serving(folder(tmp_path, cfg), "H100", 1, prompt=64, output=1, max_batch=2)
    assert s.step_terms == {}
    assert any("traced at each batch" in a for a in s.assumptions)
    assert [p.batch for p in s.frontier("H100", 1).points] == [1, 2]


def test_result_is_frozen_data(frontier):
    import dataclasses
    import pickle

    with pytest.raises(dataclasses.FrozenInstanceError):
        frontier.prompt = 1
    with pytest.raises(TypeError):
        frontier.step_terms["dram"] = "0"
    assert isinstance(frontier.frontiers, tuple)
    back = pickle.loads(pickle.dumps(frontier))
    assert back == frontier and back.to_json() == frontier.to_json()


def test_views_and_json(frontier):
    text = str(frontier)
    assert "1 x h100_sxm" in text and "TPOT >=" in text and "assumptions:" in text
    d = json.loads(frontier.to_json())
    assert d["kind"] == "solar.serving/1" and d["frontiers"][0]["points"][0]["batch"] == 1
    fig = frontier.plot()
    assert fig.axes[0].get_xlabel().startswith("tokens/s")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompt": 0, "output": 4}, "prompt must be a whole number"),
        ({"prompt": 4000, "output": 200}, "more than the model's 4096 positions"),
        (
            {"prompt": 10, "output": 4, "engine": Engine(prefix_tokens=10)},
            "shorter than the prompt",
        ),
    ],
)
def test_bad_requests_say_so(tiny, kwargs, message):
    with pytest.raises(ServingError, match=message):
        serving(tiny, "H100", 1, **kwargs)


def test_bad_engine_switches_say_so():
    with pytest.raises(ServingError, match="acceptance rate"):
        Engine(speculative=(2, 1.0))
    with pytest.raises(ServingError, match="kv_cache"):
        Engine(kv_cache="int4")


def test_api_name():
    assert solar.serving is serving


def test_cli(tiny, tmp_path):
    png = tmp_path / "f.png"
    code, out, err = run_solar("serving", tiny, "--gpus", "2", "--prompt", "128", "--output",
                               "16", "--max-batch", "2", "--json", "--plot", png)  # fmt: skip
    assert code == 0, err
    d = json.loads(out)
    assert [f["gpus"] for f in d["frontiers"]] == [2] and png.stat().st_size > 0
    code, out, err = run_solar("serving", tiny, "--prompt", "128", "--output", "16",
                               "--speculative", "x")  # fmt: skip
    assert code == 2 and err.strip().startswith("solar: error: --speculative 'x'")
    assert len(err.strip().splitlines()) == 1
