"""Plain JAX twin of examples/jax_twin_mlp_torch.py: Linear -> ReLU -> Linear, 8192 tokens of
width 4096, fp32, with PyTorch's parameter layout (weight is out x in).

A JAX problem file (see solar/frontend/jax/problem.py): ``Model(*get_init_inputs())`` holds
the parameters as ShapeDtypeStructs, ``apply(params, x)`` is the program; nothing is allocated.
"""

import jax
import jax.numpy as jnp

REQUIRES = ["jax"]
TOKENS, WIDTH = 8192, 4096


class Model:
    def __init__(self, width: int = WIDTH, dtype=jnp.float32):
        def linear():
            return {
                "weight": jax.ShapeDtypeStruct((width, width), dtype),
                "bias": jax.ShapeDtypeStruct((width,), dtype),
            }

        self.params = {"fc1": linear(), "fc2": linear()}

    def apply(self, params, x):
        h = jax.nn.relu(x @ params["fc1"]["weight"].T + params["fc1"]["bias"])
        return h @ params["fc2"]["weight"].T + params["fc2"]["bias"]


def get_inputs(tokens: int = TOKENS, width: int = WIDTH):
    return [jax.ShapeDtypeStruct((tokens, width), jnp.float32)]


def get_init_inputs():
    return [WIDTH]
