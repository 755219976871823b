"""Plain JAX twin of examples/jax_twin_convnet_torch.py (NCHW, fp32): conv 3x3 (3->64, pad 1)
-> ReLU -> conv 3x3 stride 2 (64->128, pad 1) -> ReLU -> global mean -> linear (128->10);
batch 32 of 224x224 images, PyTorch's parameter layouts (OIHW kernels, out x in weights).

A JAX problem file (see solar/frontend/jax/problem.py).
"""

import jax
import jax.numpy as jnp
from jax import lax

REQUIRES = ["jax"]
BATCH, SIZE, C1, C2, CLASSES = 32, 224, 64, 128, 10


def conv(x, w, b, stride):
    y = lax.conv_general_dilated(x, w, (stride, stride), ((1, 1), (1, 1)))
    return y + b[None, :, None, None]


class Model:
    def __init__(self, c1: int = C1, c2: int = C2, classes: int = CLASSES, dtype=jnp.float32):
        def p(*shape):
            return jax.ShapeDtypeStruct(shape, dtype)

        self.params = {
            "conv1": {"weight": p(c1, 3, 3, 3), "bias": p(c1)},
            "conv2": {"weight": p(c2, c1, 3, 3), "bias": p(c2)},
            "fc": {"weight": p(classes, c2), "bias": p(classes)},
        }

    def apply(self, params, x):
        h = jax.nn.relu(conv(x, params["conv1"]["weight"], params["conv1"]["bias"], 1))
        h = jax.nn.relu(conv(h, params["conv2"]["weight"], params["conv2"]["bias"], 2))
        h = jnp.mean(h, axis=(2, 3))
        return h @ params["fc"]["weight"].T + params["fc"]["bias"]


def get_inputs(batch: int = BATCH, size: int = SIZE):
    return [jax.ShapeDtypeStruct((batch, 3, size, size), jnp.float32)]


def get_init_inputs():
    return [C1, C2, CLASSES]
