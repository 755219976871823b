"""Write the definition corpus ``examples/definitions/<name>.json`` and its workloads
``<name>.workloads.jsonl`` (FlashInfer-Trace format) from the table below.

    python bench/make_definitions.py [OUT_DIR]

Each entry: the definition's fields, and ``var``: per var axis the values of its workloads
(zipped: workload i takes the i-th value of every list).
"""

from __future__ import annotations

import json
import sys
import textwrap
import uuid
from pathlib import Path


def const(v):
    return {"type": "const", "value": v}


VAR = {"type": "var"}


def t(shape, dtype):
    return {"shape": shape, "dtype": dtype}


def ref(src: str) -> str:
    return textwrap.dedent(src).strip() + "\n"


TOKENS = [1, 7, 16, 64, 128, 512, 1024, 4096]
BATCH = [1, 2, 3, 4, 8, 12, 16, 32]

PAGED_KV_INPUTS = ref('''
    def make_inputs(axes, device):
        """kv_indptr/kv_indices of a paged KV cache: sequence b holds lens[b] pages."""
        b, pages = axes["batch_size"], axes["num_pages"]
        g = torch.Generator().manual_seed(b)
        lens = torch.randint(1, max(2, pages // b + 1), (b,), generator=g)
        lens = torch.clamp(lens, max=pages // b)
        kv_indptr = torch.zeros(b + 1, dtype=torch.int32)
        kv_indptr[1:] = torch.cumsum(lens, 0)
        kv_indices = torch.randperm(pages, generator=g)[: int(kv_indptr[-1])].to(torch.int32)
        return {"kv_indptr": kv_indptr, "kv_indices": kv_indices}
''')

