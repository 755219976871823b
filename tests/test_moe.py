"""Mixture of experts: routing as an explicit assumption.

A top-k router sends every token to exactly k experts, so the expert GEMM flops are exact
whatever the routing; the expert weights read depend on it. Tiny transformers models (Mixtral,
Qwen2-MoE, Qwen3-MoE, DeepSeek-V3 with shared experts and multi-head latent attention) built
on meta in bf16 and called the default way, both experts paths (``grouped_mm``: one
``torch._grouped_mm`` kernel per projection; ``eager``: ``nonzero`` and a GEMM per expert hit).

Hand derivation (Mixtral below: hidden H = 64, expert intermediate I = 96, E = 4 experts, k = 2,
T = 8 tokens, so S = T k = 16 routed rows): the expert GEMMs do 2 S H (2I) + 2 S I H =
393,216 + 196,608 = 589,824 flops; one expert's weights are (2I H + H I) x 2 bytes = 36,864
bytes. Routing "any" touches k = 2 experts, "balanced" all 4, counts [8, 4, 4, 0] three: the
fused bound's DRAM bytes differ by exactly 36,864 per extra expert (inputs, outputs and every
other weight are the same).
"""

from __future__ import annotations

import pytest
import torch
from eager_oracle import check

import solar
from solar.frontend.torch.sizes import Routing

transformers = pytest.importorskip("transformers")

H, I, E, K, T = 64, 96, 4, 2, 8
S = T * K
EXPERT_FLOPS = 2 * S * H * 2 * I + 2 * S * I * H
EXPERT_BYTES = (2 * I * H + H * I) * 2
ROUTINGS = {"any": 2, "balanced": 4, (8, 4, 4, 0): 3}  # routing -> experts touched


def mixtral(impl: str = "grouped_mm", device: str = "meta", dtype=torch.bfloat16):
    cfg = transformers.MixtralConfig(
        vocab_size=128,
        hidden_size=H,
        intermediate_size=I,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=E,
        num_experts_per_tok=K,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.MixtralForCausalLM(cfg).to(dtype).eval()
    model.config._experts_implementation = impl
    return model


def ids(device: str = "meta") -> torch.Tensor:
    return torch.randint(0, 128, (1, T), device=device)


def test_routing_splits():
    assert Routing.parse("any").split(16, 4, 2) == [8, 8, 0, 0]
    assert Routing.parse("balanced").split(16, 4, 2) == [4, 4, 4, 4]
    assert Routing.parse("balanced").split(6, 4, 2) == [2, 2, 1, 1]
    assert Routing.parse([8, 4, 4, 0]).split(16, 4, 2) == [8, 4, 4, 0]
    with pytest.raises(ValueError, match="summing to 16"):
        Routing.parse([8, 8]).split(16, 4, 2)
    with pytest.raises(ValueError, match="routing='uniform' is not one of"):
        Routing.parse("uniform")


@pytest.mark.parametrize("impl", ["grouped_mm", "eager"])
def test_expert_flops_are_exact_and_weights_follow_the_routing(impl):
    model = mixtral(impl)
    bounds = {
        r: solar.bound(model, (ids(),), routing=list(r) if isinstance(r, tuple) else r)
        for r in ROUTINGS
    }
    totals = {r: b.to_dict()["totals"] for r, b in bounds.items()}
    flops = {r: t["flops"]["tc_bf16"] for r, t in totals.items()}
    assert len(set(flops.values())) == 1, flops  # the GEMM work does not depend on routing
    base = totals["any"]["bytes"]["fused"]
    for r, touched in ROUTINGS.items():
        assert totals[r]["bytes"]["fused"] - base == (touched - 2) * EXPERT_BYTES, r
    if impl == "grouped_mm":
        kernels = bounds["any"].to_dict()["kernels"]
        grouped = [k for k in kernels if k["op"] == "aten._grouped_mm.default"]
        assert len(grouped) == 2  # one kernel per projection, as CUDA runs it
        assert sum(k["flops"]["tc_bf16"] for k in grouped) == EXPERT_FLOPS
    notes = "\n".join(bounds["balanced"].assumptions)
    assert "'balanced': tokens x k spread evenly over the experts" in notes


def test_both_experts_paths_agree():
    """The eager path (a GEMM per expert hit) and the grouped path do the same GEMM work."""
    a = solar.bound(mixtral("grouped_mm"), (ids(),)).to_dict()["totals"]
    b = solar.bound(mixtral("eager"), (ids(),)).to_dict()["totals"]
    assert a["flops"]["tc_bf16"] == b["flops"]["tc_bf16"]
    assert a["bytes"]["fused"] == b["bytes"]["fused"]


def test_default_routing_is_stated():
    b = solar.bound(mixtral("eager"), (ids(),))
    notes = "\n".join(b.assumptions)
    assert "top-k router indices (aten.topk at modeling_mixtral.py:" in notes
    assert "'any': every token on the same k experts" in notes
    assert "data-dependent size of aten.nonzero at modeling_mixtral.py:" in notes


def test_an_impossible_routing_is_refused():
    with pytest.raises(ValueError, match="cannot take more than the 8 tokens"):
        solar.bound(mixtral("eager"), (ids(),), routing=[16, 0, 0, 0])


@pytest.mark.parametrize("impl", ["grouped_mm", "eager"])
def test_observed_routing_executes_as_pytorch(impl):
    # _grouped_mm takes bf16 only; the eager path in fp32, where no two router logits tie
    # (a tie broken differently in the executed IR would route differently)
    dtype = torch.bfloat16 if impl == "grouped_mm" else torch.float32
    model = mixtral(impl, device="cpu", dtype=dtype)
    trace = check(lambda i: model(i).logits, ids("cpu"), observe=True)
    assert any("observed on the given inputs" in a for a in trace.assumptions)


def small_config(kind: str):
    common = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4)
    if kind == "qwen2_moe":
        return transformers.Qwen2MoeConfig(
            **common, num_key_value_heads=2, intermediate_size=96, moe_intermediate_size=32,
            shared_expert_intermediate_size=48, num_experts=4, num_experts_per_tok=2,
        )  # fmt: skip
    if kind == "qwen3_moe":
        return transformers.Qwen3MoeConfig(
            **common, num_key_value_heads=2, intermediate_size=96, moe_intermediate_size=32,
            num_experts=4, num_experts_per_tok=2, head_dim=16,
        )  # fmt: skip
    return transformers.DeepseekV3Config(
        **common, num_key_value_heads=4, intermediate_size=96, moe_intermediate_size=32,
        n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1,
        n_group=2, topk_group=1, kv_lora_rank=16, q_lora_rank=24, qk_rope_head_dim=8,
        qk_nope_head_dim=8, v_head_dim=16,
    )  # fmt: skip


