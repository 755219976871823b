"""The benchmark's workloads, built without allocating weights (``meta`` device, or
``jax.ShapeDtypeStruct`` s).

GPT (nanoGPT layout: learned positions, LayerNorm, fused QKV, causal SDPA, GELU MLP) and LLaMA
(RMSNorm, RoPE, grouped-query causal SDPA, SwiGLU), both bf16 and in plain torch; a LLaMA-7B
training step (forward, backward, AdamW: ``llama7b_train``); LLaMA-7B also
as ``transformers``' ``LlamaForCausalLM`` (``llama7b_hf``, needs ``solar[models]``) and GPT-2
small also in plain JAX (``gpt2_small_jax``); the ResNet-50 and ViT-B/16 of the examples corpus
(``examples/model_resnet50.py``, ``examples/model_vit_b16.py``, in a checkout) are loaded as the
problem files they are.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[2]  # the checkout: examples/ and bench/results/


class GPTBlock(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.attn = nn.Linear(width, 3 * width)
        self.attn_proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.fc_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers: int, width: int, heads: int, vocab: int, context: int):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList([GPTBlock(width, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, width: int, heads: int, kv_heads: int, hidden: int):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, width // heads
        self.attn_norm = RMSNorm(width)
        self.wq = nn.Linear(width, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, width, bias=False)
        self.ffn_norm = RMSNorm(width)
        self.w1 = nn.Linear(width, hidden, bias=False)
        self.w3 = nn.Linear(width, hidden, bias=False)
        self.w2 = nn.Linear(hidden, width, bias=False)

    def forward(self, x, cos, sin):
        b, t, c = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        gqa = self.kv_heads != self.heads
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
        x = x + self.wo(y.transpose(1, 2).reshape(b, t, self.heads * self.head_dim))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    def __init__(self, layers, width, heads, kv_heads, hidden, vocab, theta=10000.0):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList(
            [LlamaBlock(width, heads, kv_heads, hidden) for _ in range(layers)]
        )
        self.norm = RMSNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        head_dim = width // heads
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, ids):
        x = self.embed(ids)
        pos = torch.arange(ids.shape[1], device=ids.device).float()
        freqs = torch.outer(pos, self.inv_freq.float())
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


def gpt(layers=12, width=768, heads=12, vocab=50304, context=1024, batch=8, tokens=1024):
    with torch.device("meta"):
        model = GPT(layers, width, heads, vocab, context).to(torch.bfloat16).eval()
        idx = torch.randint(0, vocab, (batch, tokens))
    return model, (idx,)


LLAMA_7B = dict(layers=32, width=4096, heads=32, kv_heads=32, hidden=11008, vocab=32000)
LLAMA_70B = dict(layers=80, width=8192, heads=64, kv_heads=8, hidden=28672, vocab=32000)


def llama(config: dict, *, layers: int | None = None, batch: int = 1, tokens: int = 2048):
    c = dict(config)
    if layers is not None:
        c["layers"] = layers
    with torch.device("meta"):
        model = Llama(**c).to(torch.bfloat16).eval()
        ids = torch.randint(0, c["vocab"], (batch, tokens))
    return model, (ids,)


def llama_train(config: dict, *, layers: int | None = None, batch: int = 1, tokens: int = 2048):
    """One training step of :func:`llama` (bf16 weights, gradients and AdamW state, on meta):
    cross-entropy on next tokens, backward, AdamW (foreach, as eager CUDA runs it)."""
    from solar.frontend.torch.training import make_train_step

    model, (ids,) = llama(config, layers=layers, batch=batch, tokens=tokens)
    model.train()

    def loss(logits, targets):
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    def adamw(params):
        return torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)

    return make_train_step(model, (ids,), loss=loss, targets=(ids,), optimizer=adamw)


class HFLogits(nn.Module):
    """A ``transformers`` causal LM returning only its logits."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids, use_cache=False, return_dict=False)[0]


def llama_hf(config: dict, *, batch: int = 1, tokens: int = 2048):
    """``config`` as ``transformers.LlamaForCausalLM`` (SDPA attention), bf16."""
    try:
        import transformers
    except ImportError:
        raise SystemExit("llama7b_hf needs transformers: pip install 'solar[models]'") from None
    hf = transformers.LlamaConfig(
        hidden_size=config["width"],
        intermediate_size=config["hidden"],
        num_hidden_layers=config["layers"],
        num_attention_heads=config["heads"],
        num_key_value_heads=config["kv_heads"],
        vocab_size=config["vocab"],
        max_position_embeddings=tokens,
        use_cache=False,
        attn_implementation="sdpa",
    )
    with torch.device("meta"):
        model = HFLogits(transformers.LlamaForCausalLM(hf)).to(torch.bfloat16).eval()
        ids = torch.randint(0, config["vocab"], (batch, tokens))
    return model, (ids,)