DEFINITIONS = [
    dict(
        name="gemm_bf16_n4096_k4096",
        op_type="gemm",
        description="C = A @ B^T in bf16 (a linear layer without bias)",
        axes={"M": VAR, "N": const(4096), "K": const(4096)},
        inputs={"A": t(["M", "K"], "bfloat16"), "B": t(["N", "K"], "bfloat16")},
        outputs={"C": t(["M", "N"], "bfloat16")},
        reference=ref("""
            import torch

            def run(A, B):
                return A @ B.T
        """),
        var={"M": TOKENS},
    ),
    dict(
        name="gemm_fp8_per_tensor_n4096_k4096",
        op_type="gemm",
        description="FP8 e4m3 GEMM with per-tensor scales, dequantised explicitly, bf16 out",
        axes={"M": VAR, "N": const(4096), "K": const(4096)},
        inputs={
            "A": t(["M", "K"], "float8_e4m3fn"),
            "B": t(["N", "K"], "float8_e4m3fn"),
            "scale_a": t([], "float32"),
            "scale_b": t([], "float32"),
        },
        outputs={"C": t(["M", "N"], "bfloat16")},
        reference=ref("""
            import torch

            def run(A, B, scale_a, scale_b):
                a = A.to(torch.float32) * scale_a
                b = B.to(torch.float32) * scale_b
                return (a @ b.T).to(torch.bfloat16)
        """),
        var={"M": TOKENS},
    ),
    dict(
        name="gemm_fp8_blockwise_n7168_k2048",
        op_type="gemm",
        description="FP8 GEMM with 1x128 activation and 128x128 weight block scales (DeepSeek-V3)",
        axes={"M": VAR, "N": const(7168), "K": const(2048), "KB": const(16), "NB": const(56)},
        constraints=["K == KB * 128", "N == NB * 128"],
        inputs={
            "A": t(["M", "K"], "float8_e4m3fn"),
            "A_scale": t(["M", "KB"], "float32"),
            "B": t(["N", "K"], "float8_e4m3fn"),
            "B_scale": t(["NB", "KB"], "float32"),
        },
        outputs={"C": t(["M", "N"], "bfloat16")},
        reference=ref("""
            import torch

            def run(A, A_scale, B, B_scale):
                M, K = A.shape
                N = B.shape[0]
                a = A.to(torch.float32).view(M, K // 128, 128) * A_scale.unsqueeze(-1)
                b = B.to(torch.float32).view(N // 128, 128, K // 128, 128)
                b = b * B_scale.view(N // 128, 1, K // 128, 1)
                return (a.reshape(M, K) @ b.reshape(N, K).T).to(torch.bfloat16)
        """),
        var={"M": TOKENS},
    ),
    dict(
        name="gemm_nvfp4_block_scaled_n4096_k4096",
        op_type="gemm",
        description="NVFP4 GEMM: e2m1 values packed two per byte (float4_e2m1fn_x2), an e4m3 "
        "scale per 16 values, a float32 global scale; the bytes unpacked with shifts and "
        "masks through a lookup table, matmul in float32",
        axes={"M": VAR, "N": const(4096), "K": const(4096), "K2": const(2048), "KS": const(256)},
        constraints=["K == 2 * K2", "K == 16 * KS"],
        inputs={
            "A": t(["M", "K2"], "float4_e2m1fn_x2"),
            "A_scale": t(["M", "KS"], "float8_e4m3fn"),
            "B": t(["N", "K2"], "float4_e2m1fn_x2"),
            "B_scale": t(["N", "KS"], "float8_e4m3fn"),
            "alpha": t([], "float32"),
        },
        outputs={"C": t(["M", "N"], "bfloat16")},
        reference=ref("""
            import torch

            E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                    -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]

            def dequant(x, scale):
                rows, half = x.shape
                lut = torch.tensor(E2M1, dtype=torch.float32, device=x.device)
                byte = x.view(torch.uint8)
                lo = lut[(byte & 0x0F).to(torch.long)]
                hi = lut[(byte >> 4).to(torch.long)]
                v = torch.stack([lo, hi], dim=-1).reshape(rows, half * 2)
                v = v.view(rows, -1, 16) * scale.to(torch.float32).unsqueeze(-1)
                return v.reshape(rows, half * 2)

            def run(A, A_scale, B, B_scale, alpha):
                a = dequant(A, A_scale)
                b = dequant(B, B_scale)
                return ((a @ b.T) * alpha).to(torch.bfloat16)
        """),
        var={"M": TOKENS},
    ),
    dict(
        name="gemm_w8a16_int8_n4096_k4096",
        op_type="gemm",
        description="weight-only int8 GEMM: bf16 activations, int8 weights with per-channel scales",
        axes={"M": VAR, "N": const(4096), "K": const(4096)},
        inputs={
            "X": t(["M", "K"], "bfloat16"),
            "W": t(["N", "K"], "int8"),
            "scale": t(["N"], "bfloat16"),
        },
        outputs={"Y": t(["M", "N"], "bfloat16")},
        reference=ref("""
            import torch

            def run(X, W, scale):
                w = W.to(torch.bfloat16) * scale.unsqueeze(1)
                return X @ w.T
        """),
        var={"M": TOKENS},
    ),
    dict(
        name="gemm_w4a16_int4_g128_n4096_k4096",
        op_type="gemm",
        description="weight-only int4 GEMM (AWQ/GPTQ style): two 4-bit weights per uint8, "
        "zero point 8, a bf16 scale per 128 weights",
        axes={"M": VAR, "N": const(4096), "K": const(4096), "K2": const(2048), "G": const(32)},
        constraints=["K == 2 * K2", "K == 128 * G"],
        inputs={
            "X": t(["M", "K"], "bfloat16"),
            "W": t(["N", "K2"], "uint8"),
            "scale": t(["N", "G"], "bfloat16"),
        },
        outputs={"Y": t(["M", "N"], "bfloat16")},
        reference=ref("""
            import torch

            def run(X, W, scale):
                N, K2 = W.shape
                w = W.to(torch.int32)
                q = torch.stack([w & 15, w // 16], dim=-1).reshape(N, 2 * K2) - 8
                w = (q.to(torch.bfloat16).view(N, -1, 128) * scale.unsqueeze(-1)).reshape(N, 2 * K2)
                return X @ w.T
        """),
        var={"M": TOKENS},
        random_ints=True,
    ),
    dict(
        name="rmsnorm_h4096",
        op_type="rmsnorm",
        axes={"batch_size": VAR, "hidden_size": const(4096)},
        inputs={
            "x": t(["batch_size", "hidden_size"], "bfloat16"),
            "weight": t(["hidden_size"], "bfloat16"),
            "eps": t(None, "float32"),
        },
        outputs={"y": t(["batch_size", "hidden_size"], "bfloat16")},
        reference=ref("""
            import torch

            def run(x, weight, eps):
                xf = x.to(torch.float32)
                inv = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
                return (xf * inv).to(x.dtype) * weight
        """),
        var={"batch_size": TOKENS},
        scalars={"eps": 1e-6},
    ),
    dict(
        name="fused_add_rmsnorm_h7168",
        op_type="rmsnorm",
        description="residual += x; y = RMSNorm(residual) * weight (both outputs)",
        axes={"batch_size": VAR, "hidden_size": const(7168)},
        inputs={
            "x": t(["batch_size", "hidden_size"], "bfloat16"),
            "residual": t(["batch_size", "hidden_size"], "bfloat16"),
            "weight": t(["hidden_size"], "bfloat16"),
        },
        outputs={
            "y": t(["batch_size", "hidden_size"], "bfloat16"),
            "residual_out": t(["batch_size", "hidden_size"], "bfloat16"),
        },
        reference=ref("""
            import torch

            def run(x, residual, weight):
                r = (x.to(torch.float32) + residual.to(torch.float32))
                inv = torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + 1e-6)
                return (r * inv * weight.to(torch.float32)).to(x.dtype), r.to(x.dtype)
        """),
        var={"batch_size": TOKENS},
    ),
    dict(
        name="layernorm_residual_h4096",
        op_type="layernorm",
        description="y = LayerNorm(x + residual) with affine weight and bias",
        axes={"batch_size": VAR, "hidden_size": const(4096)},
        inputs={
            "x": t(["batch_size", "hidden_size"], "bfloat16"),
            "residual": t(["batch_size", "hidden_size"], "bfloat16"),
            "weight": t(["hidden_size"], "bfloat16"),
            "bias": t(["hidden_size"], "bfloat16"),
        },
        outputs={
            "y": t(["batch_size", "hidden_size"], "bfloat16"),
            "residual_out": t(["batch_size", "hidden_size"], "bfloat16"),
        },
        reference=ref("""
            import torch
            import torch.nn.functional as F

            def run(x, residual, weight, bias):
                r = x + residual
                return F.layer_norm(r, (r.shape[-1],), weight, bias, 1e-5), r
        """),
        var={"batch_size": TOKENS},
    ),
    dict(
        name="rope_neox_positions_d128",
        op_type="rope",
        description="rotary embedding (NeoX halves) of q and k at given positions, cos/sin cache",
        axes={
            "num_tokens": VAR,
            "num_q_heads": const(32),
            "num_kv_heads": const(8),
            "head_dim": const(128),
            "half_dim": const(64),
            "max_pos": const(8192),
        },
        inputs={
            "q": t(["num_tokens", "num_q_heads", "head_dim"], "bfloat16"),
            "k": t(["num_tokens", "num_kv_heads", "head_dim"], "bfloat16"),
            "cos_sin_cache": t(["max_pos", "head_dim"], "float32"),
            "positions": t(["num_tokens"], "int64"),
        },
        outputs={
            "q_out": t(["num_tokens", "num_q_heads", "head_dim"], "bfloat16"),
            "k_out": t(["num_tokens", "num_kv_heads", "head_dim"], "bfloat16"),
        },
        constraints=["int(positions.max()) < max_pos"],
        custom_inputs_entrypoint="make_inputs",
        reference=ref("""
            import torch

            def make_inputs(axes, device):
                return {"positions": torch.randint(0, axes["max_pos"], (axes["num_tokens"],))}

            def rotate(x, cos, sin):
                h = x.shape[-1] // 2
                x1, x2 = x[..., :h].float(), x[..., h:].float()
                return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).to(x.dtype)

            def run(q, k, cos_sin_cache, positions):
                cs = cos_sin_cache[positions]
                h = cs.shape[-1] // 2
                cos, sin = cs[:, None, :h], cs[:, None, h:]
                return rotate(q, cos, sin), rotate(k, cos, sin)
        """),
        var={"num_tokens": TOKENS},
    ),
    dict(
        name="silu_and_mul_i14336",
        op_type="activation",
        description="SwiGLU: silu(x[:, :I]) * x[:, I:]",
        axes={"num_tokens": VAR, "intermediate": const(14336), "two_intermediate": const(28672)},
        inputs={"x": t(["num_tokens", "two_intermediate"], "bfloat16")},
        outputs={"y": t(["num_tokens", "intermediate"], "bfloat16")},
        reference=ref("""
            import torch
            import torch.nn.functional as F

            def run(x):
                d = x.shape[-1] // 2
                return F.silu(x[:, :d]) * x[:, d:]
        """),
        var={"num_tokens": TOKENS},
    ),
    dict(
        name="gelu_tanh_and_mul_i8192",
        op_type="activation",
        axes={"num_tokens": VAR, "intermediate": const(8192), "two_intermediate": const(16384)},
        inputs={"x": t(["num_tokens", "two_intermediate"], "bfloat16")},
        outputs={"y": t(["num_tokens", "intermediate"], "bfloat16")},
        reference=ref("""
            import torch
            import torch.nn.functional as F

            def run(x):
                d = x.shape[-1] // 2
                return F.gelu(x[:, :d], approximate="tanh") * x[:, d:]
        """),
        var={"num_tokens": TOKENS},
    ),
    dict(
        name="softmax_vocab128k",
        op_type="softmax",
        axes={"batch_size": VAR, "vocab_size": const(128256)},
        inputs={
            "logits": t(["batch_size", "vocab_size"], "float32"),
            "temperature": t(None, "float32"),
        },
        outputs={"probs": t(["batch_size", "vocab_size"], "float32")},
        reference=ref("""
            import torch

            def run(logits, temperature):
                return torch.softmax(logits / temperature, dim=-1)
        """),
        var={"batch_size": BATCH},
        scalars={"temperature": 0.7},
    ),
    dict(
        name="embedding_vocab128k_h4096",
        op_type="embedding",
        axes={"num_tokens": VAR, "vocab_size": const(128256), "hidden_size": const(4096)},
        inputs={
            "input_ids": t(["num_tokens"], "int64"),
            "table": t(["vocab_size", "hidden_size"], "bfloat16"),
        },
        outputs={"y": t(["num_tokens", "hidden_size"], "bfloat16")},
        constraints=["int(input_ids.max()) < vocab_size"],
        custom_inputs_entrypoint="make_inputs",
        reference=ref("""
            import torch
            import torch.nn.functional as F

            def make_inputs(axes, device):
                return {"input_ids": torch.randint(0, axes["vocab_size"], (axes["num_tokens"],))}

            def run(input_ids, table):
                return F.embedding(input_ids, table)
        """),
        var={"num_tokens": TOKENS},
    ),
    dict(
        name="gqa_paged_decode_h32_kv8_d128_ps16",
        op_type="gqa_paged",
        description="GQA decode attention over a paged KV cache, written with a Python loop over "
        "the batch: pages of sequence b are kv_indices[kv_indptr[b]:kv_indptr[b+1]]",
        axes={
            "batch_size": VAR,
            "num_pages": VAR,
            "num_qo_heads": const(32),
            "num_kv_heads": const(8),
            "head_dim": const(128),
            "page_size": const(16),
            "len_indptr": {"type": "expr", "expression": "batch_size + 1"},
            "num_kv_indices": VAR,
        },
        constraints=["len_indptr == batch_size + 1", "num_kv_indices == kv_indptr[-1].item()"],
        inputs={
            "q": t(["batch_size", "num_qo_heads", "head_dim"], "bfloat16"),
            "k_cache": t(["num_pages", "page_size", "num_kv_heads", "head_dim"], "bfloat16"),
            "v_cache": t(["num_pages", "page_size", "num_kv_heads", "head_dim"], "bfloat16"),
            "kv_indptr": t(["len_indptr"], "int32"),
            "kv_indices": t(["num_kv_indices"], "int32"),
            "sm_scale": t(None, "float32"),
        },
        outputs={"output": t(["batch_size", "num_qo_heads", "head_dim"], "bfloat16")},
        custom_inputs_entrypoint="make_inputs",
        reference=PAGED_KV_INPUTS
        + "\n"
        + ref("""
            def run(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale):
                B, H, D = q.shape
                KV = k_cache.shape[2]
                outs = []
                for b in range(B):
                    start, end = int(kv_indptr[b].item()), int(kv_indptr[b + 1].item())
                    pages = kv_indices[start:end].long()
                    k = k_cache[pages].reshape(-1, KV, D).float()   # [L, KV, D]
                    v = v_cache[pages].reshape(-1, KV, D).float()
                    qb = q[b].float().view(KV, H // KV, D)          # [KV, G, D]
                    s = torch.matmul(qb, k.permute(1, 2, 0)) * sm_scale  # [KV, G, L]
                    p = torch.softmax(s, dim=-1)
                    o = torch.matmul(p, v.permute(1, 0, 2))         # [KV, G, D]
                    outs.append(o.reshape(1, H, D))
                return torch.cat(outs).to(q.dtype)
        """).replace("def run", "import torch\n\ndef run", 1),
        var={"batch_size": BATCH, "num_pages": [64, 128, 192, 256, 512, 768, 1024, 2048]},
        derived={"num_kv_indices": "kv"},
    ),
]

