"""Flax NNX pre-LayerNorm transformer block: LayerNorm -> multi-head self-attention -> residual
-> LayerNorm -> MLP (GELU) -> residual; batch 8 of 1024 tokens, width 1024, 16 heads, bf16.

A JAX problem file (see solar/frontend/jax/problem.py).
"""

import jax
import jax.numpy as jnp
from flax import nnx

REQUIRES = ["jax", "flax"]
BATCH, SEQ, WIDTH, HEADS = 8, 1024, 1024, 16


class Model(nnx.Module):
    def __init__(self, width: int = WIDTH, heads: int = HEADS, dtype=jnp.bfloat16, *, rngs):
        kw = dict(dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.ln1 = nnx.LayerNorm(width, **kw)
        self.attn = nnx.MultiHeadAttention(heads, width, decode=False, deterministic=True, **kw)
        self.ln2 = nnx.LayerNorm(width, **kw)
        self.up = nnx.Linear(width, 4 * width, **kw)
        self.down = nnx.Linear(4 * width, width, **kw)

    def __call__(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.down(nnx.gelu(self.up(self.ln2(x))))


def get_inputs():
    return [jax.ShapeDtypeStruct((BATCH, SEQ, WIDTH), jnp.bfloat16)]


def get_init_inputs():
    return [WIDTH, HEADS, jnp.bfloat16]