# one expert's weights (gate, up, down: 3 x 64 x 32 bf16) and MoE layers of each model
MOE_EXPERT_BYTES = 3 * 64 * 32 * 2
MOE_LAYERS = {"qwen2_moe": 2, "qwen3_moe": 2, "deepseek_v3": 1}


@pytest.mark.parametrize("kind", ["qwen2_moe", "qwen3_moe", "deepseek_v3"])
def test_moe_models_prefill_and_decode(kind):
    """Prefill (8 tokens) and one decode step (batch 2): balanced routing touches all 4
    experts of every MoE layer, 'any' the k = 2 a token must use; the GEMM flops agree."""
    from solar.llm import decode_step, prefill

    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(small_config(kind))
    model = model.to(torch.bfloat16).eval()
    for phase in (prefill(model, batch=1, context=8), decode_step(model, batch=2, context=8)):
        t = {r: solar.bound(*phase, routing=r).to_dict()["totals"] for r in ("any", "balanced")}
        assert t["any"]["flops"]["tc_bf16"] == t["balanced"]["flops"]["tc_bf16"]
        extra = t["balanced"]["bytes"]["fused"] - t["any"]["bytes"]["fused"]
        assert extra == 2 * MOE_EXPERT_BYTES * MOE_LAYERS[kind]


def test_known_values_run_integer_kernels_the_cpu_lacks_in_float64():
    """CUDA's histc takes int expert ids (transformers' CUDA experts path); the known values of
    a trace live on the CPU, whose histc has no int kernel: they run in float64, exactly."""
    from solar.frontend.torch.known import _via_float64

    ids = torch.tensor([0, 1, 1, 3, 3, 3], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.histc(ids, bins=4, min=0, max=3)
    counts = _via_float64(torch.ops.aten.histc.default, (ids, 4, 0, 3), {})
    assert counts.dtype == torch.int32 and counts.tolist() == [1, 2, 0, 3]


class CountedExperts(torch.nn.Module):
    """JetMoE's experts path in miniature: the per-expert token counts are Python ints read
    from a one-hot scatter of the router's top-k indices (``zeros(...).scatter(1, idx, 1)
    .sum(0).tolist()``), then the routed rows are split by them, one GEMM per expert."""

    def __init__(self, h: int = 16, f: int = 32, experts: int = 4, k: int = 2) -> None:
        super().__init__()
        self.router = torch.nn.Linear(h, experts, bias=False)
        self.w = torch.nn.Parameter(torch.randn(experts, h, f))
        self.k = k

    def forward(self, x):
        _, idx = self.router(x).topk(self.k, dim=1)
        gates = torch.zeros(x.shape[0], self.w.shape[0], dtype=x.dtype, device=x.device)
        counts = gates.scatter(1, idx, 1).long().sum(0).tolist()
        rows = x[idx.flatten().sort(0)[1] // self.k]
        return torch.cat([r @ self.w[e] for e, r in enumerate(rows.split(counts))])


def test_expert_counts_read_from_a_scatter_follow_the_routing():
    """Hand derivation (T = 8 tokens, h = 16, f = 32, E = 4, k = 2, fp32): router 2·8·16·4 =
    1,024 flops, experts 2·(T k)·h·f = 16,384 whatever the routing; one expert's weights are
    16·32·4 = 2,048 bytes, read only where the routing sends rows ('any': 2 experts,
    balanced: 4, [8, 4, 4, 0]: 3). The zeros the counts are scattered into are known values."""
    model = CountedExperts().eval()
    x = torch.empty(8, 16, device="meta")
    totals = {
        str(r): solar.bound(model, (x,), routing=r).to_dict()["totals"]
        for r in ("any", "balanced", [8, 4, 4, 0])
    }
    assert {t["flops"]["cuda_fp32"] for t in totals.values()} == {1024 + 16384}
    base = totals["any"]["bytes"]["fused"]
    assert totals["balanced"]["bytes"]["fused"] - base == 2 * 2048
    assert totals["[8, 4, 4, 0]"]["bytes"]["fused"] - base == 2048
    b = solar.bound(model, (x,), routing="balanced")
    assert any("modeling" not in a and ".tolist" not in a and "follows from the routing" in a
               for a in b.assumptions)  # fmt: skip


def test_counted_experts_execute_as_pytorch_with_observed_routing():
    torch.manual_seed(0)
    check(CountedExperts().eval(), torch.randn(8, 16), observe=True)
