"""Flax NNX MLP: Linear -> GELU -> Linear -> ReLU -> Linear, 4096 tokens of width 1024, bf16.

A JAX problem file (see solar/frontend/jax/problem.py): ``Model`` is an ``nnx.Module`` built
abstractly from ``get_init_inputs()``; its state is the weights.
"""

import jax
import jax.numpy as jnp
from flax import nnx

REQUIRES = ["jax", "flax"]
TOKENS, WIDTH, HIDDEN = 4096, 1024, 4096


class Model(nnx.Module):
    def __init__(self, width: int = WIDTH, hidden: int = HIDDEN, dtype=jnp.bfloat16, *, rngs):
        kw = dict(dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.up = nnx.Linear(width, hidden, **kw)
        self.mid = nnx.Linear(hidden, hidden, **kw)
        self.down = nnx.Linear(hidden, width, **kw)

    def __call__(self, x):
        return self.down(nnx.relu(self.mid(nnx.gelu(self.up(x)))))


def get_inputs():
    return [jax.ShapeDtypeStruct((TOKENS, WIDTH), jnp.bfloat16)]


def get_init_inputs():
    return [WIDTH, HIDDEN, jnp.bfloat16]