def gpt_jax(layers=12, width=768, heads=12, vocab=50304, context=1024, batch=8, tokens=1024):
    """The GPT above as a plain JAX function of a parameter pytree, on ShapeDtypeStructs."""
    import jax
    import jax.numpy as jnp

    def sds(*shape):
        return jax.ShapeDtypeStruct(shape, jnp.bfloat16)

    def layer_norm(x, w, b):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * w + b

    def block(x, p):
        b, t, c = x.shape
        qkv = layer_norm(x, *p["ln_1"]) @ p["attn"][0] + p["attn"][1]
        q, k, v = (z.reshape(b, t, heads, c // heads) for z in jnp.split(qkv, 3, axis=-1))
        y = jax.nn.dot_product_attention(q, k, v, is_causal=True).reshape(b, t, c)
        x = x + y @ p["attn_proj"][0] + p["attn_proj"][1]
        h = jax.nn.gelu(layer_norm(x, *p["ln_2"]) @ p["fc"][0] + p["fc"][1], approximate=True)
        return x + h @ p["fc_proj"][0] + p["fc_proj"][1]

    def forward(params, idx):
        x = params["wte"][idx] + params["wpe"][: idx.shape[1]]
        for p in params["blocks"]:
            x = block(x, p)
        return layer_norm(x, *params["ln_f"]) @ params["wte"].T

    def linear(n_in, n_out):
        return (sds(n_in, n_out), sds(n_out))

    block_params = {
        "ln_1": (sds(width), sds(width)),
        "attn": linear(width, 3 * width),
        "attn_proj": linear(width, width),
        "ln_2": (sds(width), sds(width)),
        "fc": linear(width, 4 * width),
        "fc_proj": linear(4 * width, width),
    }
    params = {
        "wte": sds(vocab, width),
        "wpe": sds(context, width),
        "blocks": [block_params] * layers,
        "ln_f": (sds(width), sds(width)),
    }
    return forward, (params, jax.ShapeDtypeStruct((batch, tokens), jnp.int32))


def example(stem: str):
    from solar.problem import load_problem

    path = ROOT / "examples" / f"{stem}.py"
    if not path.is_file():
        raise SystemExit(f"{path}: not found; the {stem} workload needs a solar checkout")
    p = load_problem(path)
    return p.model, p.inputs


# name -> (description, builder)
MODELS = {
    "gpt2_small": (
        "GPT-2 small: 12 layers, width 768, 12 heads, vocab 50304, 8 x 1024 tokens, bf16",
        lambda: gpt(12, 768, 12),
    ),
    "gpt_24l": (
        "24-layer GPT (GPT-2 medium): width 1024, 16 heads, 8 x 1024 tokens, bf16",
        lambda: gpt(24, 1024, 16),
    ),
    "resnet50": ("ResNet-50 (examples/model_resnet50.py)", lambda: example("model_resnet50")),
    "vit_b16": ("ViT-B/16 (examples/model_vit_b16.py)", lambda: example("model_vit_b16")),
    "llama7b": (
        "LLaMA-7B: 32 layers, width 4096, 32 heads, SwiGLU 11008, vocab 32000, 1 x 2048, bf16",
        lambda: llama(LLAMA_7B),
    ),
    "llama70b": (
        "LLaMA-70B: 80 layers, width 8192, 64 heads / 8 KV heads (GQA), SwiGLU 28672, "
        "vocab 32000, 1 x 2048 tokens, bf16",
        lambda: llama(LLAMA_70B),
    ),
    "llama7b_train": (
        "LLaMA-7B training step: forward, backward and AdamW on 1 x 2048 tokens, bf16 weights, "
        "gradients and optimizer state (meta device)",
        lambda: llama_train(LLAMA_7B),
    ),
    "llama7b_hf": (
        "LLaMA-7B as transformers' LlamaForCausalLM (SDPA), 1 x 2048 tokens, bf16",
        lambda: llama_hf(LLAMA_7B),
    ),
    "gpt2_small_jax": (
        "GPT-2 small in plain JAX (ShapeDtypeStruct parameters), 8 x 1024 tokens, bf16; "
        "bare trace: jax.make_jaxpr",
        lambda: gpt_jax(12, 768, 12),
    ),
}

SCALING_LAYERS = (1, 2, 4, 8, 16, 32)


def scaling(layers: int):
    """The LLaMA-7B configuration with ``layers`` layers (the linear-scaling sweep)."""
    return llama(LLAMA_7B, layers=layers)


def build(workload: str):
    """``(model, inputs)`` of a workload: a name of :data:`MODELS` or ``llama7b_L<layers>``."""
    if workload.startswith("llama7b_L"):
        return scaling(int(workload.removeprefix("llama7b_L")))
    return MODELS[workload][1]()