DEFINITIONS += [
    dict(
        name="gqa_ragged_prefill_causal_h32_kv8_d128",
        op_type="gqa_ragged",
        description="causal GQA prefill over ragged sequences: sequence b's queries are "
        "q[qo_indptr[b]:qo_indptr[b+1]], its keys k[kv_indptr[b]:kv_indptr[b+1]]",
        axes={
            "batch_size": VAR,
            "total_q": VAR,
            "total_kv": VAR,
            "num_qo_heads": const(32),
            "num_kv_heads": const(8),
            "head_dim": const(128),
            "len_indptr": {"type": "expr", "expression": "batch_size + 1"},
        },
        constraints=["qo_indptr[-1].item() == total_q", "kv_indptr[-1].item() == total_kv"],
        inputs={
            "q": t(["total_q", "num_qo_heads", "head_dim"], "bfloat16"),
            "k": t(["total_kv", "num_kv_heads", "head_dim"], "bfloat16"),
            "v": t(["total_kv", "num_kv_heads", "head_dim"], "bfloat16"),
            "qo_indptr": t(["len_indptr"], "int32"),
            "kv_indptr": t(["len_indptr"], "int32"),
            "sm_scale": t(None, "float32"),
        },
        outputs={"output": t(["total_q", "num_qo_heads", "head_dim"], "bfloat16")},
        custom_inputs_entrypoint="make_inputs",
        reference=ref("""
            import torch

            def make_inputs(axes, device):
                b, tq = axes["batch_size"], axes["total_q"]
                lens = torch.full((b,), tq // b, dtype=torch.int32)
                lens[: tq - int(lens.sum())] += 1
                indptr = torch.zeros(b + 1, dtype=torch.int32)
                indptr[1:] = torch.cumsum(lens, 0)
                return {"qo_indptr": indptr, "kv_indptr": indptr.clone()}

            def run(q, k, v, qo_indptr, kv_indptr, sm_scale):
                T, H, D = q.shape
                KV = k.shape[1]
                outs = []
                for b in range(qo_indptr.shape[0] - 1):
                    qs, qe = int(qo_indptr[b]), int(qo_indptr[b + 1])
                    ks, ke = int(kv_indptr[b]), int(kv_indptr[b + 1])
                    qb = q[qs:qe].float().view(qe - qs, KV, H // KV, D).permute(1, 2, 0, 3)
                    kb = k[ks:ke].float().permute(1, 2, 0).unsqueeze(1)   # [KV, 1, D, L]
                    vb = v[ks:ke].float().permute(1, 0, 2).unsqueeze(1)   # [KV, 1, L, D]
                    s = torch.matmul(qb, kb) * sm_scale                   # [KV, G, q, L]
                    mask = torch.ones(qe - qs, ke - ks, dtype=torch.bool, device=q.device)
                    mask = mask.tril(ke - ks - (qe - qs))
                    s = s.masked_fill(~mask, float("-inf"))
                    p = torch.softmax(s, dim=-1)
                    o = torch.matmul(p, vb).permute(2, 0, 1, 3)           # [q, KV, G, D]
                    outs.append(o.reshape(qe - qs, H, D))
                return torch.cat(outs).to(q.dtype)
        """),
        var={
            "batch_size": [1, 2, 2, 3, 4, 4, 8, 8],
            "total_q": [128, 256, 512, 700, 1024, 2048, 2048, 4096],
            "total_kv": [128, 256, 512, 700, 1024, 2048, 2048, 4096],
        },
    ),
    dict(
        name="mla_paged_decode_h16_ckv512_kpe64_ps1",
        op_type="mla_paged",
        description="DeepSeek MLA decode (absorbed): scores q_nope.ckv + q_pe.kpe over a paged "
        "compressed cache (page size 1), output in the latent space",
        axes={
            "batch_size": VAR,
            "num_pages": VAR,
            "num_kv_indices": VAR,
            "num_qo_heads": const(16),
            "head_dim_ckv": const(512),
            "head_dim_kpe": const(64),
            "page_size": const(1),
            "len_indptr": {"type": "expr", "expression": "batch_size + 1"},
        },
        constraints=["num_kv_indices == kv_indptr[-1].item()"],
        inputs={
            "q_nope": t(["batch_size", "num_qo_heads", "head_dim_ckv"], "bfloat16"),
            "q_pe": t(["batch_size", "num_qo_heads", "head_dim_kpe"], "bfloat16"),
            "ckv_cache": t(["num_pages", "page_size", "head_dim_ckv"], "bfloat16"),
            "kpe_cache": t(["num_pages", "page_size", "head_dim_kpe"], "bfloat16"),
            "kv_indptr": t(["len_indptr"], "int32"),
            "kv_indices": t(["num_kv_indices"], "int32"),
            "sm_scale": t(None, "float32"),
        },
        outputs={"output": t(["batch_size", "num_qo_heads", "head_dim_ckv"], "bfloat16")},
        custom_inputs_entrypoint="make_inputs",
        reference="import torch\n\n"
        + PAGED_KV_INPUTS
        + "\n"
        + ref("""
            def run(q_nope, q_pe, ckv_cache, kpe_cache, kv_indptr, kv_indices, sm_scale):
                B, H, C = q_nope.shape
                outs = []
                for b in range(B):
                    start, end = int(kv_indptr[b].item()), int(kv_indptr[b + 1].item())
                    pages = kv_indices[start:end].long()
                    ckv = ckv_cache[pages].reshape(-1, C).float()
                    kpe = kpe_cache[pages].reshape(-1, kpe_cache.shape[-1]).float()
                    s = q_nope[b].float() @ ckv.T + q_pe[b].float() @ kpe.T
                    p = torch.softmax(s * sm_scale, dim=-1)
                    outs.append((p @ ckv).unsqueeze(0))
                return torch.cat(outs).to(q_nope.dtype)
        """),
        var={"batch_size": BATCH, "num_pages": [256, 512, 768, 1024, 2048, 3072, 4096, 8192]},
        derived={"num_kv_indices": "kv"},
    ),
    dict(
        name="moe_router_topk8_e256_h7168",
        op_type="moe_router",
        description="MoE router: logits = x @ W^T, sigmoid scores, top-8 experts, "
        "renormalised weights",
        axes={
            "num_tokens": VAR,
            "num_experts": const(256),
            "hidden_size": const(7168),
            "top_k": const(8),
        },
        inputs={
            "x": t(["num_tokens", "hidden_size"], "bfloat16"),
            "w_router": t(["num_experts", "hidden_size"], "bfloat16"),
        },
        outputs={
            "topk_weights": t(["num_tokens", "top_k"], "float32"),
            "topk_ids": t(["num_tokens", "top_k"], "int64"),
        },
        reference=ref("""
            import torch

            def run(x, w_router):
                scores = torch.sigmoid((x @ w_router.T).float())
                w, ids = torch.topk(scores, 8, dim=-1)
                return w / w.sum(-1, keepdim=True), ids
        """),
        var={"num_tokens": TOKENS},
    ),
    dict(
        name="moe_grouped_experts_e8_h4096_i14336",
        op_type="moe",
        description="MoE experts (SwiGLU) for routed tokens, a Python loop over experts: expert e "
        "serves the tokens token_ids[m_indptr[e]:m_indptr[e+1]]; outputs combined with "
        "the routing weights",
        axes={
            "num_tokens": VAR,
            "num_routed": VAR,
            "num_experts": const(8),
            "hidden_size": const(4096),
            "intermediate": const(14336),
            "two_intermediate": const(28672),
            "len_indptr": {"type": "expr", "expression": "num_experts + 1"},
        },
        constraints=["m_indptr[-1].item() == num_routed", "int(token_ids.max()) < num_tokens"],
        inputs={
            "x": t(["num_tokens", "hidden_size"], "bfloat16"),
            "w13": t(["num_experts", "two_intermediate", "hidden_size"], "bfloat16"),
            "w2": t(["num_experts", "hidden_size", "intermediate"], "bfloat16"),
            "m_indptr": t(["len_indptr"], "int32"),
            "token_ids": t(["num_routed"], "int64"),
            "route_weights": t(["num_routed"], "float32"),
        },
        outputs={"y": t(["num_tokens", "hidden_size"], "bfloat16")},
        custom_inputs_entrypoint="make_inputs",
        reference=ref("""
            import torch
            import torch.nn.functional as F

            def make_inputs(axes, device):
                t, e = axes["num_tokens"], axes["num_experts"]
                k = axes["num_routed"] // t
                g = torch.Generator().manual_seed(t)
                experts = torch.stack([torch.randperm(e, generator=g)[:k] for _ in range(t)])
                order = torch.argsort(experts.flatten(), stable=True)
                counts = torch.bincount(experts.flatten(), minlength=e)
                m_indptr = torch.zeros(e + 1, dtype=torch.int32)
                m_indptr[1:] = torch.cumsum(counts, 0)
                return {"m_indptr": m_indptr, "token_ids": (order // k).to(torch.int64)}

            def run(x, w13, w2, m_indptr, token_ids, route_weights):
                y = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
                for e in range(w13.shape[0]):
                    s, t = int(m_indptr[e]), int(m_indptr[e + 1])
                    if s == t:
                        continue
                    ids = token_ids[s:t]
                    h = x[ids] @ w13[e].T
                    d = h.shape[-1] // 2
                    a = F.silu(h[:, :d]) * h[:, d:]
                    out = (a @ w2[e].T).float() * route_weights[s:t, None]
                    y.index_add_(0, ids, out)
                return y.to(x.dtype)
        """),
        var={"num_tokens": [1, 4, 16, 32, 64, 128, 256, 512]},
        derived={"num_routed": "2x"},
    ),
    dict(
        name="grouped_gemm_g8_n4096_k4096",
        op_type="grouped_gemm",
        description="grouped GEMM: group g multiplies rows x[m_indptr[g]:m_indptr[g+1]] by W[g]^T "
        "(a Python loop over groups)",
        axes={
            "total_m": VAR,
            "num_groups": const(8),
            "N": const(4096),
            "K": const(4096),
            "len_indptr": {"type": "expr", "expression": "num_groups + 1"},
        },
        constraints=["m_indptr[-1].item() == total_m"],
        inputs={
            "x": t(["total_m", "K"], "bfloat16"),
            "W": t(["num_groups", "N", "K"], "bfloat16"),
            "m_indptr": t(["len_indptr"], "int32"),
        },
        outputs={"y": t(["total_m", "N"], "bfloat16")},
        custom_inputs_entrypoint="make_inputs",
        reference=ref("""
            import torch

            def make_inputs(axes, device):
                m, g = axes["total_m"], axes["num_groups"]
                sizes = torch.full((g,), m // g, dtype=torch.int32)
                sizes[: m - int(sizes.sum())] += 1
                m_indptr = torch.zeros(g + 1, dtype=torch.int32)
                m_indptr[1:] = torch.cumsum(sizes, 0)
                return {"m_indptr": m_indptr}

            def run(x, W, m_indptr):
                outs = []
                for g in range(W.shape[0]):
                    s, e = int(m_indptr[g]), int(m_indptr[g + 1])
                    outs.append(x[s:e] @ W[g].T)
                return torch.cat(outs)
        """),
        var={"total_m": [8, 64, 128, 256, 512, 1024, 4096, 8192]},
    ),
    dict(
        name="top_k_sampling_vocab128k_k50",
        op_type="sampling",
        description="top-k sampling: keep the 50 largest logits, softmax, sample by the "
        "exponential race (argmax of p / u with given uniform noise u)",
        axes={"batch_size": VAR, "vocab_size": const(128256), "top_k": const(50)},
        inputs={
            "logits": t(["batch_size", "vocab_size"], "float32"),
            "uniform": t(["batch_size", "top_k"], "float32"),
        },
        outputs={"samples": t(["batch_size"], "int64")},
        reference=ref("""
            import torch

            def run(logits, uniform):
                vals, idx = torch.topk(logits, 50, dim=-1)
                p = torch.softmax(vals, dim=-1)
                choice = torch.argmax(p / (-torch.log(uniform.clamp_min(1e-20))), dim=-1)
                return torch.gather(idx, 1, choice[:, None]).squeeze(1)
        """),
        var={"batch_size": BATCH},
    ),
    dict(
        name="linear_backward_n4096_k4096",
        op_type="linear_backward",
        description="backward of y = x @ W^T + b: grad_x, grad_W, grad_b",
        axes={"M": VAR, "N": const(4096), "K": const(4096)},
        inputs={
            "grad_y": t(["M", "N"], "bfloat16"),
            "x": t(["M", "K"], "bfloat16"),
            "W": t(["N", "K"], "bfloat16"),
        },
        outputs={
            "grad_x": t(["M", "K"], "bfloat16"),
            "grad_W": t(["N", "K"], "bfloat16"),
            "grad_b": t(["N"], "bfloat16"),
        },
        reference=ref("""
            import torch

            def run(grad_y, x, W):
                return grad_y @ W, grad_y.T @ x, grad_y.sum(0)
        """),
        var={"M": TOKENS},
    ),
    dict(
        name="rmsnorm_fp8_quant_h4096",
        op_type="rmsnorm",
        description="RMSNorm, then per-token dynamic FP8 e4m3 quantisation (values and scales)",
        axes={"num_tokens": VAR, "hidden_size": const(4096)},
        inputs={
            "x": t(["num_tokens", "hidden_size"], "bfloat16"),
            "weight": t(["hidden_size"], "bfloat16"),
        },
        outputs={
            "y": t(["num_tokens", "hidden_size"], "float8_e4m3fn"),
            "scale": t(["num_tokens"], "float32"),
        },
        reference=ref("""
            import torch

            def run(x, weight):
                xf = x.float()
                y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * weight.float()
                scale = y.abs().amax(-1).clamp_min(1e-12) / 448.0
                return (y / scale[:, None]).to(torch.float8_e4m3fn), scale
        """),
        var={"num_tokens": TOKENS},
    ),
    dict(
        name="attention_prefill_causal_h32_d128",
        op_type="attention",
        description="dense causal self-attention (batch of equal-length sequences), via SDPA",
        axes={"batch_size": VAR, "seq_len": VAR, "num_heads": const(32), "head_dim": const(128)},
        inputs={
            "q": t(["batch_size", "num_heads", "seq_len", "head_dim"], "bfloat16"),
            "k": t(["batch_size", "num_heads", "seq_len", "head_dim"], "bfloat16"),
            "v": t(["batch_size", "num_heads", "seq_len", "head_dim"], "bfloat16"),
        },
        outputs={"o": t(["batch_size", "num_heads", "seq_len", "head_dim"], "bfloat16")},
        reference=ref("""
            import torch.nn.functional as F

            def run(q, k, v):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        """),
        var={
            "batch_size": [1, 1, 2, 4, 1, 2, 8, 1],
            "seq_len": [128, 512, 512, 1024, 2048, 2048, 1024, 8192],
        },
    ),
    dict(
        name="merge_attention_states_h32_d128",
        op_type="attention_merge",
        description="merge two partial attention outputs by their log-sum-exp (split-KV decode)",
        axes={"num_tokens": VAR, "num_heads": const(32), "head_dim": const(128)},
        inputs={
            "v_a": t(["num_tokens", "num_heads", "head_dim"], "bfloat16"),
            "s_a": t(["num_tokens", "num_heads"], "float32"),
            "v_b": t(["num_tokens", "num_heads", "head_dim"], "bfloat16"),
            "s_b": t(["num_tokens", "num_heads"], "float32"),
        },
        outputs={
            "v": t(["num_tokens", "num_heads", "head_dim"], "bfloat16"),
            "s": t(["num_tokens", "num_heads"], "float32"),
        },
        reference=ref("""
            import torch

            def run(v_a, s_a, v_b, s_b):
                m = torch.maximum(s_a, s_b)
                s = m + torch.log(torch.exp(s_a - m) + torch.exp(s_b - m))
                wa = torch.exp(s_a - s)[..., None]
                wb = torch.exp(s_b - s)[..., None]
                return (v_a.float() * wa + v_b.float() * wb).to(v_a.dtype), s
        """),
        var={"num_tokens": TOKENS},
    ),
    dict(
        name="logits_softcap_vocab256k",
        op_type="activation",
        description="Gemma-style logit soft-capping: cap * tanh(logits / cap)",
        axes={"batch_size": VAR, "vocab_size": const(256000)},
        inputs={"logits": t(["batch_size", "vocab_size"], "float32"), "cap": t(None, "float32")},
        outputs={"y": t(["batch_size", "vocab_size"], "float32")},
        reference=ref("""
            import torch

            def run(logits, cap):
                return cap * torch.tanh(logits / cap)
        """),
        var={"batch_size": BATCH},
        scalars={"cap": 30.0},
    ),
    dict(
        name="qk_rmsnorm_per_head_d128",
        op_type="rmsnorm",
        description="per-head RMSNorm of q and k (Qwen3 / OLMo-2 style)",
        axes={
            "num_tokens": VAR,
            "num_q_heads": const(32),
            "num_kv_heads": const(8),
            "head_dim": const(128),
        },
        inputs={
            "q": t(["num_tokens", "num_q_heads", "head_dim"], "bfloat16"),
            "k": t(["num_tokens", "num_kv_heads", "head_dim"], "bfloat16"),
            "wq": t(["head_dim"], "bfloat16"),
            "wk": t(["head_dim"], "bfloat16"),
        },
        outputs={
            "q_out": t(["num_tokens", "num_q_heads", "head_dim"], "bfloat16"),
            "k_out": t(["num_tokens", "num_kv_heads", "head_dim"], "bfloat16"),
        },
        reference=ref("""
            import torch

            def norm(x, w):
                xf = x.float()
                return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w

            def run(q, k, wq, wk):
                return norm(q, wq), norm(k, wk)
        """),
        var={"num_tokens": TOKENS},
    ),
    dict(
        name="gemm_bf16_bias_gelu_n11008_k4096",
        op_type="gemm",
        description="linear layer with bias and exact GELU epilogue",
        axes={"M": VAR, "N": const(11008), "K": const(4096)},
        inputs={
            "x": t(["M", "K"], "bfloat16"),
            "W": t(["N", "K"], "bfloat16"),
            "b": t(["N"], "bfloat16"),
        },
        outputs={"y": t(["M", "N"], "bfloat16")},
        reference=ref("""
            import torch
            import torch.nn.functional as F

            def run(x, W, b):
                return F.gelu(F.linear(x, W, b))
        """),
        var={"M": TOKENS},
    ),
]

