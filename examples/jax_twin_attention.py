"""Plain JAX twin of examples/jax_twin_attention_torch.py: multi-head self-attention with
input and output projections, softmax(Q K^T / sqrt(d)) V; batch 4 of 2048 tokens, width 1024,
16 heads, bf16.

A JAX problem file (see solar/frontend/jax/problem.py).
"""

import math

import jax
import jax.numpy as jnp

REQUIRES = ["jax"]
BATCH, SEQ, WIDTH, HEADS = 4, 2048, 1024, 16


class Model:
    def __init__(self, width: int = WIDTH, dtype=jnp.bfloat16):
        w = jax.ShapeDtypeStruct((width, width), dtype)
        self.params = {"wq": w, "wk": w, "wv": w, "wo": w}

    def apply(self, params, x):
        b, s, d = x.shape
        dh = d // HEADS

        def heads(w):
            return (x @ w).reshape(b, s, HEADS, dh).transpose(0, 2, 1, 3)

        q, k, v = heads(params["wq"]), heads(params["wk"]), heads(params["wv"])
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh)
        o = jax.nn.softmax(scores, axis=-1) @ v
        return o.transpose(0, 2, 1, 3).reshape(b, s, d) @ params["wo"]


def get_inputs(batch: int = BATCH, seq: int = SEQ, width: int = WIDTH):
    return [jax.ShapeDtypeStruct((batch, seq, width), jnp.bfloat16)]


def get_init_inputs():
    return [WIDTH]