DEFINITIONS += [
    dict(
        name="scaled_mm_fp8_rowwise_n8192_k8192",
        op_type="gemm",
        description="torch._scaled_mm: FP8 e4m3 operands, per-row and per-column float32 scales",
        axes={"M": VAR, "N": const(8192), "K": const(8192), "one": const(1)},
        inputs={
            "A": t(["M", "K"], "float8_e4m3fn"),
            "B": t(["N", "K"], "float8_e4m3fn"),
            "scale_a": t(["M", "one"], "float32"),
            "scale_b": t(["one", "N"], "float32"),
        },
        outputs={"C": t(["M", "N"], "bfloat16")},
        reference=ref("""
            import torch

            def run(A, B, scale_a, scale_b):
                return torch._scaled_mm(A, B.t(), scale_a, scale_b, out_dtype=torch.bfloat16)
        """),
        var={"M": [16, 32, 64, 128, 256, 512, 1024, 4096]},
    ),
    dict(
        name="gemm_w8a8_int8_n4096_k4096",
        op_type="gemm",
        description="W8A8: int8 x int8 -> int32 (torch._int_mm), then per-token and per-channel "
        "scales, bf16 out",
        axes={"M": VAR, "N": const(4096), "K": const(4096), "one": const(1)},
        inputs={
            "X": t(["M", "K"], "int8"),
            "W": t(["N", "K"], "int8"),
            "x_scale": t(["M", "one"], "float32"),
            "w_scale": t(["one", "N"], "float32"),
        },
        outputs={"Y": t(["M", "N"], "bfloat16")},
        reference=ref("""
            import torch

            def run(X, W, x_scale, w_scale):
                return (torch._int_mm(X, W.t()).float() * x_scale * w_scale).to(torch.bfloat16)
        """),
        var={"M": [32, 64, 128, 256, 512, 1024, 2048, 4096]},
    ),
]

# the paged decode attention again, vectorised over the batch (every sequence holds the same
# number of pages): its fused and cache-aware bounds equal the loop-written one's
DEFINITIONS.append(
    dict(
        DEFINITIONS[[d["name"] for d in DEFINITIONS].index("gqa_paged_decode_h32_kv8_d128_ps16")],
        name="gqa_paged_decode_vectorised_h32_kv8_d128_ps16",
        description="GQA decode attention over a paged KV cache, vectorised over the batch; every "
        "sequence holds pages_per_seq pages",
        axes={
            "batch_size": VAR,
            "num_pages": VAR,
            "pages_per_seq": VAR,
            "num_qo_heads": const(32),
            "num_kv_heads": const(8),
            "head_dim": const(128),
            "page_size": const(16),
            "len_indptr": {"type": "expr", "expression": "batch_size + 1"},
            "num_kv_indices": {"type": "expr", "expression": "batch_size * pages_per_seq"},
        },
        constraints=["num_kv_indices == kv_indptr[-1].item()", "num_pages >= num_kv_indices"],
        reference=ref("""
        import torch

        def make_inputs(axes, device):
            b, n = axes["batch_size"], axes["pages_per_seq"]
            g = torch.Generator().manual_seed(b)
            kv_indptr = torch.arange(0, b * n + 1, n, dtype=torch.int32)
            kv_indices = torch.randperm(axes["num_pages"], generator=g)[: b * n].to(torch.int32)
            return {"kv_indptr": kv_indptr, "kv_indices": kv_indices}

        def run(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale):
            B, H, D = q.shape
            KV = k_cache.shape[2]
            pages = kv_indices.long().view(B, -1)
            k = k_cache[pages].reshape(B, -1, KV, D).float()     # [B, L, KV, D]
            v = v_cache[pages].reshape(B, -1, KV, D).float()
            qb = q.float().view(B, KV, H // KV, D)
            s = torch.matmul(qb, k.permute(0, 2, 3, 1)) * sm_scale   # [B, KV, G, L]
            p = torch.softmax(s, dim=-1)
            o = torch.matmul(p, v.permute(0, 2, 1, 3))               # [B, KV, G, D]
            return o.reshape(B, H, D).to(q.dtype)
    """),
        var={
            "batch_size": BATCH,
            "num_pages": [64, 128, 192, 256, 512, 768, 1024, 2048],
            "pages_per_seq": [8, 16, 32, 32, 16, 16, 32, 32],
        },
        derived={},
    )
)


def workloads(d: dict) -> list[dict]:
    """The workload lines of one entry: axes zipped from ``var``; scalars; derived axes made
    by running the definition's own input maker."""
    import torch

    from solar.definition.axes import axis_values
    from solar.definition.inputs import reference_module
    from solar.definition.schema import Workload, parse_definition

    var = d.get("var", {})
    n = len(next(iter(var.values())))
    defn = parse_definition(definition_doc(d))
    module = reference_module(defn)
    out = []
    for i in range(n):
        axes = {k: v[i] for k, v in var.items()}
        for name, how in (d.get("derived") or {}).items():
            if how == "2x":
                axes[name] = 2 * axes["num_tokens"]
            elif how == "kv":
                full = {**axes, name: 0}
                made = module.make_inputs(axis_values(defn, Workload("-", full, {})), "cpu")
                axes[name] = int(made["kv_indptr"][-1])
        inputs = {k: {"type": "scalar", "value": v} for k, v in (d.get("scalars") or {}).items()}
        for name, spec in d["inputs"].items():
            if spec["shape"] is None and name not in inputs:
                inputs[name] = {"type": "scalar", "value": 1.0 / 128**0.5}
        uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{d['name']}/{i}"))
        out.append(
            {"uuid": uid, "axes": axes, "inputs": inputs, "tolerance": {"atol": 2e-2, "rtol": 2e-2}}
        )
    del torch
    return out


FIELDS = (
    "name",
    "op_type",
    "description",
    "axes",
    "constraints",
    "inputs",
    "outputs",
    "custom_inputs_entrypoint",
    "reference",
)


def definition_doc(d: dict) -> dict:
    return {k: d[k] for k in FIELDS if k in d}


def main(out: str = "examples/definitions") -> None:
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    for d in DEFINITIONS:
        (root / f"{d['name']}.json").write_text(json.dumps(definition_doc(d), indent=2) + "\n")
        lines = [json.dumps(w) for w in workloads(d)]
        (root / f"{d['name']}.workloads.jsonl").write_text("\n".join(lines) + "\n")
    print(f"{len(DEFINITIONS)} definitions written to {root}")


if __name__ == "__main__":
    main(*sys.argv[1:])
